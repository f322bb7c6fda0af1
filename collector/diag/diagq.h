/* The queue between ingest and diagnosis, so that an ack never waits on
 * diagnosis. It takes in batches ingest has made durable, each with the
 * collector's receive time and the memory it lives in (whose ownership it
 * takes), and gives them out, in the order they came, to one worker thread
 * that calls feed (the diagnosis adapter) and then releases the memory.
 *
 * Bounded by bytes (the memory the queued batches and the one being fed
 * hold): a batch that does not fit is not queued (unless they hold nothing:
 * one batch over the bound still goes through) and not diagnosed; it is
 * already stored, the ack is not held, and its step records are counted as
 * dropped from diagnosis (reason queue_full). What it delivered (each job's
 * ranks and their highest step, from its stream) still goes to diagnosis in
 * its place, through progress, within an eighth of the bound more: so that a
 * full queue makes steps close without those records rather than wait for
 * them, and never makes their ranks look silent. push never blocks beyond a
 * mutex held for a few list and counter updates.
 *
 * Lag, per job: the receive time of the newest batch that carried the job
 * minus that of the last one the worker finished for it, while batches of
 * the job wait (0 when none waits): how far diagnosis is behind what was
 * received. diagq_tick logs a warning once when a job's lag goes over
 * lag_warn and once when it is back under half of it. A job with nothing
 * queued for 10 minutes is forgotten (its lag series goes away).
 *
 * Thread-safe: push from any thread (the gRPC workers), tick and the
 * getters from any other.
 */
#ifndef ARGUS_COLLECTOR_DIAGQ_H
#define ARGUS_COLLECTOR_DIAGQ_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Diagnose one batch (on the worker thread; b is valid during the call). */
typedef void (*diagq_feed_fn)(void *ctx, const Argus__V1__Batch *b, uint64_t recv_unix_ns);

/* A rank of job delivered step through agent stream `agent`, received at
 * recv_unix_ns, in a batch the full queue did not take (worker thread). */
struct diagq_progress {
    uint32_t rank;
    uint64_t step;
    uint32_t records; /* of the rank in the batch: not diagnosed */
};
typedef void (*diagq_progress_fn)(void *ctx, const char *job, const char *agent,
                                  const struct diagq_progress *p, size_t n, uint64_t recv_unix_ns);

/* Free the memory a pushed batch lives in. */
typedef void (*diagq_release_fn)(void *owner);

struct diagq_options {
    uint64_t max_bytes;         /* bound on the bytes queued batches hold */
    uint64_t lag_warn_ns;       /* log once when a job's lag is over this; 0: never */
    uint64_t test_delay_ns;     /* sleep per batch in the worker (tests make diagnosis slow) */
    diagq_progress_fn progress; /* with feed's ctx; NULL: dropped batches leave nothing */
};

struct diagq;

/* Start the worker. NULL on ENOMEM or when the thread cannot start. */
struct diagq *diagq_new(const struct diagq_options *o, diagq_feed_fn feed, void *feed_ctx);

/* Stop the worker (the batch being fed finishes) and release what is still
 * queued, undiagnosed. NULL is fine. */
void diagq_free(struct diagq *q);

/* Queue batch b (living in owner, `bytes` of memory) received at
 * recv_unix_ns. Ownership of owner passes to the queue in every case: it is
 * released after feed, or at once when the batch does not fit. Returns 0
 * when queued, -ENOBUFS when dropped because the queue is full, -ENOMEM. */
int diagq_push(struct diagq *q, const Argus__V1__Batch *b, uint64_t recv_unix_ns, size_t bytes,
               diagq_release_fn release, void *owner);

/* The receive time up to which every batch of job that reached the queue
 * was fed to diagnosis: that of its oldest batch still queued or being fed,
 * or now_unix_ns when none waits (never more than now_unix_ns). Diagnosis
 * ticks a job at this time, so that the time its batches wait here never
 * counts as silence, step timeout or stream hold. O(batches queued) when the
 * job has some queued, else O(jobs). */
uint64_t diagq_job_clock(struct diagq *q, const char *job, uint64_t now_unix_ns);

/* Once a second or so: lag warnings, forgetting idle jobs. */
void diagq_tick(struct diagq *q, uint64_t now_mono_ns);

struct diagq_stats {
    uint64_t queued_batches, queued_bytes, max_bytes;
    uint64_t fed_batches, fed_records;
    uint64_t dropped_batches, dropped_records; /* reason queue_full */
    uint64_t noted_batches;                    /* of those, their progress went on */
    uint64_t lag_warnings;                     /* times a job went over lag_warn */
};
void diagq_get_stats(struct diagq *q, struct diagq_stats *out);

/* Each job's lag in seconds, under the lock: fn must not call back into q. */
typedef void (*diagq_lag_fn)(void *ctx, const char *job, double lag_seconds);
void diagq_foreach_lag(struct diagq *q, diagq_lag_fn fn, void *ctx);

#endif
