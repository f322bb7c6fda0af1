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

/* The calls in flight on a thread, innermost last (a probed function may
 * call another: allreduce -> nextTag, cudaStreamSynchronize ->
 * cuStreamSynchronize). Task-local, so freed with the thread: an LRU hash
 * keyed by (thread, function) cost an update at every entry and a delete at
 * every return (side by side under a gloo job: entry + return 4-13% less BPF time). */
#define CALLS_DEPTH 4

struct calls_stack {
    __u32 depth;
    __u32 pad;
    struct argus_call_record f[CALLS_DEPTH];
};

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct calls_stack);
} calls_inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, CALLS_RING_BYTES);
} calls_ring SEC(".maps");

/* 0: trace every process (tests, benchmarks); 1: tracked ones only. */
const volatile __u32 calls_filter = 1;

__u64 calls_dropped = 0;   /* ring full */
__u64 calls_unmatched = 0; /* return without a saved entry (attached mid-call) */
__u64 calls_abandoned = 0; /* entries whose return never came (unwound past), dropped */

/* The entry's time, the argument registers and the first two stack slots. */
static __always_inline void read_args(struct argus_call_record *r, struct pt_regs *ctx, __u32 tgid,
                                      __u32 tid, __u64 cookie)
{
    r->enter_ns = bpf_ktime_get_ns();
    r->cookie = cookie;
    r->args[0] = PT_REGS_PARM1(ctx);
    r->args[1] = PT_REGS_PARM2(ctx);
    r->args[2] = PT_REGS_PARM3(ctx);
    r->args[3] = PT_REGS_PARM4(ctx);
    r->args[4] = PT_REGS_PARM5(ctx);
    r->args[5] = ctx->r9; /* PT_REGS_PARM6 is missing in libbpf 1.1 */
    /* At entry [sp] is the return address; arguments 7 and 8 follow (zeroed
     * by the helper when unreadable). */
    bpf_probe_read_user(&r->args[6], 2 * sizeof(__u64), (void *)(PT_REGS_SP(ctx) + 8));
    r->pid = tgid;
    r->tid = tid;
}

/* An ARGUS_CALL_TEXT function's entry: its record with the string and the
 * word read now (bpf/calls.h). */
static __always_inline void send_text(struct pt_regs *ctx, __u32 tgid, __u32 tid, __u64 cookie)
{
    struct argus_call_text *t = bpf_ringbuf_reserve(&calls_ring, sizeof(*t), 0);
    struct {
        __u64 ptr, len;
    } s;

    if (!t) {
        __sync_fetch_and_add(&calls_dropped, 1);
        return;
    }
    read_args(&t->call, ctx, tgid, tid, cookie);
    t->call.exit_ns = t->call.enter_ns;
    t->call.ret = 0;
    /* the helpers zero their destination when the read fails */
    bpf_probe_read_user(&t->word, sizeof(t->word), (void *)t->call.args[2]);
    bpf_probe_read_user(&s, sizeof(s), (void *)t->call.args[1]);
    t->len = s.len;
    if (bpf_probe_read_user_str(t->text, sizeof(t->text), (void *)s.ptr) < 0)
        t->text[0] = 0;
    bpf_ringbuf_submit(t, argus_ring_wakeup(&calls_ring, CALLS_RING_BYTES));
}

SEC("uprobe")
int BPF_KPROBE(calls_enter)
{
    __u64 id = bpf_get_current_pid_tgid(), cookie;
    __u32 tgid = id >> 32, d;
    struct calls_stack *st;
    struct argus_call_record *r;

    if (calls_filter && !bpf_map_lookup_elem(&calls_tracked, &tgid))
        return 0;
    cookie = bpf_get_attach_cookie(ctx);
    if (cookie & ARGUS_CALL_TEXT) {
        send_text(ctx, tgid, (__u32)id, cookie & ~ARGUS_CALL_ENTRY_ONLY);
        return 0;
    }
    if (cookie & ARGUS_CALL_ENTRY_ONLY) {
        r = bpf_ringbuf_reserve(&calls_ring, sizeof(*r), 0);
        if (!r) {
            __sync_fetch_and_add(&calls_dropped, 1);
            return 0;
        }
        read_args(r, ctx, tgid, (__u32)id, cookie & ~ARGUS_CALL_ENTRY_ONLY);
        r->exit_ns = r->enter_ns;
        r->ret = 0;
        bpf_ringbuf_submit(r, argus_ring_wakeup(&calls_ring, CALLS_RING_BYTES));
        return 0;
    }
    st = bpf_task_storage_get(&calls_inflight, bpf_get_current_task_btf(), 0,
                              BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!st)
        return 0;
    d = st->depth;
    if (d >= CALLS_DEPTH) { /* returns that never came (an exception unwound past them) */
        __sync_fetch_and_add(&calls_abandoned, CALLS_DEPTH);
        d = 0;
    }
    r = &st->f[d & (CALLS_DEPTH - 1)];
    read_args(r, ctx, tgid, (__u32)id, cookie); /* exit_ns and ret: set at the return */
    st->depth = d + 1;
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(calls_exit, long ret)
{
    __u64 cookie = bpf_get_attach_cookie(ctx);
    struct calls_stack *st =
        bpf_task_storage_get(&calls_inflight, bpf_get_current_task_btf(), 0, 0);
    struct argus_call_record *saved = NULL, *r;
    __u32 d = st ? st->depth : 0;

    /* The innermost entry of this function; entries above it were left by
     * returns that never came. */
    for (int i = CALLS_DEPTH - 1; i >= 0 && st; i--)
        if ((__u32)i < d && st->f[i].cookie == cookie) {
            saved = &st->f[i];
            if (d > (__u32)i + 1)
                __sync_fetch_and_add(&calls_abandoned, d - i - 1);
            st->depth = i;
            break;
        }
    if (!saved) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;

        if (!calls_filter || bpf_map_lookup_elem(&calls_tracked, &tgid))
            __sync_fetch_and_add(&calls_unmatched, 1);
        return 0;
    }
    r = bpf_ringbuf_reserve(&calls_ring, sizeof(*r), 0);
    if (!r) {
        __sync_fetch_and_add(&calls_dropped, 1);
        return 0;
    }
    __builtin_memcpy(r, saved, sizeof(*r));
    r->exit_ns = bpf_ktime_get_ns();
    r->ret = ret;
    bpf_ringbuf_submit(r, argus_ring_wakeup(&calls_ring, CALLS_RING_BYTES));
    return 0;
}
