/* Block I/O latency (tp_btf block_rq_issue -> block_rq_complete), summed per
 * node and per tracked process that issued the request. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/counters.h"
#include "bpf/tracked.bpf.h"

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(io_tracked);

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, ARGUS_COUNTERS_MAX);
    __type(key, __u32);
    __type(value, __u64);
} io_wait_ns SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH); /* a request never completed must not leak */
    __uint(max_entries, 16384);
    __type(key, __u64); /* struct request * */
    __type(value, struct argus_io_start);
} io_start SEC(".maps");

static __always_inline void add(__u32 key, __u64 ns)
{
    __u64 *v = bpf_map_lookup_elem(&io_wait_ns, &key);

    if (v)
        __sync_fetch_and_add(v, ns);
    else
        bpf_map_update_elem(&io_wait_ns, &key, &ns, BPF_NOEXIST);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(io_on_issue, struct request *rq)
{
    __u64 key = (__u64)rq;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct argus_io_start s = {.ts_ns = bpf_ktime_get_ns()};

    if (tgid && bpf_map_lookup_elem(&io_tracked, &tgid))
        s.tgid = tgid;
    bpf_map_update_elem(&io_start, &key, &s, BPF_ANY);
    return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(io_on_complete, struct request *rq, int error, unsigned int nr_bytes)
{
    __u64 key = (__u64)rq, now = bpf_ktime_get_ns();
    struct argus_io_start *s = bpf_map_lookup_elem(&io_start, &key);

    if (!s)
        return 0;
    if (now > s->ts_ns) {
        add(0, now - s->ts_ns);
        if (s->tgid)
            add(s->tgid, now - s->ts_ns);
    }
    bpf_map_delete_elem(&io_start, &key);
    return 0;
}
