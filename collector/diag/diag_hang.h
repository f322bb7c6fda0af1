/* Hangs (docs/design.md section 7, Liveness): a job that waits inside a
 * collective that one of its ranks never entered.
 *
 * Input is each rank's latest liveness status (argus.v1.RankStatus, kept by
 * diag_live.h as struct diag_live_rank) and the communicators each rank was
 * seen using in its step records. The job is hung at collective k of
 * communicator g when:
 *   - some ranks (the waiters) are inside k on g (entered k, finished
 *     less) and have been for at least the bound: the sampled wait
 *     (at - entered) plus the receive time since the status came;
 *   - one or more members of g (ranks with progress on g in a status, or
 *     seen using g in step records) have not entered k: their entered
 *     sequence on g is below k (when the numbers are the agent's own,
 *     seq_local: they are not inside any call on g), and they are not
 *     waiting inside a call on another communicator themselves (then they
 *     are a link of a chain of waits, whose end is named where it waits).
 *     Those are the suspects. Members with no status at all are named ("no status from
 *     it") only when no member with a status is behind, and when they are
 *     fewer than half of the members (a node whose agent sends no statuses
 *     is not a hang).
 * When every member is inside k (a rank stopped or blocked after it
 * entered: with asynchronous collectives it enqueued k before it stopped),
 * the members whose process cannot run (stopped by a signal or a tracer,
 * or in an uninterruptible wait) while the others wait are the suspects
 * (stuck), when they are at most half of the members.
 * Not hung: every rank outside collectives (a checkpoint, an eval loop,
 * data loading: no waiter), or every member inside k with none that cannot
 * run (a slow collective: a link finding of L2, not a hang). A rank whose process exited is never
 * a suspect here (diag_live.h reports deaths). Pure: no allocation beyond
 * the caller's buffers, O(ranks x DIAG_LIVE_COMMS) per call.
 */
#ifndef ARGUS_COLLECTOR_DIAG_HANG_H
#define ARGUS_COLLECTOR_DIAG_HANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIAG_LIVE_COMMS 8  /* communicators kept per rank (more are not tracked) */
#define DIAG_LIVE_STACK 6  /* native frames kept per status, leaf first */
#define DIAG_HANG_NAMED 16 /* suspects named per hang (more are counted) */

/* One rank's progress in one communicator, from its status. */
struct diag_live_comm {
    uint64_t comm_id;
    uint64_t entered_seq, entered_ns; /* agent clock */
    uint64_t name_id;                 /* the entered call's operation */
    uint64_t done_seq, done_ns;       /* done_ns 0: none finished */
    bool seq_local;
};

/* What diagnosis keeps of one rank for liveness. */
struct diag_live_rank {
    bool seen;        /* any record, resource or status of it */
    uint64_t used[4]; /* comm ids seen in its step records */
    uint8_t n_used;
    bool has_record_step; /* newest step record's step */
    uint64_t record_step;
    uint64_t data_ns;        /* agent clock: its newest record's end or status */
    bool has_status;         /* the fields below are its latest status */
    uint64_t recv_ns, at_ns; /* collector receive time, agent sample time */
    uint32_t pid, cpu_permille;
    int state; /* Argus__V1__ProcState */
    char wait[32];
    struct diag_live_comm comms[DIAG_LIVE_COMMS];
    uint8_t n_comms;
    uint64_t stack[DIAG_LIVE_STACK];
    uint8_t n_stack;
    bool has_step;
    uint64_t last_step;
    bool moving; /* it made progress since the last status */
    bool exited, core_dumped;
    uint64_t exit_ns;
    int32_t exit_code, exit_signal;
};

/* A hang found: collective seq of comm, its waiters and suspects. */
struct diag_hang {
    uint64_t comm_id, seq, name_id;
    bool seq_local;
    uint64_t since_ns; /* agent clock: the earliest waiter entered */
    uint64_t wait_ns;  /* the longest wait, extrapolated to now */
    uint32_t waiters;  /* ranks inside it */
    uint32_t first_waiter;
    uint32_t members; /* ranks of the communicator */
    uint32_t suspects[DIAG_HANG_NAMED];
    uint32_t n_suspects, more_suspects;
    bool no_status; /* the suspects sent no status (named from step records) */
    bool stuck;     /* the suspects entered the call too, and their processes cannot run */
};

/* Find a hang among ranks[0..n) at receive time now_ns with the bound
 * bound_ns. When several communicators hang, the one waited in longest.
 * Returns true and fills *out, or false (not hung). */
bool diag_hang_find(const struct diag_live_rank *ranks, uint32_t n, uint64_t now_ns,
                    uint64_t bound_ns, struct diag_hang *out);

/* The progress of r in comm_id, or NULL when its status has none. */
const struct diag_live_comm *diag_hang_comm(const struct diag_live_rank *r, uint64_t comm_id);

/* True when r is inside a call on c: it entered a higher sequence number
 * than it finished (or entered one and finished none the agent saw). */
bool diag_hang_inside(const struct diag_live_comm *c);

/* True when r is inside h's call (a waiter, or a stuck suspect). */
bool diag_hang_waits(const struct diag_live_rank *r, const struct diag_hang *h);

#endif
