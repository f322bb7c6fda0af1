/* Which kernel identity sets (common/kernel_code.h: the name ids, streams
 * and work ids of a record's groups, by a 64-bit id) the collectors hold,
 * for the batcher. Records are followed by their skeleton: their groups'
 * names and streams, in order (a group's work id sums the shapes of its
 * kernels in the step, so it moves with the step's work while the skeleton
 * stays). Once a skeleton has been seen twice, a record of it defines its
 * own set (StepRecord.packed_kernels_set) in every batch until the first
 * batch that defined it is acked by every collector meant to have it (the
 * lowest ack, as names.h: an ack says every batch up to it is durable);
 * that set is then the skeleton's held one, and its records refer to it by
 * id: only their clusters, and the work ids that differ from the set's (4
 * bytes each against 12 a group whole). A record whose work ids differ in
 * more than half of its groups defines its own set again, which replaces
 * the held one once acked. One set per
 * skeleton is in flight at a time; records of others go whole meanwhile.
 *
 * names.h owns one and passes on its seals, acks and resets (a collector
 * that holds none of them joined: every set is defined again); a batch lost
 * on the agent (the spool's cap, corruption, a failed append) may have
 * been the one that defined a set: the caller resets then. Bounded: at most
 * KSETS_MAX skeletons, each holding at most two sets' identities; a full
 * table forgets them all. Single-threaded. */
#ifndef ARGUS_AGENT_KSETS_H
#define ARGUS_AGENT_KSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/kernel_code.h"
#include "proto/argus.pb-c.h"

#define KSETS_MAX 1024

enum ksets_use {
    KSETS_WHOLE,  /* code the record's groups whole */
    KSETS_DEFINE, /* ... and define its set (packed_kernels_set = define) */
    KSETS_REFER,  /* code it against base, a set the collectors hold */
};

/* What to do with one record. */
struct ksets_plan {
    enum ksets_use use;
    uint64_t skel;               /* the record's skeleton (ksets_defined) */
    uint64_t define;             /* KSETS_DEFINE: its own set's id */
    struct kernel_code_set base; /* KSETS_REFER: valid until the next call */
};

struct ksets;

/* NULL on -ENOMEM. */
struct ksets *ksets_new(void);
void ksets_free(struct ksets *k);

/* The plan for a record r of job (an index of names_job_index, >= 0) with
 * groups, coded by the batcher (kernel_code_codable). Counts the sighting.
 * Out of memory: KSETS_WHOLE. */
void ksets_plan(struct ksets *k, long job, const Argus__V1__StepRecord *r, struct ksets_plan *out);

/* A record of the open batch defines its skeleton's set (after
 * KSETS_DEFINE, once the record is in the batch). */
void ksets_defined(struct ksets *k, long job, uint64_t skel);

/* The open batch was sealed as seq: the sets it defined were sent with it. */
void ksets_sealed(struct ksets *k, uint64_t seq);

/* Every set defined by a batch with seq <= acked is held by the collectors. */
void ksets_ack(struct ksets *k, uint64_t acked);

/* Forget every set: each is defined again before it is referred to. */
void ksets_reset(struct ksets *k);

/* Skeletons tracked, and of those with a set the collectors hold. */
size_t ksets_count(const struct ksets *k, size_t *held);

#endif
