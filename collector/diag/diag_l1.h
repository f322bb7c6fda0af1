/* L1, iteration time (docs/design.md section 7): the job series T_k = max over
 * ranks of step time. Spikes are short excursions of T_k above its rolling
 * median beyond the job's own jitter (JIT compiles, host stalls: a step of a
 * noisy job on a shared machine that is 1.5x its median is not one when its
 * steps wobble that much anyway); regressions are level shifts of
 * log T found by a two-window change-point test. Output: anomalous windows.
 */
#ifndef ARGUS_COLLECTOR_DIAG_L1_H
#define ARGUS_COLLECTOR_DIAG_L1_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_stats.h"

#define DIAG_L1_HISTORY 64

struct diag_l1_options {
    uint32_t roll_window;   /* rolling median length (default 16) */
    double spike_ratio;     /* T_k / rolling median above this is a spike (1.5) */
    double spike_jitter_k;  /* and log(T_k / median) above k robust sigmas of the rolling
                             * window's log T (5): a wobble within the job's own jitter
                             * is not a spike */
    double spike_one_ratio; /* a spike of a single step: its peak / median at least this
                             * (4): one slow step of a few x is every job's wobble (a GC
                             * pause, a log flush), a JIT compile is tens of x */
    uint32_t spike_max_len; /* longer excursions are level shifts, not spikes (3) */
    uint32_t cp_base;       /* change point: base window (24) */
    uint32_t cp_recent;     /* change point: recent window (8) */
    double cp_k;            /* change point: shift > k * sigma / sqrt(recent) (6) */
    double cp_min_ratio;    /* change point: and T ratio above this (1.1) */
};

/* What one closed step produced. */
struct diag_l1_event {
    bool spike;          /* a spike window ended (closed) with this step */
    uint64_t spike_from; /* its steps, inclusive */
    uint64_t spike_to;
    double spike_peak_ns;     /* highest T_k in it */
    double spike_median_ns;   /* rolling median when it started */
    uint32_t spike_rank;      /* rank that set the peak */
    bool regression;          /* a level shift was detected at this step */
    double regression_ratio;  /* exp(shift): new level / old level */
    uint64_t regression_from; /* first step of the recent window */
};

struct diag_l1 {
    struct diag_l1_options o;
    struct diag_roll roll;
    double logt[DIAG_L1_HISTORY]; /* winsorised log T, oldest first */
    uint32_t n_logt;
    bool in_spike;
    bool shifted; /* excursion too long: wait until T is back under the ratio */
    uint32_t spike_len;
    struct diag_l1_event pending;
};

/* Fill defaults for zero fields of o. */
void diag_l1_defaults(struct diag_l1_options *o);

/* Start an empty series with options o (copied, defaults filled in). */
void diag_l1_init(struct diag_l1 *l, const struct diag_l1_options *o);

/* Feed T_k (ns) of closed step `step`, set by `rank`. Fills *ev (zeroed
 * first). Steps must come in increasing order. O(window). */
void diag_l1_step(struct diag_l1 *l, uint64_t step, double t_ns, uint32_t rank,
                  struct diag_l1_event *ev);

/* Forget the regression history (after one was reported, so the new level
 * becomes the baseline). */
void diag_l1_rebase(struct diag_l1 *l);

#endif
