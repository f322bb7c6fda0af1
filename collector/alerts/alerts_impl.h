/* Private to collector/alerts/: what alerts.c (the queue, set-up) and
 * alerts_sender.c (the sender threads) share. Locking: a->lock guards the
 * book, every sink's counters and a->stop; the senders deliver without it. */
#ifndef ARGUS_COLLECTOR_ALERTS_IMPL_H
#define ARGUS_COLLECTOR_ALERTS_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/alert_sink.h"
#include "collector/alerts/alerts.h"

#define ALERTS_MAX_SINKS 32

struct alerts_sink {
    struct alerts *owner;
    struct alert_sink_target t;
    char *target;
    char *prefix; /* "q:" kind ":" target \0 */
    size_t plen;
    pthread_t thread;
    bool started;
    uint64_t sent, failed, queued;
    uint64_t oldest_ns;   /* enqueue time of the head, 0 when empty */
    uint64_t next_resend; /* mono ns */
    uint64_t enqueued;    /* events queued, ever (a sender's nap sees new ones) */
    char last_error[256];
};

struct alerts {
    struct store *store;
    struct alerts_options o;
    char *report_url;
    char *token;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    struct alert_book *book;
    struct alerts_sink sinks[ALERTS_MAX_SINKS];
    size_t n_sinks;
    uint64_t seq;
    uint64_t store_errors, observe_errors;
};

/* Count a store error and log it (1 in 100). a->lock held. */
void alerts_store_fail(struct alerts *a, const char *what, const char *err);

/* The thread of one sink (arg: struct alerts_sink): delivers its queue in
 * order, retries with backoff, re-sends (Alertmanager), until a->stop. */
void *alerts_sender(void *arg);

#endif
