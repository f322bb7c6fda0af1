/* Record shared by bpf/calls.bpf.c and its users (agent/probes/probe_collectives.c,
 * agent/probes/probe_sync.c): one call of a uprobed function, entry to return.
 *
 * The BPF side does not interpret arguments: it copies the six argument
 * registers and the first two stack slots (arguments 7 and 8 on x86-64), and
 * the attach cookie says which function it was. User space decodes. */
#ifndef ARGUS_BPF_CALLS_H
#define ARGUS_BPF_CALLS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ARGUS_CALL_NARGS 8

/* A cookie with this bit: the function has no return probe (its return
 * carries nothing used); its entry sends the record at once, exit_ns =
 * enter_ns and ret 0, cookie without the bit. Saves a uretprobe trap a
 * call. Same bit as PROBE_UPROBE_ENTRY_ONLY (agent/probes/probe_common.h). */
#define ARGUS_CALL_ENTRY_ONLY (1ULL << 63)

struct argus_call_record {
    __u64 enter_ns; /* bpf_ktime_get_ns at entry */
    __u64 exit_ns;  /* at return */
    __u64 cookie;   /* the attach cookie: which function (user-defined) */
    __u64 args[ARGUS_CALL_NARGS];
    __s64 ret; /* return value register */
    __u32 pid; /* tgid */
    __u32 tid;
};

#endif
