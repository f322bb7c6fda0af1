/* Per-rank evidence over the persistence window (docs/design.md section 7,
 * reports): for each of the last N closed steps, how many matched collective
 * calls the rank took part in, at how many it arrived last (and how many it
 * would by chance), the median gap between the first and its arrival there,
 * and its host counters (run-queue and off-CPU time). Reports read it back
 * as "arrived last at 41 of 50 collectives (12 expected by chance), median
 * 310 ms after the first; run queue 905 ms/step vs 320 ms group median".
 *
 * The window rule (diag_rankwin_flag) finds from it what one step cannot
 * show: in data parallelism every rank's step takes as long as the slowest
 * one's (they wait for it inside the collectives), so a rank slowed from
 * outside (a CPU quota, a noisy neighbour) looks normal step by step, and
 * its lateness at one step is within the noise of a busy machine. Over the
 * last few steps it shows plainly: that rank arrives last at most
 * collectives, well after the first, and its threads wait for a CPU far
 * longer than its peers'.
 *
 * Next to its slots it keeps the ranks' hardware counters (diag_hwwin.h),
 * stepped, grown and read with them: a report's evidence carries both.
 *
 * Memory: 28 bytes per rank and window step, 16 more for the hardware
 * counters (diag_hwwin.h: 44 in all) and 16 per rank. Amended (late) steps are not
 * recorded: the window holds what each step said when it closed.
 */
#ifndef ARGUS_COLLECTOR_DIAG_RANKWIN_H
#define ARGUS_COLLECTOR_DIAG_RANKWIN_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_colls.h"
#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_hwwin.h"
#include "collector/diag/diag_persist.h"

struct diag_rankwin_slot;

/* The window rule's thresholds (zero fields: the defaults). */
struct diag_rankwin_rule {
    uint32_t recent;      /* newest steps looked at (8) */
    uint32_t min_calls;   /* matched calls the rank took part in over them (6) */
    double last_frac;     /* arrived last at this share of them or more (0.6), and at twice
                           * what chance gives */
    double gap_frac;      /* median last-minus-first gap there, and the run-queue excess over
                           * the group median, above this share of the step time (0.05) */
    double runq_ratio;    /* mean run-queue time / the group median of members' means (1.5) */
    double busy_ratio_ok; /* a compute flag whose own kernel time is at most this / group
                           * median is the starvation's, not slow compute (1.05) */
};

struct diag_rankwin_recent;

struct diag_rankwin {
    struct diag_rankwin_rule rule;
    uint32_t window;                    /* steps kept, 1..64 */
    uint32_t cap;                       /* ranks */
    uint32_t head;                      /* slot of the newest step */
    uint32_t steps;                     /* steps recorded, saturating at window */
    struct diag_rankwin_slot *slots;    /* cap * window */
    double *scratch;                    /* 2 * window, and per-rank means */
    struct diag_rankwin_recent *recent; /* scratch_cap / 2: a group's members' sums */
    uint32_t scratch_cap;
    struct diag_hwwin hw; /* the ranks' hardware counters over the same steps */
};

/* What a report says about one rank over the window. */
struct diag_rank_evidence {
    uint32_t steps;      /* window steps in which the rank reported */
    uint32_t part, last; /* matched calls, calls it arrived last at */
    double chance;       /* calls it would arrive last at by chance */
    double gap_ns;       /* median last-minus-first arrival where it was last */
    double runq_ns;      /* mean run-queue time per step */
    double runq_median;  /* median over the group of the members' means */
    double off_cpu_ns;   /* mean off-CPU time per step */
    double off_cpu_median;
    struct diag_hw_evidence hw; /* its GPU's and NICs' counters vs its peers' (no hw: zero) */
};

/* Keep window steps (clamped to 1..64), the rule's defaults. */
void diag_rankwin_init(struct diag_rankwin *w, uint32_t window);
void diag_rankwin_free(struct diag_rankwin *w);

/* Room for ranks [0, cap). 0 or -ENOMEM. */
int diag_rankwin_reserve(struct diag_rankwin *w, uint32_t cap);

/* Record closed frame f, whose collectives c matched (diag_colls_run on f),
 * for ranks [0, min(f->cap, w->cap)). O(ranks). */
void diag_rankwin_step(struct diag_rankwin *w, const struct diag_frame *f,
                       const struct diag_colls *c);

/* Evidence of rank over the window, host counters compared with the present
 * members (n of them) of its group (NULL: no group median), hardware
 * counters with the other members' (diag_hwwin_get). 0, or -ENOMEM (out is
 * zeroed then). O(window * n). */
int diag_rankwin_get(struct diag_rankwin *w, uint32_t rank, const uint32_t *members, uint32_t n,
                     struct diag_rank_evidence *out);

/* The window rule, after diag_rankwin_step of a closed step: a rank of a
 * work group g with 3 or more members reporting, that over the newest
 * rule.recent steps
 *   - arrived last at rule.last_frac or more of its matched collective calls
 *     (at least rule.min_calls) and at twice what chance gives,
 *   - a median of rule.gap_frac of its mean step time or more after the
 *     first member, and
 *   - spent rule.runq_ratio times the group median of run-queue time per
 *     step or more, the excess above rule.gap_frac of its step time,
 * is a CPU-starved host at this step: flags[rank * DIAG_CAUSE_N +
 * DIAG_CAUSE_HOST] is set (level L2, where DIAG_WHERE_RUNQ, value its mean
 * run-queue time, median the group's, score the robust z of its mean among
 * the members', aux its mean off-CPU time) unless already set, and a
 * compute flag of that rank whose own kernels were not slow (no kernel
 * data, or at most rule.busy_ratio_ok of the group) is cleared: the
 * starvation made that phase long. Persistence (M of N) then pages as for
 * any per-step flag; the earlier of those steps at which the rank arrived
 * last at half its calls or more, by rule.gap_frac of its step, are set in
 * p too (diag_persist_amend; p holds the steps before this one, NULL: not
 * done), since the rule needs a few steps to see what was there from the
 * first. Slowness that moves from rank to rank never makes one rank last
 * at most calls. flags has room for ranks [0, n). Returns the number of
 * ranks flagged, or -ENOMEM. O(ranks * rule.recent). */
int diag_rankwin_flag(struct diag_rankwin *w, const struct diag_groups *g, struct diag_flag *flags,
                      uint32_t n, struct diag_persist *p);

#endif
