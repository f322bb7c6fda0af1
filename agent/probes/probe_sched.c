/* The sched probe (see probe_sched.h). BPF side: bpf/sched.bpf.c. */
#include "agent/probes/probe_sched.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent/probes/probe_common.h"
#include "agent/probes/sched_ends.h"
#include "bpf/sched.h"
#include "bpf/sched.skel.h"
#include "common/array.h"
#include "common/clock.h"

#define SCHED_READ_BYTES (64 * 1024) /* 2,730 reports per read() */

int probe_sched_decode(const struct argus_sched_delta *d, uint64_t ts, struct agent_event out[2])
{
    const struct agent_event ev = {
        .kind = AGENT_EVENT_COUNTER, .pid = d->tgid, .tid = d->tid, .ts_ns = ts};
    int n = 0;

    if (d->off_cpu_ns) {
        out[n] = ev;
        out[n].counter.counter = AGENT_COUNTER_OFF_CPU_NS;
        out[n++].counter.value = d->off_cpu_ns;
    }
    if (d->runq_ns) {
        out[n] = ev;
        out[n].counter.counter = AGENT_COUNTER_RUNQ_NS;
        out[n++].counter.value = d->runq_ns;
    }
    return n;
}

/* A tracked process's own iterator (the kernel walks its threads only). */
struct sched_iter {
    uint32_t pid;
    struct bpf_link *link;
};

struct sched {
    struct sched_bpf *skel;
    bool per_pid;             /* the kernel filters task iterators by pid (6.1+) */
    struct sched_iter *iters; /* per_pid: one per tracked process */
    size_t niters, iters_cap;
    struct ring_buffer *ends;
    struct sched_ends held; /* thread ends waiting for their free */
    const struct event_sink *sink;
    struct probe_pids pids;
    unsigned char *buf; /* SCHED_READ_BYTES */
    uint64_t now, events, reports, ends_seen, reads, read_errors, next_idle_poll_ns;
};

static void sched_emit(struct sched *s, const struct argus_sched_delta *d)
{
    struct agent_event ev[2];
    int k = probe_sched_decode(d, s->now, ev);

    s->reports++;
    for (int i = 0; i < k; i++)
        s->sink->event(s->sink->ctx, &ev[i]);
    s->events += (uint64_t)k;
}

/* A thread-end record from the ring: held for its free, or reported. */
static int sched_on_end(void *ctx, void *data, size_t len)
{
    struct sched *s = ctx;
    struct argus_sched_delta d, out;

    if (len < sizeof(d))
        return 0;
    memcpy(&d, data, sizeof(d));
    if (sched_ends_add(&s->held, &d, s->now, &out) == 1) {
        s->ends_seen++;
        sched_emit(s, &out);
    }
    return 0;
}

/* The thread ends from the ring, then the exits whose free did not come in
 * time, from their exit's reading. */
static void sched_read_ends(struct sched *s)
{
    struct argus_sched_delta out;

    ring_buffer__consume(s->ends);
    while (sched_ends_expire(&s->held, s->now, &out) == 1) {
        s->ends_seen++;
        sched_emit(s, &out);
    }
}

/* One run of an iterator: each report it writes. Returns 0 or -errno. */
static int sched_read_iter(struct sched *s, struct bpf_link *link)
{
    size_t carry = 0;
    int fd, err = 0;

    fd = bpf_iter_create(bpf_link__fd(link));
    if (fd < 0) {
        s->read_errors++;
        return -errno;
    }
    for (;;) {
        ssize_t n = read(fd, s->buf + carry, SCHED_READ_BYTES - carry);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? -errno : 0;
            break;
        }
        size_t len = carry + (size_t)n, off = 0;
        for (; off + sizeof(struct argus_sched_delta) <= len;
             off += sizeof(struct argus_sched_delta)) {
            struct argus_sched_delta d;

            memcpy(&d, s->buf + off, sizeof(d));
            sched_emit(s, &d);
        }
        carry = len - off; /* a report split between two reads */
        memmove(s->buf, s->buf + off, carry);
    }
    close(fd);
    if (err < 0)
        s->read_errors++;
    return err;
}

/* The threads freed since the last read, then the iterators: one walk of
 * every task on the node, or each tracked process's own. Returns 0 or the
 * first -errno. */
static int sched_read(struct sched *s)
{
    int err = 0;

    s->now = clock_mono_ns();
    s->reads++;
    sched_read_ends(s);
    if (!s->per_pid)
        return sched_read_iter(s, s->skel->links.sched_iter);
    for (size_t i = 0; i < s->niters; i++) {
        int e = sched_read_iter(s, s->iters[i].link);
        err = err ? err : e;
    }
    return err;
}

/* sched_read for pid alone: with an iterator per process, only its own
 * runs (the others wait for the tick). */
static void sched_read_pid(struct sched *s, uint32_t pid)
{
    if (!s->per_pid) {
        sched_read(s);
        return;
    }
    s->now = clock_mono_ns();
    sched_read_ends(s);
    for (size_t i = 0; i < s->niters; i++)
        if (s->iters[i].pid == pid)
            sched_read_iter(s, s->iters[i].link);
}

/* Does this kernel's task iterator take a pid (bpf_iter_aux_info.task,
 * 6.1+)? An older one would walk every task for each link. */
static bool sched_iter_filters(void)
{
    struct btf *btf = btf__load_vmlinux_btf();
    bool ok = false;

    if (!btf)
        return false;
    int id = btf__find_by_name_kind(btf, "bpf_iter_aux_info", BTF_KIND_STRUCT);
    if (id > 0) {
        const struct btf_type *t = btf__type_by_id(btf, (uint32_t)id);
        const struct btf_member *m = btf_members(t);

        for (int i = 0; i < btf_vlen(t) && !ok; i++)
            ok = strcmp(btf__name_by_offset(btf, m[i].name_off), "task") == 0;
    }
    btf__free(btf);
    return ok;
}

/* per_pid: make (add) or drop pid's own iterator. Returns 0 or -errno. */
static int sched_iter_update(struct sched *s, uint32_t pid, bool add)
{
    for (size_t i = 0; i < s->niters; i++) {
        if (s->iters[i].pid != pid)
            continue;
        if (add)
            return 0;
        bpf_link__destroy(s->iters[i].link);
        s->iters[i] = s->iters[--s->niters];
        return 0;
    }
    if (!add)
        return 0;
    union bpf_iter_link_info info = {.task = {.pid = pid}};
    LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
    if (array_reserve((void **)&s->iters, &s->iters_cap, s->niters + 1, sizeof(*s->iters)) < 0)
        return -ENOMEM;
    struct bpf_link *link = bpf_program__attach_iter(s->skel->progs.sched_iter, &opts);
    if (!link)
        return -errno;
    s->iters[s->niters++] = (struct sched_iter){pid, link};
    return 0;
}

static int sched_supported(char *why, size_t whylen)
{
    static const char *const tps[] = {"sched_process_exit", "sched_process_free", NULL};

    return probe_tp_btf_supported(tps, why, whylen);
}

static void sched_destroy(void *state);

static void *sched_create(const void *config, char *why, size_t whylen)
{
    struct sched *s = calloc(1, sizeof(*s));

    (void)config;
    if (s)
        s->buf = malloc(SCHED_READ_BYTES);
    if (!s || !s->buf) {
        sched_destroy(s);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    return s;
}

/* Mirror pid into the BPF maps: when it was tracked, then tracked. */
static int sched_mirror(struct sched *s, uint32_t pid, const char *root, bool add)
{
    uint64_t since = clock_mono_ns();

    if (s->skel && add &&
        bpf_map_update_elem(bpf_map__fd(s->skel->maps.sched_since), &pid, &since, BPF_NOEXIST) <
            0 &&
        errno != EEXIST) /* tracked again (a new root): keep when it began */
        return -errno;
    int err = s->skel && s->per_pid ? sched_iter_update(s, pid, add) : 0;

    if (err < 0)
        return err;
    err = probe_pids_update(&s->pids, s->skel ? s->skel->maps.sched_tracked : NULL, pid, root, add);
    if (s->skel && !add)
        bpf_map_delete_elem(bpf_map__fd(s->skel->maps.sched_since), &pid);
    return err;
}

static int sched_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct sched *s = state;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    s->sink = sink;
    s->skel = sched_bpf__open();
    if (!s->skel)
        goto fail;
    step = "load";
    err = sched_bpf__load(s->skel);
    if (err < 0)
        goto fail;
    step = "attach";
    err = sched_bpf__attach(s->skel);
    if (err < 0)
        goto fail;
    s->per_pid = sched_iter_filters();
    if (!s->skel->links.sched_iter) { /* iterators are not auto-attached by every libbpf */
        s->skel->links.sched_iter = bpf_program__attach_iter(s->skel->progs.sched_iter, NULL);
        if (!s->skel->links.sched_iter) {
            err = -errno;
            goto fail;
        }
    }
    step = "ring of";
    s->ends = ring_buffer__new(bpf_map__fd(s->skel->maps.sched_ends), sched_on_end, s, NULL);
    if (!s->ends) {
        err = -errno;
        goto fail;
    }
    for (size_t i = 0; i < s->pids.n; i++) {
        err = sched_mirror(s, s->pids.v[i].pid, NULL, true);
        if (err < 0)
            goto fail;
    }
    step = "first read of";
    err = sched_read(s);
    if (err < 0)
        goto fail;
    return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    snprintf(why, whylen, "sched: %s sched.bpf.o: %s", step, strerror(-err));
    return err;
}

static int sched_fd(void *state)
{
    return -1; /* polled every tick */
}

static int sched_dispatch(void *state)
{
    struct sched *s = state;
    uint64_t before = s->events;

    if (probe_idle_skip(&s->pids, &s->next_idle_poll_ns, clock_mono_ns()))
        return 0;
    sched_read(s);
    return (int)(s->events - before);
}

static int sched_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct sched *s = state;
    int err;

    if (!add && s->skel)
        sched_read_pid(s, pid); /* deliver what its threads did before it goes */
    err = sched_mirror(s, pid, root, add);
    if (add && err == 0 && s->skel)
        sched_read_pid(s, pid); /* its threads' first readings: they count from now */
    return err;
}

/* Stopping: the ends still held go out now, from their exit's reading. */
static void sched_flush(void *state)
{
    struct sched *s = state;
    struct argus_sched_delta out;

    s->now = clock_mono_ns();
    sched_read_ends(s);
    while (sched_ends_flush(&s->held, &out) == 1) {
        s->ends_seen++;
        sched_emit(s, &out);
    }
}

static size_t sched_metrics(void *state, char *buf, size_t len)
{
    struct sched *s = state;
    size_t n = 0;

    n += probe_metric(buf + n, len - n, "sched", "events_total", s->events);
    n += probe_metric(buf + n, len - n, "sched", "reports_total", s->reports);
    n += probe_metric(buf + n, len - n, "sched", "threads_ended_total", s->ends_seen);
    n += probe_metric(buf + n, len - n, "sched", "reads_total", s->reads);
    n += probe_metric(buf + n, len - n, "sched", "iterators", s->per_pid ? s->niters : 1);
    n += probe_metric(buf + n, len - n, "sched", "read_errors_total", s->read_errors);
    n += probe_metric(buf + n, len - n, "sched", "ends_lost_total",
                      s->skel ? s->skel->bss->sched_ends_lost : 0);
    n += probe_metric(buf + n, len - n, "sched", "ends_from_exit_total", s->held.from_exit);
    n += probe_metric(buf + n, len - n, "sched", "ends_late_free_total", s->held.late_frees);
    n += probe_metric(buf + n, len - n, "sched", "ends_held", sched_ends_held(&s->held));
    return n;
}

static void sched_destroy(void *state)
{
    struct sched *s = state;

    if (!s)
        return;
    ring_buffer__free(s->ends);
    sched_ends_free(&s->held);
    for (size_t i = 0; i < s->niters; i++)
        bpf_link__destroy(s->iters[i].link);
    free(s->iters);
    sched_bpf__destroy(s->skel);
    probe_pids_free(&s->pids);
    free(s->buf);
    free(s);
}

const struct source_ops probe_sched_ops = {
    .name = "sched",
    .supported = sched_supported,
    .create = sched_create,
    .start = sched_start,
    .fd = sched_fd,
    .dispatch = sched_dispatch,
    .track = sched_track,
    .metrics = sched_metrics,
    .flush = sched_flush,
    .destroy = sched_destroy,
};
