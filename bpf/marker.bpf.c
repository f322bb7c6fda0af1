/* uprobes on the marker ABI of libargus-marker.so (agent/marker/marker.c). */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/marker.h"
#include "bpf/ring.h"
#include "bpf/tracked.bpf.h"

#define MARKER_RING_BYTES (2 * 1024 * 1024)

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(marker_tracked);

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, MARKER_RING_BYTES);
} marker_ring SEC(".maps");

const volatile __u32 marker_filter = 1;
__u64 marker_dropped = 0;

static __always_inline struct argus_marker_record *marker_reserve(__u32 kind)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tgid = id >> 32;
    struct argus_marker_record *r;

    if (marker_filter && !bpf_map_lookup_elem(&marker_tracked, &tgid))
        return NULL;
    r = bpf_ringbuf_reserve(&marker_ring, sizeof(*r), 0);
    if (!r) {
        __sync_fetch_and_add(&marker_dropped, 1);
        return NULL;
    }
    r->ts_ns = bpf_ktime_get_ns();
    r->kind = kind;
    r->pid = tgid;
    r->tid = (__u32)id;
    r->step = 0;
    r->name_len = 0;
    r->name[0] = '\0';
    return r;
}

/* One program for the three functions: the attach cookie is the kind. */
SEC("uprobe")
int BPF_KPROBE(marker_call, __u64 arg)
{
    __u32 kind = (__u32)bpf_get_attach_cookie(ctx);
    struct argus_marker_record *r = marker_reserve(kind);

    if (!r)
        return 0;
    if (kind == ARGUS_MARKER_STEP)
        r->step = arg;
    else if (kind == ARGUS_MARKER_PHASE_BEGIN)
        r->name_len = bpf_probe_read_user_str(r->name, sizeof(r->name), (const void *)arg);
    bpf_ringbuf_submit(r, argus_ring_wakeup(&marker_ring, MARKER_RING_BYTES));
    return 0;
}
