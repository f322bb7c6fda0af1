/* The sched probe's thread ends, held until the better of two readings is
 * known. The kernel side sends a thread's last stretch twice: at its exit
 * (ARGUS_SCHED_EXIT: its CPU time then lacks what it ran since its last
 * tick, ~2 ms on a 4 ms tick, so off-CPU reads high) and at its free
 * (ARGUS_SCHED_FREE: CPU time final), an RCU callback that normally follows
 * within milliseconds, but on a loaded host ~1-2 threads in 1,000 got no
 * free record at all (the kernel's tracepoint fired, the program's record
 * did not come; cause not found). An exit is held up to SCHED_ENDS_WAIT_NS for
 * its free; past that the exit's reading is reported, and the free, if it
 * still comes within SCHED_ENDS_KEEP_NS, is dropped (one end per thread).
 * A free without a held exit (its exit record lost to a full ring) is
 * reported as it is. Pure: no kernel, no clock; the caller passes now.
 * Not thread-safe: the probe's dispatch thread owns it. */
#ifndef ARGUS_AGENT_SCHED_ENDS_H
#define ARGUS_AGENT_SCHED_ENDS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/sched.h"

#define SCHED_ENDS_WAIT_NS 2000000000ull  /* an exit waits this long for its free */
#define SCHED_ENDS_KEEP_NS 60000000000ull /* a free that came later still matches */
#define SCHED_ENDS_MAX 4096               /* ends held at once; more report at once */

struct sched_end {
    struct argus_sched_delta d; /* the exit's reading */
    uint64_t due_ns;            /* held: report the exit then; reported: forget it then */
    int reported;               /* the exit's reading went out: drop its free */
};

struct sched_ends {
    struct sched_end *v;
    size_t n, cap;
    uint64_t from_exit;  /* ends reported from the exit's reading (no free in time) */
    uint64_t late_frees; /* frees dropped: their exit had been reported */
};

/* A thread-end record d (kind EXIT or FREE) read at now. Returns 1 when
 * out is to be reported now (a free: its own reading; an exit that cannot
 * be held: the table full or no memory), 0 when d is held or dropped.
 * Records of other kinds return -EINVAL. */
int sched_ends_add(struct sched_ends *e, const struct argus_sched_delta *d, uint64_t now,
                   struct argus_sched_delta *out);

/* The next exit whose free did not come by now: 1 with its reading in out
 * (it is then remembered until SCHED_ENDS_KEEP_NS to drop a late free),
 * 0 when none is due. Call until it returns 0. Also forgets reported ends
 * whose keep time passed. */
int sched_ends_expire(struct sched_ends *e, uint64_t now, struct argus_sched_delta *out);

/* The probe is stopping: the next held exit, due or not, as
 * sched_ends_expire reports it (counted in from_exit). Call until it
 * returns 0; then nothing is held. */
int sched_ends_flush(struct sched_ends *e, struct argus_sched_delta *out);

/* Ends held now (not yet reported). */
size_t sched_ends_held(const struct sched_ends *e);

void sched_ends_free(struct sched_ends *e);

#endif
