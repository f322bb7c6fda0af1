/* The batcher: step records of every local rank into argus.v1.Batch frames.
 * Each step is packed when added (so callers may free their record at once);
 * a batch is sealed when it holds max_steps records or max_bytes, or when
 * its oldest record is max_age old. Sealing adds the agent identity, the
 * dictionary delta and resources the collector does not have yet
 * (agent/delivery/names.h), and the cumulative drop counters, then compresses the
 * batch into one LZ4 frame (common/frame.h). Single-threaded. */
#ifndef ARGUS_AGENT_BATCHER_H
#define ARGUS_AGENT_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/delivery/names.h"
#include "proto/argus.pb-c.h"

struct batcher_options {
    const char *agent_id; /* copied */
    size_t max_steps;     /* >= 1 */
    size_t max_bytes;     /* packed step bytes */
    uint64_t max_age_ns;
};

struct batcher;

/* names is not owned and must outlive the batcher. NULL on -ENOMEM. */
struct batcher *batcher_new(const struct batcher_options *o, struct names *names);
void batcher_free(struct batcher *b);

/* Pack s into the open batch and reference its names. now_ns is monotonic.
 * Returns 0 or -ENOMEM (the step is dropped and counted). */
int batcher_add_step(struct batcher *b, const Argus__V1__StepRecord *s, uint64_t now_ns);

/* Add count to the cumulative drop counter (reason, job, rank); job NULL and
 * rank -1 for node-level drops. reason and job are copied. */
void batcher_drop(struct batcher *b, const char *reason, const char *job, int32_t rank,
                  uint64_t count);

/* Each drop counter (job NULL for node-level ones), in creation order. */
void batcher_foreach_drop(const struct batcher *b,
                          void (*fn)(void *ctx, const char *reason, const char *job, int32_t rank,
                                     uint64_t total),
                          void *ctx);

/* The drop counters changed since the last batcher_drops_saved call. */
bool batcher_drops_changed(const struct batcher *b);
void batcher_drops_saved(struct batcher *b);

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
 * caller frees). A batch without steps is sealed when resources wait for an
 * ack. Returns 0, or -ENODATA when there is nothing to send, or
 * -ENOMEM. The open batch is emptied either way except on -ENOMEM. */
int batcher_seal(struct batcher *b, uint64_t epoch, uint64_t seq, void **frame, size_t *len);

struct batcher_stats {
    uint64_t steps, batches, raw_bytes, frame_bytes;
};
void batcher_get_stats(const struct batcher *b, struct batcher_stats *out);

#endif
