/* L3, kernels (docs/design.md section 7).
 *
 * Each rank's duration distribution per (kernel, stream) is rebuilt from its
 * KDE clusters (common/clusters.h: one log-normal per cluster, median p50,
 * sigma from p99) and kept as a quantile function on a fixed grid, which
 * diag_frame_add_record extracts. A
 * rank's score is the Wasserstein-1 distance from its quantile function to
 * its peer group's pointwise-median quantile function, relative to the
 * reference mean, flagged by a robust fence over the group: O(ranks) per
 * kernel. Group references are compared with each other (a whole degraded
 * group must not hide inside itself) and the job reference with the job's
 * own history (an everyone-slower regression).
 */
#ifndef ARGUS_COLLECTOR_DIAG_L3_H
#define ARGUS_COLLECTOR_DIAG_L3_H

#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_persist.h"
#include "proto/argus.pb-c.h"

struct diag_l3_options {
    double fence_k;       /* rank fence: median + k * MAD of scores (10) */
    double min_rel;       /* and W1 / reference mean above this (0.15) */
    double group_min_rel; /* group vs groups of its stage (0.25) */
    double job_min_rel;   /* job vs its history (0.10) */
    double history_alpha; /* EWMA weight of the history reference (0.05) */
    uint32_t warmup;      /* steps before the history is trusted (10) */
};

struct diag_l3_result {
    double job_shift; /* largest W1(job reference, history) / history mean */
    int job_kernel;   /* its kernel index, -1 none */
    uint32_t rank_flags;
    uint32_t group_flags;
};

struct diag_l3 {
    struct diag_l3_options o;
    float hist[DIAG_MAX_KERNELS][DIAG_QGRID];
    uint32_t hist_n[DIAG_MAX_KERNELS];
    const float **qs; /* scratch: member quantile functions */
    uint32_t *who;    /* scratch: their ranks */
    double *scratch;  /* scratch doubles */
    double *scores;   /* scratch: per member score */
    float *group_ref; /* n_groups * DIAG_QGRID */
    size_t cap, group_cap;
    bool frozen; /* analyse without learning (amending an old step) */
};

/* Start with options o (copied; zero fields take the defaults above) and no
 * history; diag_l3_free releases the scratch arrays. */
void diag_l3_init(struct diag_l3 *l, const struct diag_l3_options *o);
void diag_l3_free(struct diag_l3 *l);

/* Forget the history (after a job regression was reported). */
void diag_l3_rebase(struct diag_l3 *l);

/* Score the kernels of closed frame f. Sets flags[rank * DIAG_CAUSE_N +
 * DIAG_CAUSE_COMPUTE] (level L3) where L2 left it unset. Collective-stream
 * kernels are skipped: their duration includes waiting for peers, which L2
 * separates. Returns 0 or -ENOMEM. O(ranks * kernels * grid). */
int diag_l3_run(struct diag_l3 *l, const struct diag_frame *f, const struct diag_dict *d,
                const struct diag_groups *g, struct diag_flag *flags, struct diag_l3_result *res);

#endif
