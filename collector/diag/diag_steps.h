/* The steps of one job that are open (waiting for records) or recently
 * closed (kept so that late records can amend them): which frame a record
 * goes to, which step is ready to close and why, and the memory they take.
 *
 * Steps close in step order, so L1 sees its series in order. The oldest open
 * step closes when every live rank reported it (complete), when the job's
 * watermark passed it (diag_watermark.h), when its timeout after its first
 * record passed, or by force: to stay within the memory budget (max_bytes,
 * counted) or at a flush. Frames live in a ring indexed by step that grows
 * (doubling, up to DIAG_STEPS_MAX_SLOTS) while the open steps span more
 * slots; the number of open steps is bounded by memory, not by a constant.
 * Closed frames stay for amending while the budget allows; under pressure
 * they are freed first, before any open step is forced to close.
 */
#ifndef ARGUS_COLLECTOR_DIAG_STEPS_H
#define ARGUS_COLLECTOR_DIAG_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_frame.h"

#define DIAG_STEPS_NO_FORCE 0      /* force_upto value: close nothing by force */
#define DIAG_STEPS_MAX_SLOTS 16384 /* ring slots at most (steps open or kept at once) */
/* The budget follows the job's ranks: at least this much per rank (about 16
 * open steps and the kept ones at the ~1-2 KB a rank-step frame takes:
 * 1,024 ranks at 10 steps/s held 19 MB), at most DIAG_STEPS_GROWTH times
 * the configured size. */
#define DIAG_STEPS_BYTES_PER_RANK (32u << 10)
#define DIAG_STEPS_GROWTH 4

/* Why a step closed (metrics: argus_diag_steps_closed_total{reason}). */
enum diag_close_reason {
    DIAG_CLOSE_COMPLETE = 0,  /* every live rank reported */
    DIAG_CLOSE_WATERMARK = 1, /* the job's watermark passed it */
    DIAG_CLOSE_TIMEOUT = 2,   /* step_timeout after its first record */
    DIAG_CLOSE_BUDGET = 3,    /* forced: memory budget or ring full */
    DIAG_CLOSE_FLUSH = 4,     /* forced: flush (end of job, tests) */
    DIAG_CLOSE_N = 5,
};

/* diag_steps_slot results. */
enum diag_slot {
    DIAG_SLOT_OPEN = 0, /* *f is the open frame of the step */
    DIAG_SLOT_LATE = 1, /* the step closed: *f its kept frame, or NULL when gone */
    DIAG_SLOT_FULL = 2, /* no room: close the oldest open step, then call again */
};

struct diag_steps {
    struct diag_frame *frames; /* n slots, step % n */
    uint32_t n;                /* a power of two */
    uint32_t ranks;            /* frames get room for ranks [0, ranks) when opened */
    uint32_t keep;             /* closed steps kept for amending (horizon) */
    size_t max_bytes;          /* budget for all frames, open and kept: base_bytes, or
                                * DIAG_STEPS_BYTES_PER_RANK x ranks when more, at most
                                * DIAG_STEPS_GROWTH x base_bytes */
    size_t base_bytes;         /* the configured budget */
    uint32_t open;             /* open frames */
    bool started;
    uint64_t first;  /* the first step opened (diagnosis of the job began there) */
    uint64_t next;   /* lowest step not closed yet */
    uint64_t newest; /* highest step opened */
};

/* An empty window: max_bytes of frames (0: 256 MiB; more as ranks are
 * reserved, see max_bytes), keep closed steps for amending. Returns 0 or
 * -ENOMEM. */
int diag_steps_init(struct diag_steps *w, size_t max_bytes, uint32_t keep);
void diag_steps_free(struct diag_steps *w);

/* Room for ranks [0, ranks) in the frames in use (open and kept) and in every
 * frame opened from now on; the budget grows with them. 0 or -ENOMEM. */
int diag_steps_reserve(struct diag_steps *w, uint32_t ranks);

/* Where a record of `step` goes (enum diag_slot). A new step's frame starts
 * at now_ns. The first record seen sets the first step. Steps before
 * next - keep are LATE with *f = NULL. Returns a diag_slot or -ENOMEM. */
int diag_steps_slot(struct diag_steps *w, uint64_t step, uint64_t now_ns, struct diag_frame **f);

/* The oldest open step if it can close now, with *reason: every one of
 * expect ranks reported (expect > 0), its step is below mark (the
 * watermark: every live rank delivered it), its timeout passed, or its step
 * is below force_upto (reason force_reason; DIAG_STEPS_NO_FORCE for none,
 * UINT64_MAX for all). NULL when nothing can close. */
struct diag_frame *diag_steps_ready(struct diag_steps *w, uint64_t now_ns, uint32_t expect,
                                    uint64_t mark, uint64_t timeout_ns, uint64_t force_upto,
                                    enum diag_close_reason force_reason,
                                    enum diag_close_reason *reason);

/* Why a record of a closed step found no kept frame: 0 the frame was freed
 * (memory), 1 the step closed more than keep steps ago (horizon), 2 the
 * step is before the first one diagnosed (it began later: not shed). */
int diag_steps_gone_why(const struct diag_steps *w, uint64_t step);

/* The oldest open frame, NULL when none. */
struct diag_frame *diag_steps_oldest(struct diag_steps *w);

/* f (from diag_steps_ready) was analysed as the close_seq-th closed step: it
 * is kept for amending (keep > 0) or freed. */
void diag_steps_closed(struct diag_steps *w, struct diag_frame *f, uint64_t close_seq);

/* Heap bytes of all frames (open and kept). O(slots). */
size_t diag_steps_bytes(const struct diag_steps *w);

#endif
