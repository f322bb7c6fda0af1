/* Off-CPU time and run-queue delay of the threads of tracked processes,
 * from the kernel's own accounting of each thread: time on a CPU, the
 * run-queue delay (sched_info.run_delay, which also holds time throttled by
 * a CPU quota) and CPU arrivals. A task iterator that user space runs every
 * tick (one per tracked process where the kernel filters by pid, 6.1+) reports each tracked thread
 * that has been back on a CPU since its last report (so a long sleep is counted when it ends); a
 * thread's exit marks its end and reports the rest on a ring, and its free (after its last
 * switch, when its CPU time is final) reports that stretch again, final. The free is an RCU
 * callback, normally milliseconds after the exit; on a loaded host (kernel 6.18) ~1-2 threads in
 * 1,000 got no free record although the tracepoint fired (ftrace saw every free; no recursion
 * misses; cause not found): user space waits for it a while and else counts the exit's. Nothing
 * runs at a context switch: a sched_switch program did, ~400 times per step of a 4-rank gloo job,
 * inside the ranks, most of the probes' BPF time there. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/sched.h"
#include "bpf/tracked.bpf.h"

#define SCHED_RING_BYTES (512 * 1024) /* 6k thread ends (exit and free) between two ticks */

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(sched_tracked);

/* tgid -> when user space began tracking it (CLOCK_MONOTONIC): its threads
 * created since count from their creation, older ones from their first
 * reading. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, ARGUS_TRACKED_MAX);
    __type(key, __u32);
    __type(value, __u64);
} sched_since SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct argus_sched_mark);
} sched_marks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, SCHED_RING_BYTES);
} sched_ends SEC(".maps");

__u64 sched_ends_lost = 0; /* ring full: a thread's exit or free record */

static __always_inline void read_now(struct argus_sched_mark *r, struct task_struct *t, __u64 now)
{
    r->exec_ns = BPF_CORE_READ(t, se.sum_exec_runtime);
    r->run_delay_ns = 0;
    r->pcount = 0;
    if (bpf_core_field_exists(t->sched_info)) {
        r->run_delay_ns = BPF_CORE_READ(t, sched_info.run_delay);
        r->pcount = BPF_CORE_READ(t, sched_info.pcount);
    }
    r->ts_ns = now;
}

/* t's mark, made on first sight: from its creation when that came after
 * its process was tracked, else from now (a zero mark with ts_ns 0: the
 * caller's reading becomes the mark). */
static __always_inline struct argus_sched_mark *mark_of(struct task_struct *t, __u32 tgid)
{
    struct argus_sched_mark *m = bpf_task_storage_get(&sched_marks, t, 0, 0);
    __u64 start, *since;

    if (m)
        return m;
    m = bpf_task_storage_get(&sched_marks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!m)
        return NULL;
    start = BPF_CORE_READ(t, start_time);
    since = bpf_map_lookup_elem(&sched_since, &tgid);
    if (since && start >= *since)
        m->ts_ns = start; /* counters 0 at its creation */
    return m;
}

/* The growth from m to cur into d. */
static __always_inline void measure(struct argus_sched_delta *d, const struct argus_sched_mark *m,
                                    const struct argus_sched_mark *cur, __u32 tgid, __u32 tid,
                                    __u32 kind)
{
    __u64 wall = cur->ts_ns > m->ts_ns ? cur->ts_ns - m->ts_ns : 0;
    __u64 exec = cur->exec_ns > m->exec_ns ? cur->exec_ns - m->exec_ns : 0;

    d->off_cpu_ns = wall > exec ? wall - exec : 0;
    d->runq_ns = cur->run_delay_ns > m->run_delay_ns ? cur->run_delay_ns - m->run_delay_ns : 0;
    d->tgid = tgid;
    d->tid = tid;
    d->kind = kind;
    d->reserved = 0;
}

/* measure, and cur becomes the mark. */
static __always_inline void report(struct argus_sched_delta *d, struct argus_sched_mark *m,
                                   const struct argus_sched_mark *cur, __u32 tgid, __u32 tid,
                                   __u32 kind)
{
    measure(d, m, cur, tgid, tid, kind);
    m->exec_ns = cur->exec_ns;
    m->run_delay_ns = cur->run_delay_ns;
    m->pcount = cur->pcount;
    m->ts_ns = cur->ts_ns;
}

SEC("iter/task")
int sched_iter(struct bpf_iter__task *ctx)
{
    struct task_struct *t = ctx->task;
    struct argus_sched_mark cur = {}, *m;
    struct argus_sched_delta d;
    __u32 tgid;

    if (!t)
        return 0;
    tgid = t->tgid;
    if (!tgid || !bpf_map_lookup_elem(&sched_tracked, &tgid))
        return 0;
    m = mark_of(t, tgid);
    if (!m || m->exit_ns)
        return 0; /* its end is reported at its exit and its free */
    read_now(&cur, t, bpf_ktime_get_ns());
    if (!m->ts_ns) { /* first reading of a thread older than its tracking */
        m->exec_ns = cur.exec_ns;
        m->run_delay_ns = cur.run_delay_ns;
        m->pcount = cur.pcount;
        m->ts_ns = cur.ts_ns;
        return 0;
    }
    if (cur.pcount <= m->pcount)
        return 0; /* not back on a CPU since: its off-CPU stretch goes on */
    report(&d, m, &cur, tgid, t->pid, ARGUS_SCHED_REPORT);
    bpf_seq_write(ctx->meta->seq, &d, sizeof(d));
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_on_exit)
{
    struct task_struct *t = bpf_get_current_task_btf();
    struct argus_sched_mark *m;
    __u32 tgid = t->tgid;

    if (!tgid || !bpf_map_lookup_elem(&sched_tracked, &tgid))
        return 0;
    m = mark_of(t, tgid);
    if (m) {
        struct argus_sched_mark cur;
        struct argus_sched_delta *d;

        read_now(&cur, t, bpf_ktime_get_ns());
        m->exit_run_delay_ns = cur.run_delay_ns;
        m->exit_ns = cur.ts_ns;
        if (!m->ts_ns)
            return 0; /* never read: nothing to measure from */
        d = bpf_ringbuf_reserve(&sched_ends, sizeof(*d), 0);
        if (!d) {
            __sync_fetch_and_add(&sched_ends_lost, 1);
            return 0;
        }
        measure(d, m, &cur, tgid, t->pid, ARGUS_SCHED_EXIT); /* the mark stays for the free */
        bpf_ringbuf_submit(d, BPF_RB_NO_WAKEUP);
    }
    return 0;
}

/* After the thread's last switch: its CPU time is final (at its exit the
 * time it had been running since its last tick was not yet added; what it
 * runs after its exit is small). Its wall time and run-queue delay end at
 * its exit. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(sched_on_free, struct task_struct *t)
{
    struct argus_sched_mark *m = bpf_task_storage_get(&sched_marks, t, 0, 0);
    struct argus_sched_mark cur;
    struct argus_sched_delta *d;

    if (!m || !m->exit_ns || !m->ts_ns)
        return 0;
    read_now(&cur, t, m->exit_ns);
    cur.run_delay_ns = m->exit_run_delay_ns;
    d = bpf_ringbuf_reserve(&sched_ends, sizeof(*d), 0);
    if (!d) {
        __sync_fetch_and_add(&sched_ends_lost, 1);
        return 0;
    }
    report(d, m, &cur, t->tgid, t->pid, ARGUS_SCHED_FREE);
    bpf_ringbuf_submit(d, BPF_RB_NO_WAKEUP); /* read every tick */
    return 0;
}
