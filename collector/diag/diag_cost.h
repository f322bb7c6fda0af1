/* What a job's suspects cost it (issue 29; docs/design.md section 7, Cost).
 *
 * The what-if: a synchronous job's step lasts as long as its slowest rank's
 * own work, since every other rank waits for it inside the collectives. Per
 * closed step each rank's own time is its step time less its waits inside
 * collectives for the last member (diag_colls.h), and its reference is the
 * median own time of the other present members of its peer group (the job's
 * median when it has none). The time a set S of suspects cost a step is
 *     max over ranks of own  -  max over ranks of own'
 * where own' is own with each rank of S brought down to its reference: the
 * step the job would have made had S run like their peers. Summed over a
 * report's steps, times the ranks present in each step (one GPU per rank:
 * Resource.gpu is one device, and a CPU rank counts as one) / 3600: GPU-hours.
 *
 * A report is re-issued while its suspects stay slow (periodic reports,
 * late records amending a window); each step of a rank is costed once: a
 * suspect's report covers its window's steps after those its rank's
 * previous report covered, and the same report again (same last step) the
 * same steps, so that summing the reports of a job (argusctl cost, the
 * /metrics counter) counts each lost second once.
 *
 * Memory: the last DIAG_COST_STEPS closed steps, 8 bytes per rank each.
 * Not thread-safe: one per engine.
 */
#ifndef ARGUS_COLLECTOR_DIAG_COST_H
#define ARGUS_COLLECTOR_DIAG_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "proto/argus.pb-c.h"

#define DIAG_COST_STEPS 64 /* closed steps kept: the longest diag.window */

/* One closed step: own time and reference of each rank, ns (own < 0:
 * the rank has no record of the step). */
struct diag_cost_step {
    uint64_t step; /* UINT64_MAX: slot unused */
    uint32_t n;    /* ranks with a record */
    float *own, *ref;
};

struct diag_cost {
    uint32_t cap; /* ranks the arrays hold */
    struct diag_cost_step ring[DIAG_COST_STEPS];
    uint64_t *from, *to; /* per rank: steps its last costed report covered (to 0: none) */
    bool *fix;           /* scratch: ranks of the set being costed */
    double *scratch;     /* scratch: a group's own times */
};

/* The what-if of one step (pure): own[i] < 0 are absent ranks; fix[i] the
 * ranks brought down to ref[i] (a rank already at or under it stays).
 * Returns the ns the step would have been shorter, >= 0. O(n). */
double diag_cost_whatif(const float *own, const float *ref, const bool *fix, uint32_t n);

/* An empty cost tracker (c zeroed by the caller). */
void diag_cost_init(struct diag_cost *c);

/* Free its arrays; c stays valid and empty. */
void diag_cost_free(struct diag_cost *c);

/* Note the closed step f: each present rank's own time (duration less
 * wait[rank], the waits L2 just measured, wait_n of them) and its
 * reference from its group in g. Returns 0 or -ENOMEM (the step is then not
 * costed). O(ranks log ranks). */
int diag_cost_note_step(struct diag_cost *c, const struct diag_frame *f, const double *wait,
                        uint32_t wait_n, const struct diag_groups *g);

/* Rank's slowdown over the kept steps of the window steps up to to_step:
 * the sum of its own times over the sum of its references (1.0: as fast as
 * its peers); 0 when it has no record there. O(window). */
double diag_cost_slowdown(const struct diag_cost *c, uint32_t rank, uint64_t to_step,
                          uint32_t window);

/* Fill rep's Report.seconds_lost, gpu_hours_lost, each rank suspect's
 * slowdown (diag_cost_slowdown over the whole window) and
 * gpu_hours_lost over the steps window steps up to to_step that are kept
 * (see above for steps already costed). Job-level suspects and ranks
 * without records stay 0. Returns 0 or -ENOMEM. O(window * (ranks +
 * suspects)). */
int diag_cost_report(struct diag_cost *c, Argus__V1__Report *rep, uint64_t to_step,
                     uint32_t window);

#endif
