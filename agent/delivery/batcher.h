/* The delivery stage (agent/delivery/) takes in the step records of the
 * steps stage (agent/steps/: assembled or inferred, with their top frames)
 * and gives out batches acked by the collector, each carrying the agent's
 * drop totals. The batcher (here) packs records into sealed batches, with
 * the names and resources they need (names.h) and the drop table (drops.h);
 * the spool (spool.h) keeps every sealed batch on disk until the collector
 * acks it; the exporter (exporter.h) streams the spool to the collector;
 * dropstate (dropstate.h) carries the drop totals across restarts.
 *
 * The batcher: step records (and rank statuses, agent/liveness/) of every
 * local rank into argus.v1.Batch frames.
 * Each step is packed when added (so callers may free their record at once);
 * a batch is sealed when it holds max_steps records or max_bytes, or when
 * its oldest record is max_age old. Sealing adds the agent identity, the
 * dictionary delta and resources the collector does not have yet
 * (agent/delivery/names.h), and every cumulative drop counter (read from
 * agent/delivery/drops.h, never written), then compresses the batch into one
 * LZ4 frame (common/frame.h). Single-threaded. */
#ifndef ARGUS_AGENT_BATCHER_H
#define ARGUS_AGENT_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/names.h"
#include "proto/argus.pb-c.h"

struct batcher_options {
    const char *agent_id; /* copied */
    size_t max_steps;     /* >= 1 */
    size_t max_bytes;     /* packed step bytes */
    uint64_t max_age_ns;
};

struct batcher;

/* names and drops are not owned and must outlive the batcher; drops may be
 * NULL (batches carry no drop counters). NULL on -ENOMEM. */
struct batcher *batcher_new(const struct batcher_options *o, struct names *names,
                            const struct drops *drops);
void batcher_free(struct batcher *b);

/* The drop reason of a step the batcher had no memory for. */
#define BATCHER_DROP_NOMEM "batcher_nomem"

/* Whether batcher_add_step codes kernel groups (off at first): on only
 * while every collector the batches go to reads the coding (their acks'
 * features, fanout_features): a collector from before it would store the
 * records without their kernels. A batch may hold both forms. */
void batcher_set_coding(struct batcher *b, bool on);

/* Whether batcher_add_step refers to kernel identity sets the collectors
 * hold (ksets.h; off at first): on only while every collector the batches
 * go to keeps them (KERNEL_CODE_SET_ACK_FEATURE in their acks). With it
 * off, no set is defined or referred to. */
void batcher_set_kernel_sets(struct batcher *b, bool on);

/* Pack s into the open batch, its kernel groups coded compactly when coding
 * is on (common/kernel_code.h; only their clusters when the batch's previous
 * step record has the same job and groups, or when kernel sets are on and
 * the collectors hold its groups' identity set; a set seen before and not
 * held yet is defined), and reference its names. now_ns is monotonic.
 * Returns 0 or -ENOMEM: the step is dropped, and the caller counts it as
 * BATCHER_DROP_NOMEM for its job and rank. */
int batcher_add_step(struct batcher *b, const Argus__V1__StepRecord *s, uint64_t now_ns);

/* Pack a rank's status (proto RankStatus, agent/liveness/) into the open
 * batch and reference its names (its collectives' operations, its stack's
 * frames), like a step. A batch holding an exited status (a rank's end) is
 * due at once; others within max_age, counted with the steps against
 * max_steps. now_ns is monotonic. Returns 0 or -ENOMEM (the status is lost:
 * the caller counts it). */
int batcher_add_status(struct batcher *b, const Argus__V1__RankStatus *s, uint64_t now_ns);

/* Add a packed argus.v1.TraceWindow (copied) to the open batch as one
 * Batch.traces entry; the batch is due at once. Returns 0 or -ENOMEM. */
int batcher_add_trace(struct batcher *b, const void *packed, size_t len);

/* True when the open batch should be sealed now: it is full or old, or it
 * has no steps but new ranks or changed drop counters must go out (at most
 * once per max_age). */
bool batcher_due(const struct batcher *b, uint64_t now_ns);

/* The monotonic time at which batcher_due turns true by age alone (UINT64_MAX
 * when nothing waits), so the main loop can sleep until then. */
uint64_t batcher_next_ns(const struct batcher *b);

/* Steps in the open batch. */
size_t batcher_steps(const struct batcher *b);

/* Seal the open batch as (epoch, seq) into a packed Frame (*frame malloc'd,
 * caller frees), with every drop counter's total as it is now. A batch
 * without steps is sealed when resources wait for an ack or a drop counter
 * changed since the last seal. Returns 0, or -ENODATA when there is nothing
 * to send, or -ENOMEM. The open batch is emptied either way except on
 * -ENOMEM. */
int batcher_seal(struct batcher *b, uint64_t epoch, uint64_t seq, void **frame, size_t *len);

/* What the last successful batcher_seal sealed, so that delivery sends it
 * where it must go (agent/delivery/fanout.h): the distinct jobs of its
 * steps, statuses, names and resources, as names_job_index values
 * (names_job_name gives the strings), and whether it also carries what is
 * of no job the batcher knows (raw span traces) or of none (only drop
 * counters): jobless. Valid until the next seal. */
struct batcher_sealed {
    const long *jobs;
    size_t njobs;
    bool jobless;
};
void batcher_last_sealed(const struct batcher *b, struct batcher_sealed *out);

struct batcher_stats {
    uint64_t steps, statuses, batches, raw_bytes, frame_bytes;
    uint64_t coded;         /* steps whose kernel groups went coded (packed_kernels) */
    uint64_t sets_referred; /* ... of those, as an identity set the collectors hold */
};
void batcher_get_stats(const struct batcher *b, struct batcher_stats *out);

#endif
