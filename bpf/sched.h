/* Shared by bpf/sched.bpf.c and agent/probes/probe_sched.c: what a thread
 * of a tracked process spent off a CPU, and of that waiting for one, since
 * it was last reported. Computed in the kernel from its own accounting of
 * the thread (time on a CPU, sched_info.run_delay, CPU arrivals: what
 * /proc/PID/task/TID/schedstat shows) by a task iterator user space runs
 * every tick, and at a thread's end: once at its exit (its CPU time then
 * still lacks what it ran since its last tick) and once when it is freed
 * (final), which user space prefers when it comes in time. */
#ifndef ARGUS_BPF_SCHED_H
#define ARGUS_BPF_SCHED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum argus_sched_kind {
    ARGUS_SCHED_REPORT = 0, /* the iterator: back on a CPU since its last report */
    ARGUS_SCHED_EXIT = 1,   /* its exit: the rest of its life, CPU time as at its exit */
    ARGUS_SCHED_FREE = 2,   /* its free: the same stretch, CPU time final */
};

struct argus_sched_delta {
    __u64 off_cpu_ns; /* wall time less time on a CPU: sleeping, blocked or waiting */
    __u64 runq_ns;    /* of it, waiting for a CPU (CPU-quota throttling included) */
    __u32 tgid;
    __u32 tid;
    __u32 kind; /* enum argus_sched_kind */
    __u32 reserved;
};

/* Per thread (task storage): its reading when last reported. */
struct argus_sched_mark {
    __u64 exec_ns;           /* se.sum_exec_runtime */
    __u64 run_delay_ns;      /* sched_info.run_delay (0 without CONFIG_SCHED_INFO) */
    __u64 pcount;            /* sched_info.pcount: times it got a CPU */
    __u64 ts_ns;             /* CLOCK_MONOTONIC */
    __u64 exit_ns;           /* its exit, 0 while alive */
    __u64 exit_run_delay_ns; /* run_delay at its exit (a wait after it is outside its wall time) */
};

#endif
