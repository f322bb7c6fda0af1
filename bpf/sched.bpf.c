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

/* Task-local: found through the task itself and freed with it (an LRU hash
 * keyed by tid cost an update and a delete per context switch of every
 * tracked thread: half the in-process cost of the agent on a gloo job). */
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
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

static __always_inline void account(struct task_struct *task, __u32 tgid, __u64 now)
{
    struct argus_sched_start *s = bpf_task_storage_get(&sched_start, task, 0, 0);
    __u32 tid = task->pid;
    struct argus_sched_acc *a;

    if (!s || (!s->off_ts && !s->runq_ts))
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
    s->off_ts = 0;
    s->runq_ts = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 tgid = prev->tgid;

    if (tgid && tracked(tgid)) {
        struct argus_sched_start *s =
            bpf_task_storage_get(&sched_start, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

        if (s) { /* still runnable (preempted, yielded): waiting in the run queue now */
            s->off_ts = now;
            s->runq_ts = prev_state == 0 ? now : 0;
        }
    }
    tgid = next->tgid;
    if (tgid && tracked(tgid))
        account(next, tgid, now);
    return 0;
}

static __always_inline void on_wakeup(struct task_struct *p)
{
    struct argus_sched_start *s;

    if (!tracked(p->tgid))
        return;
    s = bpf_task_storage_get(&sched_start, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (s && !s->runq_ts)
        s->runq_ts = bpf_ktime_get_ns();
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
