/* TCP retransmissions (tp_btf/tcp_retransmit_skb) per node and per tracked
 * process. Retransmits run from timers, so the owner is remembered per socket
 * when a tracked process moves it through a TCP state (connect, close). */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/counters.h"
#include "bpf/tracked.bpf.h"

char LICENSE[] SEC("license") = "GPL";

ARGUS_TRACKED_MAP(net_tracked);

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, ARGUS_COUNTERS_MAX);
    __type(key, __u32);
    __type(value, __u64);
} net_retransmits SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, __u64); /* struct sock * */
    __type(value, __u32);
} net_owner SEC(".maps");

static __always_inline void add(__u32 key)
{
    __u64 one = 1, *v = bpf_map_lookup_elem(&net_retransmits, &key);

    if (v)
        __sync_fetch_and_add(v, 1);
    else
        bpf_map_update_elem(&net_retransmits, &key, &one, BPF_NOEXIST);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(net_on_state, const struct sock *sk, int oldstate, int newstate)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    __u64 key = (__u64)sk;

    if (newstate == 7 /* TCP_CLOSE */) {
        bpf_map_delete_elem(&net_owner, &key);
        return 0;
    }
    if (bpf_map_lookup_elem(&net_tracked, &tgid))
        bpf_map_update_elem(&net_owner, &key, &tgid, BPF_ANY);
    return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(net_on_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
    __u64 key = (__u64)sk;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32, *owner = bpf_map_lookup_elem(&net_owner, &key);

    add(0);
    if (owner)
        add(*owner);
    else if (tgid && bpf_map_lookup_elem(&net_tracked, &tgid))
        add(tgid);
    return 0;
}
