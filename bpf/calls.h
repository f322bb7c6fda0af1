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

/* A cookie with this bit (and ARGUS_CALL_ENTRY_ONLY): the function takes a
 * std::string at args[1] (libstdc++: data pointer, then length) and a
 * pointer at args[2]; the entry copies the string's text and the first 8
 * bytes args[2] points to into a struct argus_call_text, which keeps the
 * bit in its cookie. Read in the kernel at entry because user space reads
 * too late: the callee may move the string out (c10d::TCPStore's
 * constructor leaves its host argument empty) and the caller frees it. */
#define ARGUS_CALL_TEXT (1ULL << 62)

#define ARGUS_CALL_TEXT_MAX 128 /* bytes of text kept, with the NUL */

struct argus_call_record {
    __u64 enter_ns; /* bpf_ktime_get_ns at entry */
    __u64 exit_ns;  /* at return */
    __u64 cookie;   /* the attach cookie: which function (user-defined) */
    __u64 args[ARGUS_CALL_NARGS];
    __s64 ret; /* return value register */
    __u32 pid; /* tgid */
    __u32 tid;
};

/* The record of an ARGUS_CALL_TEXT function. */
struct argus_call_text {
    struct argus_call_record call;
    __u64 word; /* the first 8 bytes args[2] points to, 0 when unreadable */
    __u64 len;  /* the string's length (text holds at most ARGUS_CALL_TEXT_MAX - 1 of it) */
    char text[ARGUS_CALL_TEXT_MAX]; /* NUL-terminated; "" when unreadable */
};

#endif
