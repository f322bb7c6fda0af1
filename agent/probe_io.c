/* The io probe (see probe_io.h). BPF side: bpf/io.bpf.c. */
#include "agent/probe_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "agent/probe_common.h"
#include "bpf/counters.h"
#include "bpf/io.skel.h"

int probe_io_decode(uint32_t key, uint64_t cur, uint64_t last, uint64_t ts, struct agent_event *out)
{
    return probe_counter_decode(key, cur, last, AGENT_COUNTER_IO_WAIT_NS, ts, out);
}

struct io_probe {
    struct io_bpf *skel;
    const struct event_sink *sink;
    struct probe_pids pids;
    struct probe_counter_table last;
    uint64_t events;
};

static int io_supported(char *why, size_t whylen)
{
    static const char *const tps[] = {"block_rq_issue", "block_rq_complete", NULL};

    return probe_tp_btf_supported(tps, why, whylen);
}

static void *io_create(const void *config, char *why, size_t whylen)
{
    struct io_probe *p = calloc(1, sizeof(*p));

    if (!p)
        snprintf(why, whylen, "out of memory");
    return p;
}

static int io_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct io_probe *p = state;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    p->sink = sink;
    p->skel = io_bpf__open();
    if (!p->skel)
        goto fail;
    step = "load";
    err = io_bpf__load(p->skel);
    if (err < 0)
        goto fail;
    step = "attach";
    err = io_bpf__attach(p->skel);
    if (err < 0)
        goto fail;
    for (size_t i = 0; i < p->pids.n; i++) {
        err = probe_pids_update(&p->pids, p->skel->maps.io_tracked, p->pids.v[i].pid, NULL, true);
        if (err < 0)
            goto fail;
    }
    return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    snprintf(why, whylen, "io: %s io.bpf.o: %s", step, strerror(-err));
    return err;
}

static int io_fd(void *state)
{
    return -1; /* polled every tick */
}

static int io_dispatch(void *state)
{
    struct io_probe *p = state;
    int n = probe_counters_poll(bpf_map__fd(p->skel->maps.io_wait_ns), &p->last,
                                AGENT_COUNTER_IO_WAIT_NS, p->sink);

    if (n > 0)
        p->events += (uint64_t)n;
    return n;
}

static int io_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct io_probe *p = state;

    return probe_pids_update(&p->pids, p->skel ? p->skel->maps.io_tracked : NULL, pid, root, add);
}

static size_t io_metrics(void *state, char *buf, size_t len)
{
    struct io_probe *p = state;

    return probe_metric(buf, len, "io", "events_total", p->events);
}

static void io_destroy(void *state)
{
    struct io_probe *p = state;

    if (!p)
        return;
    io_bpf__destroy(p->skel);
    probe_pids_free(&p->pids);
    probe_counters_free(&p->last);
    free(p);
}

const struct source_ops probe_io_ops = {
    .name = "io",
    .supported = io_supported,
    .create = io_create,
    .start = io_start,
    .fd = io_fd,
    .dispatch = io_dispatch,
    .track = io_track,
    .metrics = io_metrics,
    .destroy = io_destroy,
};
