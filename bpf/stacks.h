/* Record shared by bpf/stacks.bpf.c and agent/probes/probe_stacks.c: one CPU
 * sample of a tracked process; the stacks themselves are in the stack map. */
#ifndef ARGUS_BPF_STACKS_H
#define ARGUS_BPF_STACKS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ARGUS_STACK_DEPTH 127

struct argus_stack_sample {
    __u64 ts_ns;
    __u32 pid; /* tgid */
    __u32 tid;
    __s32 kstack_id; /* -errno when none (e.g. -EFAULT for a sample taken in user mode) */
    __s32 ustack_id;
    __u32 cpu;
    __u32 pad;
};

#endif
