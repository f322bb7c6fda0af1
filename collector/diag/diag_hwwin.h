/* Each rank's hardware counters over the persistence window (docs/design.md
 * section 7, Hardware evidence): it takes in closed frames (the per-rank
 * struct diag_hw_step that diag_frame_add_record extracted from
 * StepRecord.hw) and gives out, for one rank against the other present
 * members of its peer group, a struct diag_hw_evidence (diag_hw.h): steps
 * with hw, throttled steps and their dominant reason, mean SM clock and
 * temperature, the last XID, and window totals of the error counters, each
 * with the peers' median. diag_rankwin.h keeps one next to its own slots;
 * reports read it through diag_rankwin_get.
 *
 * Memory: 16 bytes per rank and window step, and 16 per rank (its last
 * XID). Amended (late) steps are not recorded, as in diag_rankwin.h.
 */
#ifndef ARGUS_COLLECTOR_DIAG_HWWIN_H
#define ARGUS_COLLECTOR_DIAG_HWWIN_H

#include <stdint.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_hw.h"

/* Per rank: its last XID, and the last verdict on its GPU. */
struct diag_hwwin_xid {
    uint64_t step;      /* the step of the rank's last XID */
    uint32_t code;      /* its code (0: none seen) */
    uint32_t throttled; /* diag_hw_throttled at its last diag_hwwin_get */
};

struct diag_hwwin {
    uint32_t window;            /* steps kept, 1..64 */
    uint32_t cap;               /* ranks */
    uint32_t head;              /* slot of the newest step */
    struct diag_hw_step *slots; /* cap * window */
    struct diag_hwwin_xid *xid; /* cap */
    double *scratch;            /* (3 + DIAG_HW_N_COUNTERS) * scratch_n */
    uint32_t scratch_n;
};

/* Keep window steps (clamped to 1..64). */
void diag_hwwin_init(struct diag_hwwin *w, uint32_t window);
/* Free the arrays; w is empty again (same window). */
void diag_hwwin_free(struct diag_hwwin *w);

/* Room for ranks [0, cap). 0 or -ENOMEM. */
int diag_hwwin_reserve(struct diag_hwwin *w, uint32_t cap);

/* Record closed frame f for ranks [0, w->cap): an absent rank's slot is
 * empty (no hw). O(ranks). */
void diag_hwwin_step(struct diag_hwwin *w, const struct diag_frame *f);

/* Evidence of rank over the window against the members (n of them; rank
 * itself and members without hw steps are left out of the peers; NULL:
 * none). *out is zeroed first: all zero when the rank had no hw.
 * out->was_throttled is the verdict of the rank's previous call, and this
 * call's verdict (diag_hw_throttled) is kept for its next. 0, or -ENOMEM.
 * O(window * n). */
int diag_hwwin_get(struct diag_hwwin *w, uint32_t rank, const uint32_t *members, uint32_t n,
                   struct diag_hw_evidence *out);

#endif
