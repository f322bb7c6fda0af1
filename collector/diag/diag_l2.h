/* L2, rank and phase (docs/design.md section 7).
 *
 * Within each peer group (diag_groups, work kind), robust z of every rank's
 * phase times, compute-stream busy time, collective transfer time and
 * collective lateness (matched and clock-aligned by diag_colls).
 * Cause per rank and step:
 *   COMPUTE  a compute phase is high and so is the rank's own kernel busy time
 *            (a phase that is long only because it waited inside - a pipeline
 *            neighbour of a slow stage - is not the culprit); untraced, a rank
 *            whose collectives waited for peers as long as its phase grew is
 *            a victim too (diag_pipeline settles waits between stages);
 *   IMBALANCE the same, but its kernels show more work rather than slower
 *            hardware: another work id (KernelGroup.work_id: other launch
 *            shapes or counts) than most of its group for some kernel, or
 *            1 + min_effect times the group's kernel count with each kernel
 *            as fast (per-kernel time within min_effect / 2); or it arrives
 *            late with normal phases and no host evidence (below): it
 *            computes longer on a healthy host. A finding for the job's
 *            owner, never a page; rotating between ranks it is data skew;
 *   LINK     transfer time is high against the group, or the whole group's
 *            transfer is high against the other groups of its stage;
 *   HOST     only with host evidence against its peers: it arrives late
 *            while all its phases are normal and its threads were blocked
 *            off-CPU outside collectives (off-CPU time less its waits inside
 *            collectives) above the group median by host_late_frac of the
 *            step and half its lateness or more (I/O, a lock, a sleep); or
 *            its threads wait for a CPU (run-queue time high against the
 *            group) while it arrives late or its compute phase is high and
 *            its own GPU kernels are not (a CPU-starved host: quota, noisy
 *            neighbour), where = DIAG_WHERE_RUNQ.
 */
#ifndef ARGUS_COLLECTOR_DIAG_L2_H
#define ARGUS_COLLECTOR_DIAG_L2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_colls.h"
#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_persist.h"

struct diag_l2_options {
    double z;              /* robust z threshold (5) */
    double min_effect;     /* and value / group median above 1 + this (0.10) */
    double link_ratio;     /* transfer / group median above this (1.3) */
    double group_ratio;    /* group transfer / median of its stage's groups (1.5) */
    double host_late_frac; /* lateness above this fraction of the step (0.05) */
    double offset_alpha;   /* clock offset EWMA weight per step, after a running mean (0.1) */
    double runq_ratio;     /* CPU-starved: run queue / group median above this (1.5), excess
                            * over host_late_frac of the step */
    double abs_floor_ns;   /* MAD floor in ns (20,000) */
    double rel_floor;      /* MAD floor relative to the median (0.01) */
};

struct diag_l2_result {
    uint32_t late_rank;     /* rank with the largest lateness, UINT32_MAX none */
    double late_ns;         /* its lateness (summed over its collectives) */
    double step_median_ns;  /* median step time over ranks */
    uint32_t waiting;       /* ranks with a high phase explained by waiting */
    double job_phase_shift; /* largest job-median phase / its history - 1 */
    int job_phase;          /* that phase, -1 none */
    uint32_t matched;       /* collective calls matched with peers */
};

#define DIAG_L2_JOB_BUSY (-2)
#define DIAG_L2_BUSY_TTL 16 /* steps a kernel busy verdict stands in untraced steps */

struct diag_l2_cand; /* per-rank candidates, private */

struct diag_l2 {
    struct diag_l2_options o;
    struct diag_colls cm; /* collective matching, clock offsets */
    uint32_t cap;
    double *vals, *scratch;
    uint32_t *who;
    uint8_t *busy_last;      /* last traced step: 0 none, 1 normal, 2 high */
    uint32_t *busy_age;      /* steps since */
    double *busy_last_ratio; /* its busy ratio */
    struct diag_l2_cand *cand;
    double phase_hist[DIAG_MAX_PHASES];
    uint32_t phase_hist_n[DIAG_MAX_PHASES];
    double busy_hist;
    uint32_t busy_hist_n;
    double busy_shift; /* last traced step's busy shift */
    bool frozen;       /* analyse without learning (amending an old step) */
};

/* Start with options o (copied; zero fields take the defaults above) and no
 * history; diag_l2_free releases the arrays (l itself is the caller's). */
void diag_l2_init(struct diag_l2 *l, const struct diag_l2_options *o);
void diag_l2_free(struct diag_l2 *l);

/* Forget the phase history (after a job regression was reported). */
void diag_l2_rebase(struct diag_l2 *l);

/* Analyse closed frame f (frozen: without updating offsets, busy verdicts
 * or histories, and with no job shift in *res): fills flags[rank * DIAG_CAUSE_N + cause] (level
 * L2) for ranks [0, f->cap) and *res. Work phases and collectives are
 * compared within the work groups g, expert ones (diag_dict_classify) within
 * the expert groups xg (NULL: everything in g). Returns 0 or -ENOMEM.
 * O(ranks + collective calls). */
int diag_l2_run(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                const struct diag_groups *g, const struct diag_groups *xg, struct diag_flag *flags,
                struct diag_l2_result *res);

/* Current clock offset estimate of rank (ns, relative: only differences
 * between ranks mean anything). */
double diag_l2_offset(const struct diag_l2 *l, uint32_t rank);

#endif
