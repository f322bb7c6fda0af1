/* The `sched` probe: off-CPU time and run-queue delay per thread of tracked
 * ranks, from the kernel's own accounting of each thread (time on a CPU,
 * sched_info.run_delay with CPU-quota throttling included, CPU arrivals):
 * a BPF task iterator reads every tracked thread once per dispatch (tick),
 * and a thread's end is read at its exit and again when it is freed
 * (agent/probes/sched_ends.h picks the reading). No BPF runs at a context
 * switch, so the ranks pay nothing for it but at their threads' exits.
 *
 * A thread's counters are reported when it has been back on a CPU since
 * its last report (and once at its end), as AGENT_EVENT_COUNTER OFF_CPU_NS
 * (the wall time since, less its time on a CPU: sleeping and waiting) and RUNQ_NS
 * (pid = tgid, tid = thread, ts = the tick's time), so a long sleep is
 * counted when it ends and the step a counter lands in is known to the tick
 * (100 ms). A thread created after its process was tracked counts from its
 * creation; the threads a process had when tracked, from their first
 * reading. The reports are computed in the kernel (bpf/sched.bpf.c): this
 * side keeps no per-thread state but ended threads waiting for their free
 * (milliseconds; at most 2 s). Metrics: ends_from_exit_total (ends counted
 * from the exit's reading: no free in time), ends_late_free_total,
 * ends_held. */
#ifndef ARGUS_AGENT_PROBE_SCHED_H
#define ARGUS_AGENT_PROBE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "agent/sources/event.h"
#include "agent/sources/source.h"

struct argus_sched_delta;

/* One thread's report into up to two counter events at ts (pure): returns
 * how many were written into out[0..1] (a counter that did not grow gives
 * none). */
int probe_sched_decode(const struct argus_sched_delta *d, uint64_t ts, struct agent_event out[2]);

extern const struct source_ops probe_sched_ops;

#endif
