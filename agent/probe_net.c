/* The net probe (see probe_net.h). BPF side: bpf/net.bpf.c. */
#include "agent/probe_net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "agent/probe_common.h"
#include "bpf/counters.h"
#include "bpf/net.skel.h"

int probe_net_decode(uint32_t key, uint64_t cur, uint64_t last, uint64_t ts,
                     struct agent_event *out)
{
    return probe_counter_decode(key, cur, last, AGENT_COUNTER_RETRANSMITS, ts, out);
}

struct net_probe {
    struct net_bpf *skel;
    const struct event_sink *sink;
    struct probe_pids pids;
    struct probe_counter_table last;
    uint64_t events;
};

static int net_supported(char *why, size_t whylen)
{
    static const char *const tps[] = {"inet_sock_set_state", "tcp_retransmit_skb", NULL};

    return probe_tp_btf_supported(tps, why, whylen);
}

static void *net_create(const void *config, char *why, size_t whylen)
{
    struct net_probe *p = calloc(1, sizeof(*p));

    if (!p)
        snprintf(why, whylen, "out of memory");
    return p;
}

static int net_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct net_probe *p = state;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    p->sink = sink;
    p->skel = net_bpf__open();
    if (!p->skel)
        goto fail;
    step = "load";
    err = net_bpf__load(p->skel);
    if (err < 0)
        goto fail;
    step = "attach";
    err = net_bpf__attach(p->skel);
    if (err < 0)
        goto fail;
    for (size_t i = 0; i < p->pids.n; i++) {
        err = probe_pids_update(&p->pids, p->skel->maps.net_tracked, p->pids.v[i].pid, NULL, true);
        if (err < 0)
            goto fail;
    }
    return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    snprintf(why, whylen, "net: %s net.bpf.o: %s", step, strerror(-err));
    return err;
}

static int net_fd(void *state)
{
    return -1; /* polled every tick */
}

static int net_dispatch(void *state)
{
    struct net_probe *p = state;
    int n = probe_counters_poll(bpf_map__fd(p->skel->maps.net_retransmits), &p->last,
                                AGENT_COUNTER_RETRANSMITS, p->sink);

    if (n > 0)
        p->events += (uint64_t)n;
    return n;
}

static int net_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct net_probe *p = state;

    return probe_pids_update(&p->pids, p->skel ? p->skel->maps.net_tracked : NULL, pid, root, add);
}

static size_t net_metrics(void *state, char *buf, size_t len)
{
    struct net_probe *p = state;

    return probe_metric(buf, len, "net", "events_total", p->events);
}

static void net_destroy(void *state)
{
    struct net_probe *p = state;

    if (!p)
        return;
    net_bpf__destroy(p->skel);
    probe_pids_free(&p->pids);
    probe_counters_free(&p->last);
    free(p);
}

const struct source_ops probe_net_ops = {
    .name = "net",
    .supported = net_supported,
    .create = net_create,
    .start = net_start,
    .fd = net_fd,
    .dispatch = net_dispatch,
    .track = net_track,
    .metrics = net_metrics,
    .destroy = net_destroy,
};
