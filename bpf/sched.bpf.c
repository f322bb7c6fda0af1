/* Off-CPU time and run-queue delay per thread of tracked processes
 * (tp_btf sched_switch only), accumulated in a per-thread hash map that user
 * space reads every tick. Off-CPU runs from a thread's switch-out to its
 * switch-in. The run-queue delay is the kernel's own (sched_info.run_delay,
 * which also holds time throttled by a CPU quota), its growth added at the
 * thread's switch-in: the kernel adds the wait that this switch-in ends
 * just after the tracepoint, so each wait is counted one switch-in later.
 * A program on every wakeup to time the waits ourselves ran 266 times per
 * step of a 4-rank gloo job, a third of the probe's BPF time. */
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

/* next gets the CPU: the time since it left is off-CPU; the run-queue
 * delay the kernel added since it was last seen (none without
 * CONFIG_SCHED_INFO). */
static __always_inline void account(struct task_struct *next, __u32 tgid, __u64 now)
{
    struct argus_sched_start *s = bpf_task_storage_get(&sched_start, next, 0, 0);
    __u32 tid = next->pid;
    struct argus_sched_acc *a;
    __u64 rd = 0;

    if (!s || !s->off_ts)
        return;
    if (bpf_core_field_exists(next->sched_info))
        rd = next->sched_info.run_delay; /* a BTF pointer: a plain load */
    a = bpf_map_lookup_elem(&sched_acc, &tid);
    if (!a) {
        struct argus_sched_acc zero = {.tgid = tgid};

        if (bpf_map_update_elem(&sched_acc, &tid, &zero, BPF_NOEXIST) < 0 &&
            !bpf_map_lookup_elem(&sched_acc, &tid))
            __sync_fetch_and_add(&sched_acc_full, 1);
        a = bpf_map_lookup_elem(&sched_acc, &tid);
    }
    if (a) {
        if (now > s->off_ts)
            __sync_fetch_and_add(&a->off_cpu_ns, now - s->off_ts);
        if (s->run_delay_seen && rd > s->run_delay)
            __sync_fetch_and_add(&a->runq_ns, rd - s->run_delay);
        __sync_fetch_and_add(&a->switches, 1);
    }
    s->off_ts = 0;
    s->run_delay = rd;
    s->run_delay_seen = 1;
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

        if (s)
            s->off_ts = now;
    }
    tgid = next->tgid;
    if (tgid && tracked(tgid))
        account(next, tgid, now);
    return 0;
}
