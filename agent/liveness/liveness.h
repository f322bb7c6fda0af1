/* agent/liveness/: what a rank that makes no progress is doing, and how a
 * rank ended. A hung rank makes no step records, and neither do the ranks
 * waiting for it; a killed one makes none either: without this stage the
 * collector sees only silence.
 *
 * Takes in each rank's collective calls and their ends (the collectives
 * probe), its step records, its process's exit (the proc probe's raw exit
 * status, or "unknown" from a /proc scan) and, on a 1 s tick, /proc for the
 * ranks that stopped progressing (procstate.h); a pid beyond the kernel's
 * range (LIVENESS_PID_LIMIT: a replayed rank) has no /proc, so its statuses
 * say "state unknown" and only its exit event ends it. Gives out argus.v1.RankStatus
 * messages (proto/argus.proto: when each is due is progress.h's rule) to the
 * agent's emit callback, which puts them into the next batch; and an info
 * log line when a rank first stalls and when one ends abnormally.
 *
 *   progress.h   the table of where each rank stands and when a status is due
 *   procstate.h  /proc: state, CPU time, the syscall it is blocked in
 *   liveness.h   (here) the two together, RankStatus out
 *
 * Single-threaded: the agent's main loop. */
#ifndef ARGUS_AGENT_LIVENESS_LIVENESS_H
#define ARGUS_AGENT_LIVENESS_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/liveness/progress.h"
#include "common/clock.h"
#include "proto/argus.pb-c.h"

#define LIVENESS_STACK_MAX 32         /* frames of RankStatus.stack */
#define LIVENESS_PID_LIMIT (1u << 22) /* PID_MAX_LIMIT: no pid the kernel gives is larger */

/* argus_agent_rank_exits_total{how} */
enum liveness_how {
    LIVENESS_EXIT_SIGNAL,  /* a signal ended it */
    LIVENESS_EXIT_ERROR,   /* exit code > 0 */
    LIVENESS_EXIT_CLEAN,   /* exit code 0 */
    LIVENESS_EXIT_UNKNOWN, /* gone, how unknown (no proc probe) */
    LIVENESS_EXIT_COUNT,
};

#define LIVENESS_STATES 7 /* ProcState values, 0 to PROC_STATE_EXITED */

struct liveness_options {
    uint64_t after_ns, interval_ns;   /* status.after, status.interval */
    const struct clock_offset *clock; /* monotonic to UNIX time; outlives */
    /* A status to send (valid during the call: pack or copy it). */
    void (*emit)(void *ctx, const Argus__V1__RankStatus *s);
    /* Optional: pid's last sampled native stack, leaf first, as name ids
     * defined in the batch dictionary; returns how many (<= max). */
    size_t (*stack)(void *ctx, uint32_t pid, uint64_t *ids, size_t max);
    /* Optional: the string of a name id, NULL when unknown (log lines). */
    const char *(*name)(void *ctx, uint64_t id);
    void *ctx;
};

struct liveness_stats {
    uint64_t statuses[LIVENESS_STATES]; /* statuses sent, by RankStatus.state */
    uint64_t exits[LIVENESS_EXIT_COUNT];
    uint64_t read_errors; /* /proc reads that failed but for a process gone */
};

struct liveness;

/* NULL when out of memory. Free with liveness_free (NULL is fine). */
struct liveness *liveness_new(const struct liveness_options *o);
void liveness_free(struct liveness *lv);

/* The launcher's attempt of pid's job (Resource.restart, torchelastic's
 * restart count), for its statuses; a pid not tracked is ignored. */
void liveness_set_restart(struct liveness *lv, uint32_t pid, uint32_t restart);

/* pid is rank of job (copied) in a world of world ranks, from now
 * (monotonic). Returns 0 or -errno (the table is full: it gets no status). */
int liveness_track(struct liveness *lv, uint32_t pid, const char *job, uint32_t rank,
                   uint32_t world, uint64_t now);

/* pid entered a collective (also before it is tracked). */
void liveness_call(struct liveness *lv, uint32_t pid, const struct progress_call *c);

/* pid's call lib_seq on communicator handle finished at done_ns. */
void liveness_done(struct liveness *lv, uint32_t pid, uint64_t handle, int64_t lib_seq,
                   uint64_t done_ns);

/* A step record of pid was made at now. */
void liveness_step(struct liveness *lv, uint32_t pid, uint64_t step, uint64_t now);

/* pid's process ended at at_ns (monotonic): with exit code (0-255), or
 * killed by signal (code -1; core: it dumped core), or code -1 and signal 0
 * when how is unknown (no proc probe: a /proc scan found it gone). A
 * tracked rank's exited status goes out at once; pid is forgotten. Again for
 * a pid already forgotten: nothing. */
void liveness_exit(struct liveness *lv, uint32_t pid, int32_t code, int32_t signal, bool core,
                   uint64_t at_ns);

/* Once a second: sample /proc for the ranks that stopped progressing and
 * send the statuses due at now (monotonic). A rank whose process is gone
 * or a zombie ends as liveness_exit says. */
void liveness_tick(struct liveness *lv, uint64_t now);

void liveness_get_stats(const struct liveness *lv, struct liveness_stats *out);

/* The label of a ProcState ("stopped") and of a how ("signal"). Static. */
const char *liveness_state_name(int state);
const char *liveness_how_name(int how);

#endif
