/* The marker probe (see probe_marker.h). BPF side: bpf/marker.bpf.c. */
#include "agent/probes/probe_marker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "agent/probes/probe_common.h"
#include "bpf/marker.h"
#include "bpf/marker.skel.h"
#include "common/clock.h"
#include "common/name_id.h"

#define MARKER_NAMES_MAX 1024 /* announced names remembered; more are re-announced */

static const struct probe_uprobe_func marker_funcs[] = {
    {"argus_step", ARGUS_MARKER_STEP},
    {"argus_phase_begin", ARGUS_MARKER_PHASE_BEGIN},
    {"argus_phase_end", ARGUS_MARKER_PHASE_END},
};

static const char *const marker_libs[] = {"libargus-marker.so", NULL};

int probe_marker_decode(const struct argus_marker_record *r, struct agent_event *ev,
                        const char **name)
{
    memset(ev, 0, sizeof(*ev));
    ev->pid = r->pid;
    ev->tid = r->tid;
    ev->ts_ns = r->ts_ns;
    *name = NULL;
    switch (r->kind) {
    case ARGUS_MARKER_STEP:
        ev->kind = AGENT_EVENT_STEP;
        ev->step.number = r->step;
        ev->step.source = PROBE_MARKER_STEP_SOURCE;
        return 0;
    case ARGUS_MARKER_PHASE_BEGIN:
        if (r->name_len <= 1 || r->name_len > ARGUS_MARKER_NAME_LEN ||
            r->name[r->name_len - 1] != '\0')
            return -EINVAL;
        ev->kind = AGENT_EVENT_PHASE_BEGIN;
        ev->phase.name_id = name_id(r->name);
        *name = r->name;
        return 0;
    case ARGUS_MARKER_PHASE_END:
        ev->kind = AGENT_EVENT_PHASE_END;
        return 0;
    default:
        return -EINVAL;
    }
}

struct marker {
    struct probe_marker_config cfg;
    struct marker_bpf *skel;
    struct ring_buffer *ring;
    const struct event_sink *sink;
    struct probe_pids pids;
    struct probe_uprobes uprobes;
    struct probe_wakeup wakeup;
    uint64_t names[MARKER_NAMES_MAX];
    size_t nnames;
    uint64_t events, decode_errors, drops_reported;
    int delivered;
};

static void marker_announce(struct marker *m, uint64_t id, const char *name)
{
    for (size_t i = 0; i < m->nnames; i++)
        if (m->names[i] == id)
            return;
    m->sink->name(m->sink->ctx, id, name);
    if (m->nnames < MARKER_NAMES_MAX)
        m->names[m->nnames++] = id;
}

static int marker_on_record(void *ctx, void *data, size_t size)
{
    struct marker *m = ctx;
    struct agent_event ev;
    const char *name;

    if (size < sizeof(struct argus_marker_record) || probe_marker_decode(data, &ev, &name) < 0) {
        m->decode_errors++;
        return 0;
    }
    if (name)
        marker_announce(m, ev.phase.name_id, name);
    m->sink->event(m->sink->ctx, &ev);
    m->events++;
    m->delivered++;
    return 0;
}

static int marker_supported(char *why, size_t whylen)
{
    return probe_uprobe_supported(why, whylen);
}

static void *marker_create(const void *config, char *why, size_t whylen)
{
    struct marker *m = calloc(1, sizeof(*m));

    if (!m) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    if (config)
        m->cfg = *(const struct probe_marker_config *)config;
    m->wakeup = (struct probe_wakeup){-1, -1};
    m->uprobes = (struct probe_uprobes){.funcs = marker_funcs, .nfuncs = 3, .libs = marker_libs};
    return m;
}

static int marker_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct marker *m = state;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    m->sink = sink;
    m->skel = marker_bpf__open();
    if (!m->skel)
        goto fail;
    m->skel->rodata->marker_filter = m->cfg.all_processes ? 0 : 1;
    m->uprobes.multi = probe_uprobes_prepare(m->skel->progs.marker_call, NULL);
    step = "load";
    err = marker_bpf__load(m->skel);
    if (err < 0)
        goto fail;
    step = "ring buffer";
    m->ring = ring_buffer__new(bpf_map__fd(m->skel->maps.marker_ring), marker_on_record, m, NULL);
    err = m->ring ? 0 : -errno;
    if (err < 0)
        goto fail;
    step = "wakeup fd";
    err = probe_wakeup_open(&m->wakeup, ring_buffer__epoll_fd(m->ring), 100 * NSEC_PER_MSEC);
    if (err < 0)
        goto fail;
    m->uprobes.enter = m->skel->progs.marker_call;
    step = "attach";
    for (size_t i = 0; m->cfg.files && m->cfg.files[i]; i++) {
        err = probe_uprobes_attach_file(&m->uprobes, m->cfg.files[i]);
        if (err < 0)
            goto fail;
    }
    for (size_t i = 0; i < m->pids.n; i++) { /* tracked before start */
        err = probe_pids_update(&m->pids, m->skel->maps.marker_tracked, m->pids.v[i].pid,
                                m->pids.v[i].root, true);
        if (err < 0)
            goto fail;
    }
    return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    snprintf(why, whylen, "marker: %s: %s", step, strerror(-err));
    return err;
}

static int marker_fd(void *state)
{
    struct marker *m = state;

    return m->wakeup.epfd; /* a quarter-full ring, or every 100 ms */
}

static int marker_dispatch(void *state)
{
    struct marker *m = state;
    uint64_t now = clock_mono_ns();
    int err;

    probe_wakeup_drain(&m->wakeup);
    probe_uprobes_rescan(&m->uprobes, &m->pids, now);
    m->delivered = 0;
    err = ring_buffer__consume(m->ring);
    m->delivered += probe_report_drops(m->sink, m->skel->bss->marker_dropped, &m->drops_reported,
                                       "marker_ring_full");
    return err < 0 ? err : m->delivered;
}

static int marker_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct marker *m = state;
    struct bpf_map *map = m->skel ? m->skel->maps.marker_tracked : NULL;
    int err = probe_pids_update(&m->pids, map, pid, root, add);

    if (err < 0 || !add || !m->skel)
        return err;
    for (size_t i = 0; i < m->pids.n; i++)
        if (m->pids.v[i].pid == pid)
            err = probe_uprobes_scan(&m->uprobes, pid, m->pids.v[i].root);
    return err < 0 && err != -ESRCH ? err : 0;
}

static size_t marker_metrics(void *state, char *buf, size_t len)
{
    struct marker *m = state;
    size_t n = 0;

    n += probe_metric(buf + n, len - n, "marker", "events_total", m->events);
    n += probe_metric(buf + n, len - n, "marker", "dropped_total",
                      m->skel ? m->skel->bss->marker_dropped : 0);
    n += probe_metric(buf + n, len - n, "marker", "decode_errors_total", m->decode_errors);
    n += probe_metric(buf + n, len - n, "marker", "uprobes_attached", m->uprobes.attached);
    return n;
}

static void marker_destroy(void *state)
{
    struct marker *m = state;

    if (!m)
        return;
    probe_uprobes_detach(&m->uprobes);
    probe_wakeup_close(&m->wakeup);
    ring_buffer__free(m->ring);
    marker_bpf__destroy(m->skel);
    probe_pids_free(&m->pids);
    free(m);
}

const struct source_ops probe_marker_ops = {
    .name = "marker",
    .supported = marker_supported,
    .create = marker_create,
    .start = marker_start,
    .fd = marker_fd,
    .dispatch = marker_dispatch,
    .track = marker_track,
    .metrics = marker_metrics,
    .destroy = marker_destroy,
};
