/* The stacks probe's symbolizer thread: sampled addresses in, named frames
 * out, off the agent's main loop.
 *
 * The main loop pushes raw samples (pid, time, instruction pointers) into a
 * fixed ring and takes them back, in the same order, once the worker has
 * named their frames (agent/symbols/symcache.h: reading a library's symbols or a
 * process's maps can take milliseconds to seconds; it must never stall the
 * loop). The main loop wakes the worker once for the samples it pushed in
 * one go (stacks_worker_kick), not per sample: a worker woken per push ran
 * ~50 times a second under a 4-rank job, each wakeup a context switch on a
 * machine whose cores the job uses. The worker writes an eventfd when it has
 * results.
 *
 * Ownership: one ring of `queue` slots and three counters. [taken, done)
 * are resolved samples the main thread may read, [done, pushed) raw samples
 * the worker owns; the counters change only under the mutex, and a slot
 * changes hands only with them. At most `queue` samples are outstanding
 * (pushed, not yet taken): one more is refused and counted as dropped, so
 * memory is fixed at creation and neither side ever waits for the other
 * except for that short lock.
 *
 * Frame names are interned by the worker into a table of fixed capacity
 * (STACKS_WORKER_NAMES; when full, new names become id 0, "[other]").
 * Entries never change once written, and an id reaches the main thread
 * only through the ring, after its string: the main thread may read the
 * names of every id it has taken.
 *
 * push, kick, take, forget, name, fd and stats are for the main thread (one
 * thread); everything else happens on the worker. */
#ifndef ARGUS_AGENT_STACKS_WORKER_H
#define ARGUS_AGENT_STACKS_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/probes/stacks_sample.h"
#include "agent/symbols/symcache.h"

#define STACKS_WORKER_DEFAULT_QUEUE 8192
#define STACKS_WORKER_NAMES 32768 /* distinct frame names kept; id 0 = "[other]" */

struct stacks_worker_options {
    size_t queue;                  /* samples outstanding at most; 0 = default */
    struct symcache_options cache; /* the symbol cache's caps */
};

struct stacks_worker_stats {
    uint64_t pushed;     /* samples accepted */
    uint64_t dropped;    /* refused: `queue` samples outstanding */
    uint64_t resolved;   /* samples the worker has named */
    uint64_t names_full; /* frames that became "[other]" */
    struct symcache_stats cache;
};

struct stacks_worker;

/* Allocate the ring, the name table and the symbol cache; the thread does
 * not run until stacks_worker_start (pushes before that wait in the ring).
 * o may be NULL. Returns NULL on allocation failure or no eventfd. */
struct stacks_worker *stacks_worker_new(const struct stacks_worker_options *o);

/* Start the thread. Returns 0 or -errno. */
int stacks_worker_start(struct stacks_worker *w);

/* Stop the thread (it finishes the sample in hand, so this returns within
 * one symbol-file read), join it and free everything. w may be NULL. */
void stacks_worker_free(struct stacks_worker *w);

/* Copy s into the ring. Returns 0, or -ENOBUFS (counted in dropped) when
 * `queue` samples are outstanding. Never blocks but on the ring's lock,
 * which the worker holds only to move counters. The worker is not woken
 * for it before the next stacks_worker_kick. */
int stacks_worker_push(struct stacks_worker *w, const struct stacks_raw *s);

/* Wake the worker for what was pushed since the last kick (nothing to do
 * when nothing was). */
void stacks_worker_kick(struct stacks_worker *w);

/* Copy up to max resolved samples into out, in push order (frame ids for
 * stacks_worker_name), and clear the eventfd. Returns how many. */
size_t stacks_worker_take(struct stacks_worker *w, struct probe_stacks_sample *out, size_t max);

/* Samples pushed and not taken yet. */
size_t stacks_worker_outstanding(const struct stacks_worker *w);

/* Forget what the symbol cache knows about pid once the samples pushed so
 * far are resolved (the process exited). Never dropped. */
int stacks_worker_forget(struct stacks_worker *w, uint32_t pid);

/* The name of a frame id of a taken sample; "[other]" for any other id.
 * Valid while w lives. */
const char *stacks_worker_name(const struct stacks_worker *w, uint32_t id);

/* Number of names the main thread may read (ids below it). */
uint32_t stacks_worker_nnames(const struct stacks_worker *w);

/* Readable when resolved samples are waiting to be taken. */
int stacks_worker_fd(const struct stacks_worker *w);

void stacks_worker_get_stats(struct stacks_worker *w, struct stacks_worker_stats *out);

#endif
