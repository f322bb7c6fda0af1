/* Per agent stream: how far its clock is from the collector's. It takes in,
 * for every batch ingest accepts, the batch's created_unix_ns (when the
 * agent sealed it, on the agent's clock) and the collector's receive time,
 * and gives out one offset estimate per stream (agent clock minus collector
 * clock, signed) for /metrics, plus a flag when a stream is off by more than
 * a bound (raised once, dropped when the stream is back within half the
 * bound), which the caller logs and counts. Nothing is deleted or rejected
 * for being off: retention and first/last seen use the collector's clock.
 *
 * Estimate: a sample is created - received, that is the offset minus the
 * batch's delay (network, queues, the agent's spool), so the largest sample
 * of a sliding window (two buckets of window/2) is the least-delayed batch:
 * a min-delay filter, as NTP's clock filter. An agent replaying its spool
 * sends batches sealed long ago; over a bucket where the agent's clock ran
 * faster than the collector's by more than half (created times advancing
 * 1.5x receive times, plus a second), the stream is catching up, and no flag
 * is raised from it: a backlog is not a skew.
 *
 * Thread-safe (one mutex). Streams not seen for an hour are forgotten by
 * stream_clock_tick; at most max_streams are tracked, the others are counted.
 */
#ifndef ARGUS_COLLECTOR_STREAM_CLOCK_H
#define ARGUS_COLLECTOR_STREAM_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stream_clock_options {
    uint64_t skew_warn_ns; /* flag a stream whose offset is larger (either way) */
    uint64_t window_ns;    /* min-delay filter window; 0: 2 minutes */
    size_t max_streams;    /* 0: 65536 */
};

struct stream_clock;

/* NULL on ENOMEM. Free with stream_clock_free (NULL is fine). */
struct stream_clock *stream_clock_new(const struct stream_clock_options *o);
void stream_clock_free(struct stream_clock *c);

enum stream_clock_event {
    STREAM_CLOCK_NONE,
    STREAM_CLOCK_FLAGGED,   /* this batch made the stream cross the bound */
    STREAM_CLOCK_RECOVERED, /* back within half the bound */
};

/* One batch of stream `agent`. Returns the event this sample caused, with
 * the stream's offset estimate in *offset_ns (agent minus collector) when
 * offset_ns is not NULL. */
enum stream_clock_event stream_clock_observe(struct stream_clock *c, const char *agent,
                                             uint64_t created_unix_ns, uint64_t recv_unix_ns,
                                             int64_t *offset_ns);

/* Forget streams not seen since now_unix_ns - 1 hour. */
void stream_clock_tick(struct stream_clock *c, uint64_t now_unix_ns);

/* Each stream's estimate, under the lock: fn must not call back into c. */
typedef void (*stream_clock_fn)(void *ctx, const char *agent, int64_t offset_ns, bool flagged);
void stream_clock_foreach(struct stream_clock *c, stream_clock_fn fn, void *ctx);

struct stream_clock_stats {
    uint64_t streams;     /* tracked now */
    uint64_t flagged;     /* flagged now */
    uint64_t flags_total; /* times a stream was flagged */
    uint64_t untracked;   /* batches of streams over max_streams */
};
void stream_clock_get_stats(struct stream_clock *c, struct stream_clock_stats *out);

#endif
