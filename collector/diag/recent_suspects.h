/* The suspects of a job's recent reports, for its per-job series
 * (collector/diag/diagnosis.h's diagnosis_job_series): fed every report the
 * job's engine produces, it keeps the newest of each (rank, cause) and
 * says how many are recent by cause and which rank suspect scores highest,
 * and sums the GPU-hours its suspects cost by cause (a report of the same
 * window again, amended by late records, replaces its suspects' share
 * instead of adding to it: collector/diag/diag_cost.h costs it the same).
 * Pure and bounded (RECENT_SUSPECTS_MAX entries; full, the oldest goes);
 * not thread-safe: the caller holds the job's lock. */
#ifndef ARGUS_COLLECTOR_RECENT_SUSPECTS_H
#define ARGUS_COLLECTOR_RECENT_SUSPECTS_H

#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diagnosis.h"
#include "proto/argus.pb-c.h"

#define RECENT_SUSPECTS_MAX 64

struct recent_suspect {
    uint32_t rank; /* DIAG_RANK_NONE: a node or the job as a whole */
    int cause;     /* Argus__V1__Cause */
    int level;     /* Argus__V1__Level */
    int32_t gpu;
    char node[128];   /* truncated past 127 bytes */
    double score;     /* the level's statistic (Suspect.score) */
    double slowdown;  /* Suspect.slowdown: 1.0 = as its peers, 0 = not measured */
    uint64_t to_step; /* end of the window of the report that named it last */
    double gpu_hours; /* what that report said it cost */
};

struct recent_suspects {
    struct recent_suspect v[RECENT_SUSPECTS_MAX];
    size_t n;
    double gpu_hours_lost[CAUSES_MAX]; /* by cause value, over every report noted */
};

/* Remember the suspects of report rep (which stays the caller's). */
void recent_suspects_note(struct recent_suspects *r, const Argus__V1__Report *rep);

/* Fill s->gpu_hours_lost, s->suspects and s->has_top with the top_* fields from the
 * suspects named by a report whose window ended at most 2 * window steps
 * before s->step (all of them while !s->has_step). The top is the highest
 * slowdown among rank suspects (not a node) of a cause that pages
 * (common/causes.h: compute, link, host, silent) whose slowdown was
 * measured: one scale whatever level found them. */
void recent_suspects_summarize(const struct recent_suspects *r, uint32_t window,
                               struct diagnosis_job_series *s);

#endif
