/* Per-rank evidence over the persistence window (DESIGN.md section 7,
 * reports): for each of the last N closed steps, how many matched collective
 * calls the rank took part in, at how many it arrived last (and how many it
 * would by chance), the median gap between the first and its arrival there,
 * and its host counters (run-queue and off-CPU time). Reports read it back
 * as "arrived last at 41 of 50 collectives (12 expected by chance), median
 * 310 ms after the first; run queue 905 ms/step vs 320 ms group median".
 *
 * Memory: 24 bytes per rank and window step. Amended (late) steps are not
 * recorded: the window holds what each step said when it closed.
 */
#ifndef ARGUS_COLLECTOR_DIAG_RANKWIN_H
#define ARGUS_COLLECTOR_DIAG_RANKWIN_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_colls.h"
#include "collector/diag/diag_frame.h"

struct diag_rankwin_slot;

struct diag_rankwin {
    uint32_t window;                 /* steps kept, 1..64 */
    uint32_t cap;                    /* ranks */
    uint32_t head;                   /* slot of the newest step */
    uint32_t steps;                  /* steps recorded, saturating at window */
    struct diag_rankwin_slot *slots; /* cap * window */
    double *scratch;                 /* 2 * window, and per-rank means */
    uint32_t scratch_cap;
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
};

/* Keep window steps (clamped to 1..64). */
void diag_rankwin_init(struct diag_rankwin *w, uint32_t window);
void diag_rankwin_free(struct diag_rankwin *w);

/* Room for ranks [0, cap). 0 or -ENOMEM. */
int diag_rankwin_reserve(struct diag_rankwin *w, uint32_t cap);

/* Record closed frame f, whose collectives c matched (diag_colls_run on f),
 * for ranks [0, min(f->cap, w->cap)). O(ranks). */
void diag_rankwin_step(struct diag_rankwin *w, const struct diag_frame *f,
                       const struct diag_colls *c);

/* Evidence of rank over the window, host counters compared with the present
 * members (n of them) of its group (NULL: no group median). 0, or -ENOMEM
 * (out is zeroed then). O(window * n). */
int diag_rankwin_get(struct diag_rankwin *w, uint32_t rank, const uint32_t *members, uint32_t n,
                     struct diag_rank_evidence *out);

#endif
