/* The proc probe (see probe_proc.h). BPF side: bpf/proc.bpf.c. */
#include "agent/probes/probe_proc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <bpf/libbpf.h>

#include "agent/probes/probe_common.h"
#include "bpf/proc.h"
#include "bpf/proc.skel.h"
#include "common/clock.h"

int probe_proc_decode(const struct argus_proc_event *r, struct agent_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    if (r->kind == ARGUS_PROC_EXEC)
        ev->kind = AGENT_EVENT_PROC_EXEC;
    else if (r->kind == ARGUS_PROC_EXIT)
        ev->kind = AGENT_EVENT_PROC_EXIT;
    else
        return -EINVAL;
    ev->pid = r->pid;
    ev->ts_ns = r->ts_ns;
    if (ev->kind == AGENT_EVENT_PROC_EXIT && WIFSIGNALED(r->exit_code)) {
        ev->exit.code = -1;
        ev->exit.signal = WTERMSIG(r->exit_code);
        ev->exit.core = WCOREDUMP(r->exit_code) != 0;
    } else if (ev->kind == AGENT_EVENT_PROC_EXIT) {
        ev->exit.code = WEXITSTATUS(r->exit_code);
    }
    return 0;
}

struct proc {
    struct proc_bpf *skel;
    struct ring_buffer *ring;
    const struct event_sink *sink;
    struct probe_wakeup wakeup;
    uint64_t events, decode_errors, dropped_reported;
    int delivered;
};

static int proc_on_record(void *ctx, void *data, size_t size)
{
    struct proc *p = ctx;
    struct agent_event ev;

    if (size < sizeof(struct argus_proc_event) || probe_proc_decode(data, &ev) < 0) {
        p->decode_errors++;
        return 0;
    }
    p->sink->event(p->sink->ctx, &ev);
    p->events++;
    p->delivered++;
    return 0;
}

static int proc_supported(char *why, size_t whylen)
{
    static const char *const tps[] = {"sched_process_exec", "sched_process_exit", NULL};

    return probe_tp_btf_supported(tps, why, whylen);
}

static void *proc_create(const void *config, char *why, size_t whylen)
{
    struct proc *p = calloc(1, sizeof(*p));

    if (!p)
        snprintf(why, whylen, "out of memory");
    else
        p->wakeup = (struct probe_wakeup){-1, -1};
    return p;
}

static int proc_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct proc *p = state;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    p->sink = sink;
    p->skel = proc_bpf__open();
    if (!p->skel)
        goto fail;
    step = "load";
    err = proc_bpf__load(p->skel);
    if (err < 0)
        goto fail;
    step = "attach";
    err = proc_bpf__attach(p->skel);
    if (err < 0)
        goto fail;
    step = "ring buffer";
    p->ring = ring_buffer__new(bpf_map__fd(p->skel->maps.proc_events), proc_on_record, p, NULL);
    err = p->ring ? 0 : -errno;
    if (err < 0)
        goto fail;
    step = "wakeup fd";
    err = probe_wakeup_open(&p->wakeup, ring_buffer__epoll_fd(p->ring), 100 * NSEC_PER_MSEC);
    if (err == 0)
        return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    snprintf(why, whylen, "proc: %s proc.bpf.o: %s", step, strerror(-err));
    return err;
}

static int proc_fd(void *state)
{
    struct proc *p = state;

    return p->wakeup.epfd; /* a quarter-full ring, or every 100 ms */
}

static int proc_dispatch(void *state)
{
    struct proc *p = state;
    int err;

    p->delivered = 0;
    probe_wakeup_drain(&p->wakeup);
    err = ring_buffer__consume(p->ring);
    /* A drop means discovery must rescan /proc. */
    p->delivered += probe_report_drops(p->sink, p->skel->bss->proc_dropped, &p->dropped_reported,
                                       "proc_ring_full");
    return err < 0 ? err : p->delivered;
}

static size_t proc_metrics(void *state, char *buf, size_t len)
{
    struct proc *p = state;
    size_t n = 0;

    n += probe_metric(buf + n, len - n, "proc", "events_total", p->events);
    n += probe_metric(buf + n, len - n, "proc", "dropped_total",
                      p->skel ? p->skel->bss->proc_dropped : 0);
    return n;
}

static void proc_destroy(void *state)
{
    struct proc *p = state;

    if (!p)
        return;
    probe_wakeup_close(&p->wakeup);
    ring_buffer__free(p->ring);
    proc_bpf__destroy(p->skel);
    free(p);
}

const struct source_ops probe_proc_ops = {
    .name = "proc",
    .supported = proc_supported,
    .create = proc_create,
    .start = proc_start,
    .fd = proc_fd,
    .dispatch = proc_dispatch,
    .track = NULL,
    .metrics = proc_metrics,
    .destroy = proc_destroy,
};
