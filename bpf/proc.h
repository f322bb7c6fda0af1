/* Record shared by bpf/proc.bpf.c and the agent: process exec and exit. */
#ifndef ARGUS_BPF_PROC_H
#define ARGUS_BPF_PROC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ARGUS_PROC_COMM_LEN 16

enum argus_proc_kind {
    ARGUS_PROC_EXEC = 1,
    ARGUS_PROC_EXIT = 2,
};

struct argus_proc_event {
    __u64 ts_ns;     /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
    __u32 kind;      /* enum argus_proc_kind */
    __u32 pid;       /* tgid */
    __u32 ppid;      /* parent tgid (exec only) */
    __s32 exit_code; /* exit only: the task's exit_code as waitpid reports it (signal in
                      * bits 0-6, core dump bit 7, exit status in bits 8-15) */
    char comm[ARGUS_PROC_COMM_LEN];
};

#endif
