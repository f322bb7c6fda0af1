/* The window of open steps of one job: which step a record goes to, and
 * which step is ready to close (complete, timed out, or forced to make
 * room). Steps close in step order, so L1 sees its series in order.
 */
#ifndef ARGUS_COLLECTOR_DIAG_STEPS_H
#define ARGUS_COLLECTOR_DIAG_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_frame.h"

#define DIAG_STEPS_NO_FORCE 0 /* force_upto value: close nothing by force */

struct diag_steps {
    struct diag_frame *frames; /* n slots, step % n */
    uint32_t n;
    bool started;
    uint64_t next; /* lowest step not closed yet */
};

/* n open steps at most (2..64). Returns 0 or -ENOMEM. */
int diag_steps_init(struct diag_steps *w, uint32_t n);
void diag_steps_free(struct diag_steps *w);

/* Room for ranks [0, ranks) in every frame. 0 or -ENOMEM. */
int diag_steps_reserve(struct diag_steps *w, uint32_t ranks);

/* Where a record of `step` goes. Returns 0 and *f (a frame started at now_ns
 * if it is the step's first record), 1 when the step already closed (late),
 * or 2 when the step lies beyond the window: close the steps up to
 * step - n first (force_upto), then call again. The first record seen sets
 * the first step. */
int diag_steps_slot(struct diag_steps *w, uint64_t step, uint64_t now_ns, struct diag_frame **f);

/* The oldest open step if it can close now: every expected rank reported
 * (expect > 0), its timeout passed, or step + 1 <= force_upto (pass
 * DIAG_STEPS_NO_FORCE for none, UINT64_MAX for all). Steps that nobody
 * reported are skipped when a later one is open. *complete says whether all
 * expected ranks reported. NULL when nothing can close. */
struct diag_frame *diag_steps_ready(struct diag_steps *w, uint64_t now_ns, uint32_t expect,
                                    uint64_t timeout_ns, uint64_t force_upto, bool *complete);

/* f (from diag_steps_ready) was analysed: free its slot. */
void diag_steps_closed(struct diag_steps *w, struct diag_frame *f);

#endif
