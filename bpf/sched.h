/* Per-thread accumulators shared by bpf/sched.bpf.c and agent/probes/probe_sched.c:
 * off-CPU time and run-queue delay of the threads of tracked processes,
 * summed in the kernel so ring traffic does not grow with the switch rate. */
#ifndef ARGUS_BPF_SCHED_H
#define ARGUS_BPF_SCHED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct argus_sched_acc {
    __u64 off_cpu_ns; /* switched out -> switched in (sleeping or runnable) */
    __u64 runq_ns;    /* waiting for a CPU: the kernel's run_delay (throttling included) */
    __u64 switches;   /* times switched back in */
    __u32 tgid;
    __u32 pad;
};

/* When a thread left the CPU (0 = on it), and its run_delay when it was
 * last switched in. */
struct argus_sched_start {
    __u64 off_ts;
    __u64 run_delay;
    __u64 run_delay_seen; /* run_delay holds a reading */
};

#endif
