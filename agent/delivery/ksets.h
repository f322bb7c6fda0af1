/* Which kernel identity sets (common/kernel_code.h: the name ids, streams
 * and work ids of a record's groups, by a 64-bit id) the collectors hold,
 * for the batcher. A set the agent's records come back to (seen twice) is
 * defined in every batch that has a record of it until the first such batch
 * is acked by every collector meant to have it (the lowest ack, as names.h:
 * an ack says every batch up to it is durable); from then on its records
 * refer to it by id, only their clusters coded. A batch lost on the agent
 * (the spool's cap, corruption, a failed append) may have been the one:
 * the caller resets then (ksets_reset). A
 * set seen once is never defined: a one-off costs the collector no store
 * entry. names.h owns one and passes on its seals, acks and resets (a
 * collector that holds none of them joined: every set is defined again).
 *
 * Bounded: at most KSETS_MAX sets are tracked; a full table forgets them
 * all (each is defined again when it comes back), so a job whose groups
 * change every step costs a table reset now and then, never memory.
 * Single-threaded. */
#ifndef ARGUS_AGENT_KSETS_H
#define ARGUS_AGENT_KSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KSETS_MAX 4096

enum ksets_use {
    KSETS_WHOLE,  /* code the record's groups whole: the set is new */
    KSETS_DEFINE, /* code them whole and define the set (packed_kernels_set) */
    KSETS_REFER,  /* the collectors hold the set: refer to it */
};

struct ksets;

/* NULL on -ENOMEM. */
struct ksets *ksets_new(void);
void ksets_free(struct ksets *k);

/* A record of job (an index of names_job_index, >= 0) whose groups are set
 * (kernel_code_set_id, not 0) is to be coded: what to do. Counts the
 * sighting. Out of memory: KSETS_WHOLE. */
enum ksets_use ksets_use(struct ksets *k, long job, uint64_t set);

/* A record of the open batch defines (job, set) (after KSETS_DEFINE, once
 * the record is in the batch). */
void ksets_defined(struct ksets *k, long job, uint64_t set);

/* The open batch was sealed as seq: the sets it defined were sent with it. */
void ksets_sealed(struct ksets *k, uint64_t seq);

/* Every set defined by a batch with seq <= acked is held by the collectors. */
void ksets_ack(struct ksets *k, uint64_t acked);

/* Forget every ack: each set is defined again before it is referred to. */
void ksets_reset(struct ksets *k);

/* Sets tracked, and of those held by the collectors (for tests, /metrics). */
size_t ksets_count(const struct ksets *k, size_t *held);

#endif
