#include "agent/probes/probe_counter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "agent/probes/probe_common.h"

struct probe_counter {
    const struct probe_counter_desc *desc;
    void *skel;
    struct bpf_map *tracked, *counters;
    const struct event_sink *sink;
    struct probe_pids pids;
    struct probe_counter_table last;
    uint64_t events, next_idle_poll_ns;
};

int probe_counter_supported(const struct probe_counter_desc *desc, char *why, size_t whylen)
{
    return probe_tp_btf_supported(desc->tracepoints, why, whylen);
}

void *probe_counter_create(const struct probe_counter_desc *desc, char *why, size_t whylen)
{
    struct probe_counter *p = calloc(1, sizeof(*p));

    if (!p)
        snprintf(why, whylen, "out of memory");
    else
        p->desc = desc;
    return p;
}

int probe_counter_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct probe_counter *p = state;
    const struct probe_counter_desc *d = p->desc;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    p->sink = sink;
    p->skel = d->open();
    if (!p->skel)
        goto fail;
    step = "load";
    err = d->load(p->skel);
    if (err < 0)
        goto fail;
    step = "attach";
    err = d->attach(p->skel);
    if (err < 0)
        goto fail;
    step = "find the maps of";
    err = -ENOENT;
    p->tracked = bpf_object__find_map_by_name(d->object(p->skel), d->tracked_map);
    p->counters = bpf_object__find_map_by_name(d->object(p->skel), d->counter_map);
    if (!p->tracked || !p->counters)
        goto fail;
    for (size_t i = 0; i < p->pids.n; i++) {
        err = probe_pids_update(&p->pids, p->tracked, p->pids.v[i].pid, NULL, true);
        if (err < 0)
            goto fail;
    }
    return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    p->tracked = p->counters = NULL;
    snprintf(why, whylen, "%s: %s %s.bpf.o: %s", d->name, step, d->name, strerror(-err));
    return err;
}

int probe_counter_fd(void *state)
{
    return -1; /* polled every tick */
}

int probe_counter_dispatch(void *state)
{
    struct probe_counter *p = state;
    int n;

    if (probe_idle_skip(&p->pids, &p->next_idle_poll_ns, clock_mono_ns()))
        return 0;
    n = probe_counters_poll(bpf_map__fd(p->counters), &p->last, p->desc->counter, p->sink);
    if (n > 0)
        p->events += (uint64_t)n;
    return n;
}

int probe_counter_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct probe_counter *p = state;

    return probe_pids_update(&p->pids, p->tracked, pid, root, add);
}

size_t probe_counter_metrics(void *state, char *buf, size_t len)
{
    struct probe_counter *p = state;

    return probe_metric(buf, len, p->desc->name, "events_total", p->events);
}

void probe_counter_destroy(void *state)
{
    struct probe_counter *p = state;

    if (!p)
        return;
    if (p->skel)
        p->desc->destroy(p->skel);
    probe_pids_free(&p->pids);
    probe_counters_free(&p->last);
    free(p);
}
