/* Off-CPU time and run-queue delay per thread of tracked processes
 * (tp_btf sched_switch, sched_wakeup, sched_wakeup_new), accumulated in a
 * per-thread hash map that user space reads every tick. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/sched.h"
#include "bpf/tracked.bpf.h"

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(sched_tracked);

/* LRU: threads that exit while off the CPU leave their entry behind. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32); /* tid */
    __type(value, struct argus_sched_start);
} sched_start SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32); /* tid */
    __type(value, struct argus_sched_acc);
} sched_acc SEC(".maps");

__u64 sched_acc_full = 0; /* accumulator map full: time lost */

static __always_inline bool tracked(__u32 tgid)
{
    return bpf_map_lookup_elem(&sched_tracked, &tgid) != NULL;
}

static __always_inline void account(__u32 tid, __u32 tgid, __u64 now)
{
    struct argus_sched_start *s = bpf_map_lookup_elem(&sched_start, &tid);
    struct argus_sched_acc *a;

    if (!s)
        return;
    a = bpf_map_lookup_elem(&sched_acc, &tid);
    if (!a) {
        struct argus_sched_acc zero = {.tgid = tgid};

        if (bpf_map_update_elem(&sched_acc, &tid, &zero, BPF_NOEXIST) < 0 &&
            !bpf_map_lookup_elem(&sched_acc, &tid))
            __sync_fetch_and_add(&sched_acc_full, 1);
        a = bpf_map_lookup_elem(&sched_acc, &tid);
    }
    if (a) {
        if (s->off_ts && now > s->off_ts)
            __sync_fetch_and_add(&a->off_cpu_ns, now - s->off_ts);
        if (s->runq_ts && now > s->runq_ts)
            __sync_fetch_and_add(&a->runq_ns, now - s->runq_ts);
        __sync_fetch_and_add(&a->switches, 1);
    }
    bpf_map_delete_elem(&sched_start, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 tgid = prev->tgid;

    if (tgid && tracked(tgid)) {
        __u32 tid = prev->pid;
        /* Still runnable (preempted, yielded): waiting in the run queue now. */
        struct argus_sched_start s = {.off_ts = now, .runq_ts = prev_state == 0 ? now : 0};

        bpf_map_update_elem(&sched_start, &tid, &s, BPF_ANY);
    }
    tgid = next->tgid;
    if (tgid && tracked(tgid))
        account(next->pid, tgid, now);
    return 0;
}

static __always_inline void on_wakeup(struct task_struct *p)
{
    __u32 tgid = p->tgid, tid = p->pid;
    struct argus_sched_start *s;

    if (!tracked(tgid))
        return;
    s = bpf_map_lookup_elem(&sched_start, &tid);
    if (s) {
        if (!s->runq_ts)
            s->runq_ts = bpf_ktime_get_ns();
    } else {
        struct argus_sched_start fresh = {.runq_ts = bpf_ktime_get_ns()};

        bpf_map_update_elem(&sched_start, &tid, &fresh, BPF_ANY);
    }
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_on_wakeup, struct task_struct *p)
{
    on_wakeup(p);
    return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_on_wakeup_new, struct task_struct *p)
{
    on_wakeup(p);
    return 0;
}
