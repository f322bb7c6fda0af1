/* Late records (docs/design.md section 7): a step that closed without some ranks
 * (their stream was stalled past the hold, an agent replayed its spool after
 * an outage) is amended when their records arrive within the horizon. The
 * kept frame takes the records (diag_steps.h keeps closed frames while the
 * memory budget allows) and is analysed again, frozen (no offsets, verdicts
 * or histories learned from an old step), and only the late ranks' findings
 * go into their persistence history at that step's place: a replayed
 * straggler is still found, and the ranks that were analysed on time are
 * not judged twice.
 */
#ifndef ARGUS_COLLECTOR_DIAG_AMEND_H
#define ARGUS_COLLECTOR_DIAG_AMEND_H

#include <stdint.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_l2.h"
#include "collector/diag/diag_l3.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_steps.h"

/* The engine's parts an amendment uses (all the caller's). */
struct diag_amend {
    struct diag_l2 *l2;
    struct diag_l3 *l3;
    struct diag_dict *dict;
    const struct diag_groups *groups, *xgroups;
    const struct diag_coord *coords;
    uint32_t cap;            /* ranks of coords and flags */
    struct diag_flag *flags; /* scratch, cap * DIAG_CAUSE_N */
    struct diag_persist *persist;
    diag_dict_name_fn name;
    void *name_ctx;
};

/* Analyse closed frame f again for its late ranks (f->amend) and put their
 * findings into the persistence history age closed steps back (0 = the
 * newest closed step). Clears f->amend. Returns the number of ranks amended
 * (0 when age is beyond the persistence window) or -ENOMEM. O(one close). */
int diag_amend_frame(const struct diag_amend *a, struct diag_frame *f, uint32_t age);

/* Amend every kept closed frame of win that got late records, steps_closed
 * being the number of steps closed so far (a frame's age is counted from
 * it). The late ranks of a frame beyond the persistence window are not
 * analysed: their number is added to *beyond (the caller counts them as
 * dropped past the horizon rather than amended). Returns 0 or -ENOMEM
 * (frames before the failing one stay amended). */
int diag_amend_window(const struct diag_amend *a, struct diag_steps *win, uint64_t steps_closed,
                      uint64_t *beyond);

#endif
