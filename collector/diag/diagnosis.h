/* collector/diag/diagnosis.h: the diagnosis stage's adapter to the rest of
 * the collector (the folder's map is in diag_engine.h). diagq.h is the queue
 * from ingest to here; recent_suspects.h the view of current suspects.
 *
 * Online diagnosis in the collector: one diag_engine (collector/diag/diag_engine.h)
 * per job, fed every durable batch with the agent stream it came from and the
 * collector's receive time (diagnosis_feed; the caller may run behind ingest,
 * which is measured and exported), ticked once a second so steps close by
 * watermark and timeout and silence is found by wall clock, with every report
 * it produces stored (store_put_report) and logged. Thread-safe: ingest
 * workers, a diagnosis queue and the main loop call in concurrently; each
 * job's engine has its own lock. */
#ifndef ARGUS_COLLECTOR_DIAGNOSIS_H
#define ARGUS_COLLECTOR_DIAGNOSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_silence.h"
#include "collector/diag/diagq.h"
#include "common/causes.h"
#include "proto/argus.pb-c.h"

struct alerts;
struct store;

#define DIAGNOSIS_STATES 6 /* Argus__V1__JobState values */

/* "running", "hung", ... of an Argus__V1__JobState (labels of /metrics). */
const char *diagnosis_state_name(int state);

struct diagnosis_options { /* 0: the engine's default (diag_engine.h) */
    uint64_t step_timeout_ns;
    uint64_t stream_hold_ns;
    uint64_t silence_ns;
    uint64_t max_open_bytes; /* per job */
    uint64_t max_bytes;      /* all jobs' open and kept steps: over it the least
                              * recently fed jobs are retired (0: no bound) */
    uint32_t late_horizon;
    uint32_t window, min_hits;
    uint32_t max_jobs;      /* engines at once; the least recently fed goes */
    uint32_t max_ranks;     /* per job: rank numbers below it (0: the engine's 65,536) */
    uint64_t job_idle_ns;   /* a job fed nothing this long is flushed and its
                             * state freed (0: 5 minutes) */
    uint64_t hang_after_ns; /* a hang's bound at least (diag_live.h; 0: 30 s) */
    /* gets every job's reports and closed steps (NULL: none) */
    struct alerts *alerts;
    /* Told of each stored report that pages (the drill-down captures,
     * collector/trace/); r is valid during the call. May be NULL. */
    void (*on_report)(void *ctx, const Argus__V1__Report *r);
    void *on_report_ctx;
    /* whether an agent stream's link is up (diag_silence.h; NULL: always) */
    diag_silence_link_fn link;
    void *link_ctx;
};

struct diagnosis;

struct diagnosis *diagnosis_new(struct store *store, const struct diagnosis_options *o);
void diagnosis_free(struct diagnosis *d);

/* At start: take back every job the store saw within job_idle (a restarted
 * collector under running jobs): each gets its engine now, with its ranks'
 * placement and its reports' suspects from the store (diag_restore.h), so
 * its reports, alert identities and per-job series go on as before the
 * restart. A job created later by a batch is brought back the same way.
 * 0 or -errno of the store scan. */
int diagnosis_restore(struct diagnosis *d);

/* Feed a durable batch's resources, names and steps to the jobs' engines,
 * as delivered by agent stream b->agent_id and received by the collector at
 * recv_unix_ns (wall clock). The batch stays the caller's. */
void diagnosis_feed(struct diagnosis *d, const Argus__V1__Batch *b, uint64_t recv_unix_ns);

/* A diagq_progress_fn (ctx: d): the ranks of a batch the diagnosis queue
 * could not take delivered these steps through agent stream `agent` at
 * recv_unix_ns; their records are not diagnosed (diag_engine_note_progress). */
void diagnosis_progress(void *ctx, const char *job, const char *agent,
                        const struct diagq_progress *p, size_t n, uint64_t recv_unix_ns);

/* Where a job's diagnosis is in receive time: the receive time up to which
 * everything received for job was fed (diagq_job_clock), at most now. */
typedef uint64_t (*diagnosis_clock_fn)(void *ctx, const char *job, uint64_t now_unix_ns);

/* Tick each job at clock's time for it (set before the first tick; ctx must
 * outlive d). Without one, a job ticks at now less the lag of its last feed. */
void diagnosis_set_clock(struct diagnosis *d, diagnosis_clock_fn clock, void *ctx);

/* Advance every job's engine to its own clock at now_unix_ns (a lagging
 * diagnosis sees its own past, not a silence: time its batches waited to be
 * fed never counts): close steps by watermark and timeout, find silence,
 * store the reports. */
void diagnosis_tick(struct diagnosis *d, uint64_t now_unix_ns);

struct diagnosis_stats { /* summed over jobs (as of the last tick) */
    uint64_t jobs, records, steps_closed, reports, report_errors;
    uint64_t jobs_retired;        /* engines freed: idle past job_idle, over max_jobs, or
                                   * over max_bytes */
    uint64_t jobs_retired_memory; /* of those, over max_bytes */
    uint64_t closed_by[5];        /* enum diag_close_reason: complete, watermark, timeout,
                                   * budget, flush */
    uint64_t late, amended;       /* records of closed steps; those that amended them */
    uint64_t dropped_horizon, dropped_memory; /* late records not diagnosed */
    uint64_t dropped_early;              /* records of steps before the job's diagnosis began */
    uint64_t silent_nodes, silent_ranks; /* silence findings */
    uint64_t open_steps, open_bytes;     /* gauges */
    uint64_t close_ns_max;               /* slowest step close of any job */
    uint64_t close_ns_total;             /* time spent closing steps, all jobs */
    uint64_t last_report_ns;
    uint64_t statuses;                        /* rank statuses taken (summed over the live jobs) */
    uint64_t hangs;                           /* hangs reported */
    uint64_t deaths;                          /* deaths reported */
    uint64_t suppressed;                      /* reports of failed epochs not published */
    uint64_t jobs_by_state[DIAGNOSIS_STATES]; /* live jobs by Argus__V1__JobState */
};
void diagnosis_get_stats(struct diagnosis *d, struct diagnosis_stats *out);

/* One job's lag, for /metrics. */
struct diagnosis_job_lag {
    double watermark_lag_s;   /* receive time the oldest open step has waited */
    uint64_t watermark_steps; /* newest step delivered - watermark */
    double feed_lag_s;        /* the last batch fed, behind its receive time */
    uint64_t open_steps, open_bytes;
};
typedef void (*diagnosis_job_fn)(void *ctx, const char *job, const struct diagnosis_job_lag *lag);

/* Call fn for every job under diagnosis (as of the last tick). */
void diagnosis_foreach_job(struct diagnosis *d, diagnosis_job_fn fn, void *ctx);

/* One job's summary for the per-job Prometheus series (collector/series/series.h).
 * "Recent" suspects are those of reports whose window ended at most two
 * persistence windows (2 * diag.window steps) before the last step closed:
 * a firing suspect is re-reported every window, so it stays; a recovered one
 * leaves after two windows. */
struct diagnosis_job_series {
    bool has_step;                 /* a step was closed and analysed */
    uint64_t step;                 /* the last one */
    double step_p50_s;             /* its step time, median over ranks */
    double step_max_s;             /* and max over ranks */
    uint32_t suspects[CAUSES_MAX]; /* recent suspects (a rank, or a node) by cause
                                    * value, causes_count() of them (common/causes.h) */
    bool has_top;      /* a recent rank suspect of a cause that pages, its slowdown measured */
    uint32_t top_rank; /* the one with the highest slowdown (recent_suspects.h) */
    int top_cause;     /* its Argus__V1__Cause */
    int top_level;     /* its Argus__V1__Level */
    int32_t top_gpu;   /* its GPU (-1: unknown) */
    char top_node[128];
    double top_slowdown; /* Suspect.slowdown: 1.0 = as fast as its peers */
    double top_score;    /* Suspect.score: the level's statistic (robust z, W1 ratio) */
    double lag_s;        /* diagnosis behind receipt: the feed lag of the last batch plus
                          * the wait of the oldest open step */
    double gpu_hours_lost[CAUSES_MAX]; /* by cause value: the suspects' Suspect.gpu_hours_lost
                                        * summed over the job's reports (a counter) */
    bool blind[3];                     /* shedding now, by enum diag_blind_reason (diag_blind.h) */
    uint64_t shed[3];                  /* records not diagnosed, by reason (counters) */
};
typedef void (*diagnosis_series_fn)(void *ctx, const char *job,
                                    const struct diagnosis_job_series *s);

/* Call fn for every job under diagnosis with its summary (steps as of the
 * last tick, suspects as of the last report). Read-only; fn runs with the
 * jobs list locked and must not call back into d. */
void diagnosis_foreach_series(struct diagnosis *d, diagnosis_series_fn fn, void *ctx);

#endif
