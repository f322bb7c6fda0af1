/* Shared uprobe engine of the collectives and sync probes (see probe_calls.h). */
#include "agent/probes/probe_calls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "bpf/calls.skel.h"
#include "bpf/calls.h"
#include "common/clock.h"

_Static_assert(ARGUS_CALL_ENTRY_ONLY == PROBE_UPROBE_ENTRY_ONLY,
               "bpf/calls.h and probe_common.h name one cookie bit");

struct probe_calls {
    struct probe_calls_spec spec;
    struct calls_bpf *skel;
    struct ring_buffer *ring;
    struct probe_pids pids;
    struct probe_uprobes uprobes;
    const struct event_sink *sink;
    struct probe_wakeup wakeup;
    uint64_t records, short_records, drops_reported;
    int delivered;
};

struct probe_calls *probe_calls_new(const struct probe_calls_spec *spec)
{
    struct probe_calls *pc = calloc(1, sizeof(*pc));

    if (!pc)
        return NULL;
    pc->spec = *spec;
    pc->uprobes =
        (struct probe_uprobes){.funcs = spec->funcs, .nfuncs = spec->nfuncs, .libs = spec->libs};
    pc->wakeup = (struct probe_wakeup){-1, -1};
    return pc;
}

static int calls_on_record(void *ctx, void *data, size_t size)
{
    struct probe_calls *pc = ctx;

    const struct argus_call_record *r = data;

    if (size < sizeof(struct argus_call_record) ||
        ((r->cookie & ARGUS_CALL_TEXT) && size < sizeof(struct argus_call_text))) {
        pc->short_records++;
        return 0;
    }
    pc->records++;
    pc->delivered += pc->spec.on_record(pc->spec.owner, r);
    return 0;
}

int probe_calls_start(struct probe_calls *pc, const struct event_sink *sink, char *why,
                      size_t whylen)
{
    const char *step = "open";
    int err = -ENOMEM;

    pc->sink = sink;
    probe_libbpf_logging();
    pc->skel = calls_bpf__open();
    if (!pc->skel)
        goto fail;
    pc->skel->rodata->calls_filter = pc->spec.all_processes ? 0 : 1;
    pc->uprobes.multi =
        probe_uprobes_prepare(pc->skel->progs.calls_enter, pc->skel->progs.calls_exit);
    step = "load";
    err = calls_bpf__load(pc->skel);
    if (err < 0)
        goto fail;
    step = "ring buffer";
    pc->ring = ring_buffer__new(bpf_map__fd(pc->skel->maps.calls_ring), calls_on_record, pc, NULL);
    err = pc->ring ? 0 : -errno;
    if (err < 0)
        goto fail;
    step = "wakeup fd";
    err = probe_wakeup_open(&pc->wakeup, ring_buffer__epoll_fd(pc->ring), 100 * NSEC_PER_MSEC);
    if (err < 0)
        goto fail;
    pc->uprobes.enter = pc->skel->progs.calls_enter;
    pc->uprobes.exit = pc->skel->progs.calls_exit;
    step = "attach";
    for (size_t i = 0; pc->spec.files && pc->spec.files[i]; i++) {
        err = probe_uprobes_attach_file(&pc->uprobes, pc->spec.files[i]);
        if (err < 0)
            goto fail;
    }
    for (size_t i = 0; i < pc->pids.n; i++) { /* tracked before start */
        err = probe_pids_update(&pc->pids, pc->skel->maps.calls_tracked, pc->pids.v[i].pid,
                                pc->pids.v[i].root, true);
        if (err < 0)
            goto fail;
        probe_uprobes_scan(&pc->uprobes, pc->pids.v[i].pid, pc->pids.v[i].root);
    }
    return 0;
fail:
    if (err == 0)
        err = -errno ? -errno : -EINVAL;
    snprintf(why, whylen, "%s: %s calls.bpf.o: %s", pc->spec.probe, step, strerror(-err));
    return err;
}

int probe_calls_dispatch(struct probe_calls *pc)
{
    uint64_t now = clock_mono_ns();
    int err;

    if (!pc->ring)
        return 0;
    probe_wakeup_drain(&pc->wakeup);
    probe_uprobes_rescan(&pc->uprobes, &pc->pids, now);
    pc->delivered = 0;
    err = ring_buffer__consume(pc->ring);
    pc->delivered += probe_report_drops(pc->sink, pc->skel->bss->calls_dropped, &pc->drops_reported,
                                        pc->spec.drop_reason);
    return err < 0 ? err : pc->delivered;
}

int probe_calls_track(struct probe_calls *pc, uint32_t pid, const char *root, bool add)
{
    struct bpf_map *map = pc->skel ? pc->skel->maps.calls_tracked : NULL;
    int err = probe_pids_update(&pc->pids, map, pid, root, add);

    if (err < 0 || !add || !pc->skel)
        return err;
    for (size_t i = 0; i < pc->pids.n; i++)
        if (pc->pids.v[i].pid == pid)
            err = probe_uprobes_scan(&pc->uprobes, pid, pc->pids.v[i].root);
    return err < 0 && err != -ESRCH ? err : 0;
}

int probe_calls_fd(struct probe_calls *pc)
{
    return pc->wakeup.epfd;
}

size_t probe_calls_metrics(struct probe_calls *pc, char *buf, size_t len)
{
    const char *p = pc->spec.probe;
    size_t n = 0;

    n += probe_metric(buf + n, len - n, p, "records_total", pc->records);
    if (pc->skel) {
        n += probe_metric(buf + n, len - n, p, "dropped_total", pc->skel->bss->calls_dropped);
        n += probe_metric(buf + n, len - n, p, "unmatched_total", pc->skel->bss->calls_unmatched);
        n += probe_metric(buf + n, len - n, p, "abandoned_total", pc->skel->bss->calls_abandoned);
    }
    n += probe_metric(buf + n, len - n, p, "uprobes_attached", pc->uprobes.attached);
    n += probe_metric(buf + n, len - n, p, "uprobe_failures_total", pc->uprobes.failures);
    return n;
}

void probe_calls_free(struct probe_calls *pc)
{
    if (!pc)
        return;
    probe_uprobes_detach(&pc->uprobes);
    probe_wakeup_close(&pc->wakeup);
    ring_buffer__free(pc->ring);
    calls_bpf__destroy(pc->skel);
    probe_pids_free(&pc->pids);
    free(pc);
}
