/* Liveness of one job (docs/design.md section 7, Liveness): what its ranks'
 * agents say when a rank makes no progress or ends (argus.v1.RankStatus),
 * turned into the job's state and at most one report per event.
 *
 * Takes in each rank's statuses (the latest is kept, with its receive time)
 * and its step records (the communicators they used; a record of a step
 * past the status' last step means the rank moved on, and its status is
 * dropped). Gives out, at each check:
 *   - a hang (diag_hang.h) past the bound max(hang_after, 10 x the job's
 *     median step time): one report, cause HANG at LEVEL_LIVENESS (pages),
 *     naming only the ranks that never entered the collective, with what
 *     each is doing (process state, syscall, CPU, native stack, last step);
 *     the job is HUNG until the finder no longer sees that hang (the
 *     collective completed, a status says moving, records past it);
 *   - a death: a status with exited and a signal or an exit code other
 *     than 0, after grace of receive time (to hear from the other nodes);
 *     or an unknown code (-1) once another rank's data (a record, a status)
 *     shows the job went on for hang_after past that end, by the agents'
 *     clocks (an outage's catch-up delivers ends out of order); one report, cause
 *     EXITED, naming the first rank to end abnormally by exit time, the
 *     others that ended after it in its summary and evidence only. The job
 *     is FAILED and nothing else of this epoch is reported
 *     (diag_live_failed);
 *   - every rank seen ended cleanly: ENDED, no report.
 * A restart of the job (a new epoch) is the caller's: it starts a new
 * diag_live. Not thread-safe; O(ranks x DIAG_LIVE_COMMS) per check.
 */
#ifndef ARGUS_COLLECTOR_DIAG_LIVE_H
#define ARGUS_COLLECTOR_DIAG_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_hang.h"
#include "collector/diag/diag_silence.h"
#include "proto/argus.pb-c.h"

/* A name id to text for evidence; NULL when unknown. */
typedef const char *(*diag_live_name_fn)(void *ctx, uint64_t name_id);

struct diag_live {
    uint64_t hang_after_ns; /* the bound's floor (diag.hang_after) */
    uint64_t grace_ns;      /* wait after the first death before reporting it */
    struct diag_live_rank *ranks;
    uint32_t cap;
    int state;        /* Argus__V1__JobState */
    char reason[200]; /* one line for JobInfo.state_reason */
    bool hung;        /* hang is reported and still there */
    struct diag_hang hang;
    bool death_pending; /* an abnormal exit waits for its grace */
    uint64_t death_recv_ns;
    bool failed; /* a death was reported: the epoch says nothing more */
    uint64_t statuses, hangs, deaths, rejected; /* counters */
};

/* An empty liveness state. hang_after_ns 0: 30 s; grace_ns 0: 2 s. */
void diag_live_init(struct diag_live *l, uint64_t hang_after_ns, uint64_t grace_ns);

/* Free its memory (l stays usable after diag_live_init again). */
void diag_live_free(struct diag_live *l);

/* Room for ranks below cap. 0 or -ENOMEM. */
int diag_live_reserve(struct diag_live *l, uint32_t cap);

/* The rank of slot (its index here, below the reserved cap: the engine's
 * slot of it, diag_slots.h) exists: a resource of it came. */
void diag_live_note_rank(struct diag_live *l, uint32_t slot);

/* A step record s of the rank of slot (below the reserved cap): its
 * communicators, and its status dropped when the record is of a later step. */
void diag_live_note_step(struct diag_live *l, uint32_t slot, const Argus__V1__StepRecord *s);

/* Keep s (the caller's) as the latest status of the rank of slot (below
 * the reserved cap), received at recv_ns. Returns 0 (-ERANGE past the cap). */
int diag_live_status(struct diag_live *l, uint32_t slot, const Argus__V1__RankStatus *s,
                     uint64_t recv_ns);

/* What the check needs besides the state: the job's median step time (0:
 * none yet), where a rank runs, names of operations and frames. */
struct diag_live_ctx {
    uint64_t step_p50_ns;
    const struct diag_slots *slots; /* the rank numbers of l's indexes (NULL: the same) */
    diag_silence_where_fn where;    /* by index */
    void *where_ctx;
    diag_live_name_fn name;
    void *name_ctx;
};

/* Check at receive time now_ns: a new hang or death adds its suspect to
 * rep and sets rep's summary; a hang gone or the job ended changes the
 * state. Returns 1 when rep got a finding, 0 when not, -ENOMEM. */
int diag_live_check(struct diag_live *l, uint64_t now_ns, const struct diag_live_ctx *c,
                    Argus__V1__Report *rep);

/* A death was reported: the epoch's other findings are about its
 * consequences and are not reported. */
bool diag_live_failed(const struct diag_live *l);

/* The job's state (Argus__V1__JobState) and its one-line reason ("" when
 * none; valid until the next call on l). */
int diag_live_state(const struct diag_live *l, const char **reason);

#endif
