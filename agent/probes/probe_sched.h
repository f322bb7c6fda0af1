/* The `sched` probe: off-CPU time and run-queue delay per thread of tracked
 * ranks (tp_btf sched_switch; the delay is the kernel's sched_info.run_delay,
 * time throttled by a CPU quota included), filtered and summed in the kernel
 * per thread. Every dispatch (tick) reads the per-thread
 * sums and emits what grew since the last read as AGENT_EVENT_COUNTER
 * OFF_CPU_NS and RUNQ_NS (pid = tgid, tid = thread, ts = read time), so the
 * step a counter lands in is known to the tick (100 ms). Off-CPU includes the
 * run-queue wait that ends it. */
#ifndef ARGUS_AGENT_PROBE_SCHED_H
#define ARGUS_AGENT_PROBE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "agent/sources/event.h"
#include "agent/sources/source.h"

struct argus_sched_acc;

struct probe_sched_config {
    /* Every this many dispatches, the entries of exited threads are deleted
     * (kernel map and user table); 0 = 50 (5 s at the agent's tick). */
    uint32_t reap_ticks;
};

/* Turn the growth of one thread's sums (cur against last; last NULL = zero)
 * into up to two counter events at ts (pure). Returns how many were written
 * into out[0..1]; a counter that did not grow (or went back: the entry was
 * recreated) gives no event. */
int probe_sched_decode(const struct argus_sched_acc *cur, const struct argus_sched_acc *last,
                       uint32_t tid, uint64_t ts, struct agent_event out[2]);

extern const struct source_ops probe_sched_ops;

#endif
