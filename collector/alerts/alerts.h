/* collector/alerts/alerts.h: the alert stage's entry point (the folder's
 * map is in alert_book.h). Diagnosis hands every job's reports and closed-
 * step count to alerts_observe; the lifecycle (alert_book.h) decides what
 * changed; each change of an alert that fires is written, as an
 * argus.alert.v1 event, to the store's alerts family once per sink target
 * (the queue) before anything is sent; one sender thread per target
 * (alerts_sender.h) delivers its queue in order through its sink
 * (sinks/sinks.h), deletes what was delivered, and retries what failed
 * with exponential backoff (1 s doubling up to backoff_max, jittered to
 * 50-100 %). A sink that re-sends (Alertmanager) also gets every firing
 * alert every resend (endsAt 4 x resend ahead) so Alertmanager keeps it.
 * A restart takes the queue and the alert states back from the store and
 * resumes; queue entries of sinks no longer configured are dropped (logged).
 * Nothing here blocks diagnosis on a sink: observe does store writes only.
 *
 * Store keys (alerts family): "s:" id -> alert state JSON (alert_json.h);
 * "q:" kind ":" target \0 seq (u64 big-endian) -> enqueue unix ns (u64
 * big-endian) + event JSON (alerts_sender.h).
 * Thread-safe (one lock for the book; each sender has its own).
 */
#ifndef ARGUS_COLLECTOR_ALERTS_H
#define ARGUS_COLLECTOR_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/sinks/sinks.h"
#include "proto/argus.pb-c.h"

struct store;

struct alerts_options {
    /* Per row i of the sink table (alert_sinks[i], sinks/sinks.h): the
     * comma-separated targets of its config key alerts.NAME (NULL or "":
     * none). */
    const char *targets[ALERT_SINKS_MAX];
    const char *webhook_token_file; /* bearer token for the webhooks ("": none) */
    const char *report_url;         /* link template with {id} and {job} ("": none) */
    uint64_t exec_timeout_ns, http_timeout_ns;
    uint64_t resend_ns;      /* Alertmanager re-send interval */
    uint64_t backoff_max_ns; /* retry interval cap */
    uint64_t window;         /* the engine's re-report interval (diag.window) */
    uint64_t resolve_after;  /* clean closed steps beyond window that resolve */
    uint64_t job_idle_ns;    /* a job idle this long has ended (diag.job_idle) */
    uint32_t rate_limit;     /* alerts a job may start firing per hour (0: none) */
};

struct alerts;

/* Check the sinks' targets (each sink's ops->check: URLs http(s)://, exec
 * paths absolute and executable), the token file (readable, not empty), load the store's queue and
 * states, start the senders. Returns 0 and *out, or -EINVAL/-ENOMEM/-EIO with a sentence naming the
 * config key in err (errlen bytes). */
int alerts_new(struct store *s, const struct alerts_options *o, struct alerts **out, char *err,
               size_t errlen);

/* What alerts_new checks of o, without a store or threads (a config check
 * mode). 0, or -EINVAL/-ENOMEM with the sentence in err. */
int alerts_check(const struct alerts_options *o, char *err, size_t errlen);

/* Stop the senders (a delivery in flight finishes or times out) and free.
 * What is queued stays in the store. NULL is fine. */
void alerts_free(struct alerts *a);

/* The reports job produced (n, maybe 0; they stay the caller's) and its
 * closed steps so far. Errors are counted and logged (rate-limited). */
void alerts_observe(struct alerts *a, const char *job, Argus__V1__Report *const *reports, size_t n,
                    uint64_t steps_closed);

/* Diagnosis says job's alerts of cause (-1: all) are over, except those of
 * cause keep (-1: none): alert_book_resolve. NULL a is fine. */
void alerts_resolve(struct alerts *a, const char *job, int cause, int keep);

/* Diagnosis says rank of job recovered from the causes of the bit set
 * causes (1u << Argus__V1__Cause): alert_book_recovered. NULL a is fine. */
void alerts_recovered(struct alerts *a, const char *job, uint32_t rank, uint32_t causes);

/* Once a second: resolve the alerts of jobs that ended, forget old ones. */
void alerts_tick(struct alerts *a, uint64_t now_unix_ns);

/* Per-sink numbers for /metrics. */
struct alerts_sink_stats {
    const char *kind, *target; /* valid while a lives */
    uint64_t sent, failed, queued;
    double oldest_age_s; /* of what is queued, 0 when nothing */
};
typedef void (*alerts_sink_fn)(void *ctx, const struct alerts_sink_stats *st);
void alerts_foreach_sink(struct alerts *a, alerts_sink_fn fn, void *ctx);

/* Call fn for every alert known (under the lock: fn must not call in). */
void alerts_foreach(struct alerts *a, alert_change_fn fn, void *ctx);

/* Alerts kept pending by the per-job rate limit; store write errors. */
void alerts_get_counts(struct alerts *a, uint64_t *rate_limited, uint64_t *store_errors);

#endif
