/* Off-CPU time and run-queue delay per thread of tracked processes
 * (tp_btf sched_switch only), accumulated in a per-thread hash map that user
 * space reads every tick. Off-CPU runs from a thread's switch-out to its
 * switch-in. The run-queue delay is the kernel's own (sched_info.run_delay,
 * which also holds time throttled by a CPU quota): its growth is added when
 * the thread leaves the CPU, the wait before that run included (a program
 * on every wakeup to time it ourselves ran 266 times per step of a 4-rank
 * gloo job, 23% of the probes' BPF time). */
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

static __always_inline struct argus_sched_acc *acc_of(struct task_struct *task, __u32 tgid)
{
    __u32 tid = task->pid;
    struct argus_sched_acc *a = bpf_map_lookup_elem(&sched_acc, &tid);

    if (!a) {
        struct argus_sched_acc zero = {.tgid = tgid};

        if (bpf_map_update_elem(&sched_acc, &tid, &zero, BPF_NOEXIST) < 0 &&
            !bpf_map_lookup_elem(&sched_acc, &tid))
            __sync_fetch_and_add(&sched_acc_full, 1);
        a = bpf_map_lookup_elem(&sched_acc, &tid);
    }
    return a;
}

/* prev leaves the CPU: off-CPU from now; the run-queue delay it has had
 * since it was last seen (0 when the kernel keeps none: no CONFIG_SCHED_INFO). */
static __always_inline void switch_out(struct task_struct *prev, __u32 tgid, __u64 now)
{
    struct argus_sched_start *s =
        bpf_task_storage_get(&sched_start, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    struct argus_sched_acc *a;
    __u64 rd = 0;

    if (!s)
        return;
    s->off_ts = now;
    if (bpf_core_field_exists(prev->sched_info))
        rd = BPF_CORE_READ(prev, sched_info.run_delay);
    if (rd > s->run_delay && s->run_delay_seen && (a = acc_of(prev, tgid)))
        __sync_fetch_and_add(&a->runq_ns, rd - s->run_delay);
    s->run_delay = rd;
    s->run_delay_seen = 1;
}

/* next gets the CPU: the time since it left is off-CPU. */
static __always_inline void switch_in(struct task_struct *next, __u32 tgid, __u64 now)
{
    struct argus_sched_start *s = bpf_task_storage_get(&sched_start, next, 0, 0);
    struct argus_sched_acc *a;

    if (!s || !s->off_ts)
        return;
    if (now > s->off_ts && (a = acc_of(next, tgid))) {
        __sync_fetch_and_add(&a->off_cpu_ns, now - s->off_ts);
        __sync_fetch_and_add(&a->switches, 1);
    }
    s->off_ts = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 tgid = prev->tgid;

    if (tgid && tracked(tgid))
        switch_out(prev, tgid, now);
    tgid = next->tgid;
    if (tgid && tracked(tgid))
        switch_in(next, tgid, now);
    return 0;
}
