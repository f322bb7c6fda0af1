/* Inside collector/diag/diagnosis: the collector's diagnosis state and one
 * job's, shared by diagnosis.c (the jobs, feeding, ticks, series) and
 * diagnosis_blind.c (a job's shedding, by episode). Not for other modules:
 * they use diagnosis.h. */
#ifndef ARGUS_COLLECTOR_DIAGNOSIS_JOB_H
#define ARGUS_COLLECTOR_DIAGNOSIS_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_blind.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_live.h"
#include "collector/diag/diagnosis.h"
#include "collector/diag/recent_suspects.h"
#include "common/strmap.h"

#define DIAGNOSIS_DEFAULT_WINDOW 40 /* diag_engine.h's default persistence window */

struct diagnosis_job {
    char *job;
    pthread_mutex_t lock;
    struct diag_engine *engine;
    struct diagnosis *d;
    struct strmap names;                /* the job's dictionary */
    uint64_t last_fed_ns, feed_lag_ns;  /* when, and wall clock - receive time, of the last batch */
    uint64_t tick_ns;                   /* the engine's time at the last tick */
    struct diagnosis_job_lag lag;       /* as of the last tick */
    struct diagnosis_job_series series; /* steps and lag as of the last tick */
    struct recent_suspects recent;      /* of its reports */
    struct diag_live live;              /* statuses: hangs, deaths, its state (diag_live.h) */
    uint32_t restart;                   /* the epoch: the launcher's attempt */
    bool restarting;                    /* a new epoch that has closed no step yet */
    int state_put;                      /* the state last stored and told to alerts */
    uint64_t past_records, past_closed; /* counters of the epochs before this one */
    uint64_t suppressed;                /* reports of a failed epoch not published */
    uint64_t queue_shed;                /* records the full queue kept from it */
    struct diag_blind blind;            /* what it sheds, by episode */
};

struct diagnosis {
    struct store *store;
    struct diagnosis_options o;
    pthread_mutex_t lock; /* the jobs array */
    struct diagnosis_job **jobs;
    size_t njobs;
    pthread_mutex_t stats_lock;
    struct diagnosis_stats stats;
    struct diagnosis_stats retired; /* counters of the engines freed (under lock) */
    diagnosis_clock_fn clock;
    void *clock_ctx;
};

/* Whether j's diagnosis sheds work, at its time t (its lock held; es: its
 * engine's stats of this tick): logged once per episode, kept on its
 * JobInfo and series; returns the ArgusBlind report to publish when one is
 * due (else NULL). diagnosis_blind.c. */
Argus__V1__Report *diagnosis_blind_tick(struct diagnosis *d, struct diagnosis_job *j, uint64_t t,
                                        const struct diag_engine_stats *es);

#endif
