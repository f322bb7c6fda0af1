/* collector/alerts/: the delivery queue of one sink target and its sender
 * thread. alerts.c makes one per configured target and hands it every
 * event to deliver (alerts_sender_enqueue); the queue lives in the store's
 * alerts family under "q:" NAME ":" target \0 seq (u64 big-endian) ->
 * enqueue unix ns (u64 big-endian) + event JSON, so a restart resumes it.
 * The thread delivers the head of the queue through the sink's ops
 * (sinks/sink.h) and deletes it, retries what failed with exponential
 * backoff (1 s doubling up to backoff_max, jittered to 50-100 %), drops an
 * event the sink can never deliver (logged), and, for a sink that re-sends,
 * sends every firing alert of the book again every resend when nothing is
 * queued.
 * Locking: each sender has its own lock for its counters; the book is read
 * under book_lock, which the sender never takes while holding its own, so
 * a caller may call in with book_lock held. Nothing here calls alerts.c.
 */
#ifndef ARGUS_COLLECTOR_ALERTS_SENDER_H
#define ARGUS_COLLECTOR_ALERTS_SENDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/sinks/sink.h"

struct store;

struct alerts_sender_options {
    struct store *store;                        /* the queue (alerts family) */
    const struct alert_sink_ops *ops;           /* the sink */
    const char *target;                         /* copied */
    const struct alert_sink_settings *settings; /* outlives the sender */
    uint64_t backoff_max_ns;                    /* > 0 */
    /* Re-sends (ops->resends): the firing alerts of book, read under
     * book_lock, as events with report_url (outlives the sender). */
    struct alert_book *book;
    pthread_mutex_t *book_lock;
    const char *report_url;
};

struct alerts_sender;

/* A sender of o->target, its queue counted empty and no thread started.
 * NULL on ENOMEM. */
struct alerts_sender *alerts_sender_new(const struct alerts_sender_options *o);

/* Start the thread. 0 or -errno. */
int alerts_sender_start(struct alerts_sender *s);

/* Ask the thread to stop (a delivery in flight finishes or times out);
 * returns at once, so that every sender can be told before the first is
 * waited for. NULL is fine. */
void alerts_sender_stop(struct alerts_sender *s);

/* Stop, wait for the thread, free. What is queued stays in the store.
 * NULL is fine. */
void alerts_sender_free(struct alerts_sender *s);

/* Whether the store key (klen bytes) is an entry of s's queue. */
bool alerts_sender_owns(const struct alerts_sender *s, const void *key, size_t klen);

/* Count an entry of s's queue found in the store at start, enqueued at
 * queued_ns (unix; 0: unknown). Before alerts_sender_start. */
void alerts_sender_restore(struct alerts_sender *s, uint64_t queued_ns);

/* Queue event for s under seq (unique, growing across every sender) at
 * now_ns (unix) and wake the thread. 0, or -EIO/-ENOMEM with a sentence in
 * err (errlen bytes). */
int alerts_sender_enqueue(struct alerts_sender *s, uint64_t seq, const char *event, uint64_t now_ns,
                          char *err, size_t errlen);

struct alerts_sender_stats {
    const char *kind, *target; /* valid while s lives */
    uint64_t sent, failed, queued;
    uint64_t oldest_ns; /* enqueue unix ns of the head, 0 when nothing is queued */
};

/* s's numbers now. */
void alerts_sender_stats(struct alerts_sender *s, struct alerts_sender_stats *st);

#endif
