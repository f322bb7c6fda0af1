/* CPU stack sampling of tracked processes on a perf event
 * (PERF_COUNT_SW_CPU_CLOCK, one per CPU, opened by user space). */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/ring.h"
#include "bpf/stacks.h"
#include "bpf/tracked.bpf.h"

#define STACKS_RING_BYTES (256 * 1024)

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(stacks_tracked);

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 16384);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, ARGUS_STACK_DEPTH * sizeof(__u64));
} stacks_map SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, STACKS_RING_BYTES);
} stacks_ring SEC(".maps");

__u64 stacks_dropped = 0;

SEC("perf_event")
int stacks_on_sample(struct bpf_perf_event_data *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tgid = id >> 32;
    struct argus_stack_sample *s;

    if (!tgid || !bpf_map_lookup_elem(&stacks_tracked, &tgid))
        return 0;
    s = bpf_ringbuf_reserve(&stacks_ring, sizeof(*s), 0);
    if (!s) {
        __sync_fetch_and_add(&stacks_dropped, 1);
        return 0;
    }
    s->ts_ns = bpf_ktime_get_ns();
    s->pid = tgid;
    s->tid = (__u32)id;
    s->cpu = bpf_get_smp_processor_id();
    s->kstack_id = bpf_get_stackid(ctx, &stacks_map, BPF_F_REUSE_STACKID);
    s->ustack_id = bpf_get_stackid(ctx, &stacks_map, BPF_F_USER_STACK | BPF_F_REUSE_STACKID);
    s->pad = 0;
    bpf_ringbuf_submit(s, argus_ring_wakeup(&stacks_ring, STACKS_RING_BYTES));
    return 0;
}
