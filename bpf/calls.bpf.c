/* Generic uprobe/uretprobe pair for low-rate library calls (collectives,
 * syncs, allocations): entry saves the arguments and time per (thread,
 * function), return sends one record with both times. Filtered in the kernel
 * to tracked processes. Never attach it to kernel launches: a uprobe costs
 * microseconds. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/calls.h"
#include "bpf/ring.h"
#include "bpf/tracked.bpf.h"

#define CALLS_RING_BYTES (4 * 1024 * 1024) /* 35k records */

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(calls_tracked);

/* LRU: a call that never returns (thread killed mid-call) must not leak. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct argus_call_key);
    __type(value, struct argus_call_record);
} calls_inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, CALLS_RING_BYTES);
} calls_ring SEC(".maps");

/* 0: trace every process (tests, benchmarks); 1: tracked ones only. */
const volatile __u32 calls_filter = 1;

__u64 calls_dropped = 0;   /* ring full */
__u64 calls_unmatched = 0; /* return without a saved entry (map full, attached mid-call) */

SEC("uprobe")
int BPF_KPROBE(calls_enter)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tgid = id >> 32;
    struct argus_call_key key = {.pid_tgid = id, .cookie = bpf_get_attach_cookie(ctx)};
    struct argus_call_record r = {};

    if (calls_filter && !bpf_map_lookup_elem(&calls_tracked, &tgid))
        return 0;
    r.enter_ns = bpf_ktime_get_ns();
    r.cookie = key.cookie;
    r.args[0] = PT_REGS_PARM1(ctx);
    r.args[1] = PT_REGS_PARM2(ctx);
    r.args[2] = PT_REGS_PARM3(ctx);
    r.args[3] = PT_REGS_PARM4(ctx);
    r.args[4] = PT_REGS_PARM5(ctx);
    r.args[5] = ctx->r9; /* PT_REGS_PARM6 is missing in libbpf 1.1 */
    /* At entry [sp] is the return address; arguments 7 and 8 follow. */
    bpf_probe_read_user(&r.args[6], 2 * sizeof(__u64), (void *)(PT_REGS_SP(ctx) + 8));
    r.pid = tgid;
    r.tid = (__u32)id;
    bpf_map_update_elem(&calls_inflight, &key, &r, BPF_ANY);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(calls_exit, long ret)
{
    struct argus_call_key key = {.pid_tgid = bpf_get_current_pid_tgid(),
                                 .cookie = bpf_get_attach_cookie(ctx)};
    struct argus_call_record *saved = bpf_map_lookup_elem(&calls_inflight, &key);
    struct argus_call_record *r;

    if (!saved) {
        __u32 tgid = key.pid_tgid >> 32;

        if (!calls_filter || bpf_map_lookup_elem(&calls_tracked, &tgid))
            __sync_fetch_and_add(&calls_unmatched, 1);
        return 0;
    }
    r = bpf_ringbuf_reserve(&calls_ring, sizeof(*r), 0);
    if (!r) {
        __sync_fetch_and_add(&calls_dropped, 1);
    } else {
        __builtin_memcpy(r, saved, sizeof(*r));
        r->exit_ns = bpf_ktime_get_ns();
        r->ret = ret;
        bpf_ringbuf_submit(r, argus_ring_wakeup(&calls_ring, CALLS_RING_BYTES));
    }
    bpf_map_delete_elem(&calls_inflight, &key);
    return 0;
}
