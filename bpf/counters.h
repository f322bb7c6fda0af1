/* Shared by bpf/net.bpf.c, bpf/io.bpf.c and agent/probes/probe_net.c, probe_io.c:
 * a counter summed in the kernel per process. Key 0 is the node total (every
 * event, attributed or not); key TGID is a tracked process's share. */
#ifndef ARGUS_BPF_COUNTERS_H
#define ARGUS_BPF_COUNTERS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ARGUS_COUNTERS_MAX 4097

/* A block request in flight (bpf/io.bpf.c). */
struct argus_io_start {
    __u64 ts_ns;
    __u32 tgid; /* tracked process that issued it, 0 when none */
    __u32 pad;
};

#endif
