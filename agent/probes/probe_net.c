/* The net probe (see probe_net.h). BPF side: bpf/net.bpf.c; the user side is the
 * shared counter probe (agent/probes/probe_counter.h). */
#include "agent/probes/probe_net.h"

#include "agent/probes/probe_common.h"
#include "agent/probes/probe_counter.h"
#include "bpf/counters.h"
#include "bpf/net.skel.h"

PROBE_COUNTER_SKELETON(net)

static const char *const net_tracepoints[] = {"inet_sock_set_state", "tcp_retransmit_skb", NULL};

static const struct probe_counter_desc net_desc = {
    .name = "net",
    .tracepoints = net_tracepoints,
    .counter = AGENT_COUNTER_RETRANSMITS,
    .tracked_map = "net_tracked",
    .counter_map = "net_retransmits",
    PROBE_COUNTER_SKELETON_FIELDS(net),
};

static int net_supported(char *why, size_t whylen)
{
    return probe_counter_supported(&net_desc, why, whylen);
}

static void *net_create(const void *config, char *why, size_t whylen)
{
    return probe_counter_create(&net_desc, why, whylen);
}

const struct source_ops probe_net_ops = {
    .name = "net",
    .supported = net_supported,
    .create = net_create,
    .start = probe_counter_start,
    .fd = probe_counter_fd,
    .dispatch = probe_counter_dispatch,
    .track = probe_counter_track,
    .metrics = probe_counter_metrics,
    .destroy = probe_counter_destroy,
};
