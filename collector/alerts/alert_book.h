/* collector/alerts/: on-call alerts. The stage takes in the reports that
 * diagnosis produces (collector/diag/diagnosis.c hands each job's reports and its
 * count of closed steps to alerts_observe, alerts.h) and gives out alert
 * state changes, each written to the store's alerts family first and then
 * delivered to every configured sink by a sender thread per sink, with
 * retries (alerts.h). Files: alert_book.h (this: the lifecycle, pure: no
 * store, no threads, no I/O), alert_json.h (the argus.alert.v1 JSON),
 * alerts_sender.h (one target's queue in the store and its sender thread),
 * alerts.h (the composition: set-up, the queueing of changes, counters, the
 * Query/Alerts listing), alerts_metrics.h (/metrics); sinks/ (delivery to
 * one sink: Alertmanager, webhook, exec hook; sinks/sinks.h, one file and
 * one table row per sink).
 *
 * The lifecycle of one alert, per (job, subject, cause):
 *   pending   a suspect of a cause that can page (causes_pages,
 *             common/causes.h: compute, link, host, silent, hang, exited)
 *             appeared in a report but has not paged yet (an L1 spike
 *             finding, which never pages, makes no alert);
 *   firing    a report's suspect pages (Suspect.pages: the engine's M of N
 *             persistence rule), unless the job's rate limit is spent (it
 *             stays pending, counted, and fires on a later report);
 *   resolved  the job closed clear_steps steps without a report naming the
 *             subject (the engine re-reports a firing suspect every window
 *             steps, so clear_steps is window + the configured clean steps),
 *             or the job went idle (ended) for job_idle.
 * The subject says what the evidence points at (common/causes.h grouping):
 * a link suspect with a peer group is the group ("group:pp=0,tp=1"); a
 * node-level finding (no rank: a silent agent stream) is its node
 * ("node:node-3"); a rank's suspect is its node only when the evidence is
 * node-wide - two or more of the node's ranks suspects of the cause in the
 * same report, or the rank already one of an open node alert's - else its
 * rank ("rank:17"). When a node alert opens, the open rank alerts of its
 * ranks (same cause) resolve into it. An alert lists only its own suspects:
 * a rank not named for clear_steps closed steps leaves the list, and the
 * alert resolves when all of its suspects did, whatever other ranks of the
 * node do. One sick node or switch is one alert; one sick GPU is its rank's.
 */
#ifndef ARGUS_COLLECTOR_ALERT_BOOK_H
#define ARGUS_COLLECTOR_ALERT_BOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

enum alert_status {
    ALERT_PENDING = 0,
    ALERT_FIRING = 1,
    ALERT_RESOLVED = 2,
};

#define ALERT_MAX_RANKS 64 /* ranks listed per alert; more are counted */

struct alert {
    char id[48]; /* "<16 hex of job|subject|cause>-<created ns hex>" */
    /* created_ns and firing_ns (Alertmanager's startsAt) are the onsets of
     * the reports that opened and fired it (Report.onset_unix_ns, from the
     * records), so the id, labels and startsAt are the same on both
     * collectors of an HA pair; updated_ns and resolved_ns are this
     * collector's clock. */
    char *job;         /* owned */
    char subject[160]; /* "node:NAME", "group:GROUP" or "rank:N" */
    int cause;         /* Argus__V1__Cause */
    int level;         /* Argus__V1__Level of the latest suspect */
    enum alert_status status;
    bool fired; /* was firing at some point (sinks hear of it) */
    char node[128], group[128], where[160];
    int32_t gpu; /* of the latest suspect, -1 when several ranks */
    uint32_t ranks[ALERT_MAX_RANKS];
    uint64_t rank_clean[ALERT_MAX_RANKS]; /* closed steps since each rank was named */
    uint32_t n_ranks, more_ranks;
    double score;
    char summary[256], evidence[512], report_id[64];
    /* GPU-hours its suspects cost the job (Suspect.gpu_hours_lost summed
     * over the reports that named them): what the reports before cost_report
     * said, plus each of its ranks' share in cost_report (the same report
     * again, amended, replaces a share rather than adding it). */
    double gpu_hours_lost, gpu_hours_before;
    char cost_report[64];
    uint32_t cost_ranks[ALERT_MAX_RANKS], n_cost;
    double cost_hours[ALERT_MAX_RANKS];
    uint64_t created_ns, firing_ns, resolved_ns, updated_ns; /* unix ns, 0: not yet */
    char fired_ranks[160]; /* what Alertmanager knows it by, fixed when it */
    int32_t fired_gpu;     /* starts firing: ranks ("3,5"), GPU, level */
    int fired_level;
    bool pages_now;                  /* a suspect of the report being read pages */
    uint64_t clean_steps;            /* closed steps of the job since a report named it */
    const Argus__V1__Report *report; /* the report that changed it, only during the
                                      * change callback (else NULL) */
};

struct alert_book_options {
    uint64_t clear_steps; /* resolve after this many closed steps unnamed (> 0) */
    uint64_t job_idle_ns; /* resolve a job's alerts when it sent nothing this long */
    uint32_t rate_limit;  /* alerts a job may start firing per rate_window (0: none) */
    uint64_t rate_window_ns;
    uint64_t keep_resolved_ns; /* forget resolved alerts this long after (0: 1 day) */
};

/* Called for every status change (new pending, firing, resolved) and for
 * every alert forgotten (status unchanged, forgotten true). The alert is
 * valid during the call. */
typedef void (*alert_change_fn)(void *ctx, const struct alert *a, bool forgotten);

struct alert_book;

/* New book (o copied). NULL on ENOMEM. */
struct alert_book *alert_book_new(const struct alert_book_options *o, alert_change_fn fn,
                                  void *ctx);
void alert_book_free(struct alert_book *b);

/* The reports (n of them; may be 0) job produced and its count of closed
 * steps so far (a count lower than the last one means its diagnosis
 * restarted). Updates the job's alerts, calls the change callback. Returns
 * 0 or -ENOMEM. */
int alert_book_observe(struct alert_book *b, const char *job, Argus__V1__Report *const *reports,
                       size_t n, uint64_t steps_closed, uint64_t now_ns);

/* Resolve job's open alerts of cause (-1: every cause) except those of
 * cause keep (-1: none) at now_ns: diagnosis says the job ended, failed,
 * restarted or its hang is over. Returns the number resolved. */
int alert_book_resolve(struct alert_book *b, const char *job, int cause, int keep, uint64_t now_ns);

/* Diagnosis says rank of job recovered from the causes in the bit set
 * causes (1u << Argus__V1__Cause): it was not flagged for one persistence
 * window (diag.window closed steps, collector/diag/diagnosis_recover.h).
 * The rank leaves the job's open alerts of those causes; an alert whose
 * last rank it was (none beyond ALERT_MAX_RANKS) resolves at now_ns, not
 * waiting for clear_steps, and keeps that rank in its list. Returns the
 * number resolved. */
int alert_book_recovered(struct alert_book *b, const char *job, uint32_t rank, uint32_t causes,
                         uint64_t now_ns);

/* Resolve the alerts of jobs idle past job_idle; forget resolved alerts
 * past keep_resolved. */
void alert_book_sweep(struct alert_book *b, uint64_t now_ns);

/* Take back an alert from a previous run (a copy is kept; job copied):
 * the job counts as active at now_ns. No callback. 0 or -ENOMEM. */
int alert_book_restore(struct alert_book *b, const struct alert *a, uint64_t now_ns);

/* Call fn for every alert known (forgotten false), oldest first. */
void alert_book_foreach(struct alert_book *b, alert_change_fn fn, void *ctx);

/* Alerts that stayed pending because their job's rate limit was spent. */
uint64_t alert_book_rate_limited(const struct alert_book *b);

/* "pending", "firing", "resolved". (A cause's name in alerts is its
 * common/causes.h label: "compute", "data_skew".) */
const char *alert_status_name(enum alert_status s);

#endif
