/* The progress table: per rank (pid) and communicator, the highest
 * collective it entered and finished, its last step record and when it
 * last made progress; and the rule of when a RankStatus is due
 * (proto/argus.proto RankStatus): none while the rank progresses, the
 * first after `after` without progress, then one every `interval` while
 * that lasts, one more (moving) when it progresses again.
 *
 * Sequence numbers are those the step records carry (Collective.seq,
 * agent/steps/stepinfer.c): the library's (gloo's tag) when it gave one,
 * else one more than the communicator's last call; per process-local
 * communicator handle, reported with its shared id (Collective.comm_id).
 * Calls of a pid not tracked yet (a process whose rank discovery learns from
 * the communicator it makes) are counted too, so the numbers agree with the
 * step records from its first call.
 *
 * Pure: times are passed in (monotonic ns), no I/O. Single-threaded. */
#ifndef ARGUS_AGENT_LIVENESS_PROGRESS_H
#define ARGUS_AGENT_LIVENESS_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROGRESS_MAX_COMMS 16   /* communicators per rank; more share the last slot */
#define PROGRESS_MAX_RANKS 4096 /* processes the table holds; calls of more are ignored */
#define PROGRESS_JOB_MAX 256

struct progress_options {
    uint64_t after_ns;    /* status.after: no progress this long makes the first status */
    uint64_t interval_ns; /* status.interval: then one every this long */
};

/* Where a rank stands in one communicator. */
struct progress_comm {
    uint64_t handle;     /* the process-local communicator of its calls */
    uint64_t group;      /* its shared id (Collective.comm_id), 0 when unknown */
    int64_t last_seq;    /* the number of its last call, -1 before the first */
    bool entered;        /* entered_* are set */
    bool entered_shared; /* that call's number was the library's */
    uint64_t entered_seq, entered_ns, name_id;
    bool done; /* done_* are set */
    uint64_t done_seq, done_ns;
};

struct progress_rank {
    uint32_t pid;
    bool tracked; /* a rank (progress_track): job, rank and world are set */
    char job[PROGRESS_JOB_MAX];
    uint32_t rank, world;
    uint32_t restart; /* the launcher's attempt (Resource.restart) */
    bool has_step;
    uint64_t last_step;
    uint64_t last_call_ns;  /* its last collective entered or finished, 0 none */
    uint64_t progress_ns;   /* its last progress (call, end, step) or when tracked */
    uint64_t progress_seen; /* progress reported so far (a count) */
    bool stalled;           /* statuses went out since it last progressed */
    uint64_t status_ns;     /* when the last of them went out */
    uint64_t status_seen;   /* progress_seen then */
    uint64_t cpu_ticks,
        cpu_ns; /* the last /proc sample of its CPU time (liveness.c); cpu_ns 0: none */
    uint32_t ncomms;
    struct progress_comm comms[PROGRESS_MAX_COMMS];
};

/* One collective call, as the collectives probe reports it. */
struct progress_call {
    uint64_t enter_ns;
    uint64_t handle; /* the call's communicator argument */
    uint64_t group;  /* its shared id, 0 when unknown */
    int64_t lib_seq; /* the library's number, -1 when none */
    uint64_t name_id;
    uint64_t done_ns; /* its host end when already known, else 0 */
};

enum progress_due {
    PROGRESS_DUE_NONE,
    PROGRESS_DUE_STALLED, /* no progress: a status (the first or the next) */
    PROGRESS_DUE_MOVING,  /* it progresses again after statuses: one more */
};

struct progress;

/* NULL when out of memory. Free with progress_free (NULL is fine). */
struct progress *progress_new(const struct progress_options *o);
void progress_free(struct progress *p);

/* pid is a rank of job (copied, truncated at PROGRESS_JOB_MAX - 1) in a
 * world of world ranks, tracked from now (its progress clock starts then,
 * unless calls came first). Again for a tracked pid: updates its identity.
 * Returns 0 or -ENOMEM / -ENOSPC (the table is full). */
int progress_track(struct progress *p, uint32_t pid, const char *job, uint32_t rank, uint32_t world,
                   uint64_t now);

/* pid entered call c (also a pid not tracked yet). */
void progress_call(struct progress *p, uint32_t pid, const struct progress_call *c);

/* pid's call numbered lib_seq on communicator handle finished at done_ns. */
void progress_done(struct progress *p, uint32_t pid, uint64_t handle, int64_t lib_seq,
                   uint64_t done_ns);

/* A step record of pid was made at now. */
void progress_step(struct progress *p, uint32_t pid, uint64_t step, uint64_t now);

/* The entry of pid, NULL when none. Valid until the next call that adds
 * or forgets an entry. */
struct progress_rank *progress_find(struct progress *p, uint32_t pid);

/* The entries, for iteration: entry i < progress_count. Same validity. */
size_t progress_count(const struct progress *p);
struct progress_rank *progress_at(struct progress *p, size_t i);

/* Forget pid (it exited). */
void progress_forget(struct progress *p, uint32_t pid);

/* Whether a status of r is due at now. Only tracked ranks of a world of
 * more than one rank get statuses (a lone rank has no peer to hang; 0, an unknown world, gets
 * them). */
enum progress_due progress_due(const struct progress *p, const struct progress_rank *r,
                               uint64_t now);

/* A status of kind due went out for r at now. */
void progress_sent(struct progress_rank *r, enum progress_due due, uint64_t now);

/* The communicator r entered a collective of last (for a log line), NULL
 * when none. */
const struct progress_comm *progress_last_comm(const struct progress_rank *r);

#endif
