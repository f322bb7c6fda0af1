/* The stacks probe (see probe_stacks.h). BPF side: bpf/stacks.bpf.c. */
#include "agent/probe_stacks.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/probe_common.h"
#include "agent/symcache.h"
#include "bpf/stacks.h"
#include "bpf/stacks.skel.h"

#define NAMES_SLOTS 65536 /* power of two; the name table holds at most half */
#define STACKS_MAX_CPUS 1024

struct stacks {
    struct probe_stacks_config cfg;
    struct stacks_bpf *skel;
    struct ring_buffer *ring;
    struct symcache *sym;
    struct probe_pids pids;
    int perf_fds[STACKS_MAX_CPUS];
    struct bpf_link *links[STACKS_MAX_CPUS];
    int ncpus;
    char **names; /* id -> name */
    uint32_t nnames;
    uint32_t *slots; /* hash of names: id + 1, 0 = empty */
    struct probe_stacks_sample *window;
    size_t head, count; /* ring of cfg.window samples */
    uint64_t samples, lost_stacks;
    int delivered;
};

size_t probe_stacks_aggregate(const struct probe_stacks_sample *samples, size_t n, uint32_t pid,
                              uint64_t from_ns, uint64_t to_ns, uint64_t *self, uint64_t *total,
                              size_t nnames)
{
    size_t matched = 0;

    for (size_t i = 0; i < n; i++) {
        const struct probe_stacks_sample *s = &samples[i];

        if (s->pid != pid || s->ts_ns < from_ns || s->ts_ns >= to_ns || !s->nframes)
            continue;
        matched++;
        if (s->frames[0] < nnames)
            self[s->frames[0]]++;
        for (uint32_t f = 0; f < s->nframes && f < PROBE_STACKS_FRAMES; f++) {
            bool seen = false;

            for (uint32_t g = 0; g < f && !seen; g++) /* recursion counts once */
                seen = s->frames[g] == s->frames[f];
            if (!seen && s->frames[f] < nnames)
                total[s->frames[f]]++;
        }
    }
    return matched;
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* Intern name; returns its id, or 0 ("[other]") when the table is full. */
static uint32_t stacks_intern(struct stacks *st, const char *name)
{
    uint32_t h = name_hash(name);

    for (uint32_t i = 0; i < NAMES_SLOTS; i++) {
        uint32_t *slot = &st->slots[(h + i) & (NAMES_SLOTS - 1)];
        char *copy;

        if (*slot && !strcmp(st->names[*slot - 1], name))
            return *slot - 1;
        if (*slot)
            continue;
        if (st->nnames >= NAMES_SLOTS / 2 || !(copy = strdup(name)))
            return 0;
        st->names[st->nnames] = copy;
        *slot = ++st->nnames;
        return st->nnames - 1;
    }
    return 0;
}

static void stacks_add_frames(struct stacks *st, const struct argus_stack_sample *r, int id,
                              bool user, struct probe_stacks_sample *out)
{
    __u64 ips[ARGUS_STACK_DEPTH];
    char name[256];

    if (id < 0)
        return;
    if (bpf_map_lookup_elem(bpf_map__fd(st->skel->maps.stacks_map), &id, ips) < 0) {
        st->lost_stacks++;
        return;
    }
    for (int i = 0; i < ARGUS_STACK_DEPTH && ips[i] && out->nframes < PROBE_STACKS_FRAMES; i++) {
        if (user)
            symcache_user(st->sym, r->pid, NULL, ips[i], name, sizeof(name));
        else
            symcache_kernel(st->sym, ips[i], name, sizeof(name));
        out->frames[out->nframes++] = stacks_intern(st, name);
    }
}

static int stacks_on_record(void *ctx, void *data, size_t size)
{
    struct stacks *st = ctx;
    const struct argus_stack_sample *r = data;
    struct probe_stacks_sample *s;

    if (size < sizeof(*r))
        return 0;
    s = &st->window[st->head];
    st->head = (st->head + 1) % st->cfg.window;
    if (st->count < st->cfg.window)
        st->count++;
    memset(s, 0, sizeof(*s));
    s->ts_ns = r->ts_ns;
    s->pid = r->pid;
    stacks_add_frames(st, r, r->kstack_id, false, s);
    stacks_add_frames(st, r, r->ustack_id, true, s);
    st->samples++;
    st->delivered++;
    return 0;
}

static int stacks_supported(char *why, size_t whylen)
{
    return probe_perf_supported(why, whylen);
}

static void stacks_destroy(void *state);

static void *stacks_create(const void *config, char *why, size_t whylen)
{
    struct stacks *st = calloc(1, sizeof(*st));

    if (!st)
        goto fail;
    if (config)
        st->cfg = *(const struct probe_stacks_config *)config;
    if (!st->cfg.frequency_hz)
        st->cfg.frequency_hz = PROBE_STACKS_DEFAULT_HZ;
    if (st->cfg.frequency_hz > PROBE_STACKS_MAX_HZ)
        st->cfg.frequency_hz = PROBE_STACKS_MAX_HZ;
    if (!st->cfg.window)
        st->cfg.window = 16384;
    for (int i = 0; i < STACKS_MAX_CPUS; i++)
        st->perf_fds[i] = -1;
    st->names = calloc(NAMES_SLOTS / 2, sizeof(*st->names));
    st->slots = calloc(NAMES_SLOTS, sizeof(*st->slots));
    st->window = calloc(st->cfg.window, sizeof(*st->window));
    st->sym = symcache_new(NULL);
    if (st->names && st->slots && st->window && st->sym) {
        stacks_intern(st, "[other]"); /* id 0 */
        return st;
    }
fail:
    stacks_destroy(st);
    snprintf(why, whylen, "out of memory");
    return NULL;
}

static int stacks_open_perf(struct stacks *st)
{
    struct perf_event_attr attr = {
        .type = PERF_TYPE_SOFTWARE,
        .config = PERF_COUNT_SW_CPU_CLOCK,
        .size = sizeof(attr),
        .freq = 1,
        .sample_freq = st->cfg.frequency_hz,
    };

    st->ncpus = libbpf_num_possible_cpus();
    if (st->ncpus <= 0)
        return st->ncpus < 0 ? st->ncpus : -EINVAL;
    if (st->ncpus > STACKS_MAX_CPUS)
        st->ncpus = STACKS_MAX_CPUS;
    for (int cpu = 0; cpu < st->ncpus; cpu++) {
        int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

        if (fd < 0) {
            if (errno == ENODEV) /* possible but offline */
                continue;
            return -errno;
        }
        st->perf_fds[cpu] = fd;
        st->links[cpu] = bpf_program__attach_perf_event(st->skel->progs.stacks_on_sample, fd);
        if (!st->links[cpu])
            return -errno;
    }
    return 0;
}

static int stacks_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct stacks *st = state;
    const char *step = "open";
    int err = -ENOMEM;

    probe_libbpf_logging();
    st->skel = stacks_bpf__open();
    if (!st->skel)
        goto fail;
    step = "load";
    err = stacks_bpf__load(st->skel);
    if (err < 0)
        goto fail;
    step = "perf_event_open";
    err = stacks_open_perf(st);
    if (err < 0)
        goto fail;
    step = "ring buffer";
    st->ring =
        ring_buffer__new(bpf_map__fd(st->skel->maps.stacks_ring), stacks_on_record, st, NULL);
    err = st->ring ? 0 : -errno;
    for (size_t i = 0; err == 0 && i < st->pids.n; i++)
        err = probe_pids_update(&st->pids, st->skel->maps.stacks_tracked, st->pids.v[i].pid,
                                st->pids.v[i].root, true);
    if (err == 0)
        return 0;
fail:
    if (err == 0)
        err = -EINVAL;
    snprintf(why, whylen, "stacks: %s: %s", step, strerror(-err));
    return err;
}

static int stacks_fd(void *state)
{
    return -1; /* at most 99 Hz per CPU: consumed every tick */
}

static int stacks_dispatch(void *state)
{
    struct stacks *st = state;
    int err;

    st->delivered = 0;
    err = ring_buffer__consume(st->ring);
    return err < 0 ? err : 0; /* samples are kept, not delivered as events */
}

static int stacks_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct stacks *st = state;

    if (!add)
        symcache_forget(st->sym, pid);
    return probe_pids_update(&st->pids, st->skel ? st->skel->maps.stacks_tracked : NULL, pid, root,
                             add);
}

static int frame_cmp(const void *a, const void *b)
{
    const struct probe_stacks_frame *x = a, *y = b;

    if (x->self != y->self)
        return x->self < y->self ? 1 : -1;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return strcmp(x->name, y->name);
}

size_t probe_stacks_top_frames(void *state, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                               struct probe_stacks_frame *out, size_t max)
{
    struct stacks *st = state;
    uint64_t *self = calloc(st->nnames, sizeof(*self)), *total = calloc(st->nnames, sizeof(*total));
    struct probe_stacks_frame *all = NULL;
    size_t n = 0;

    if (!self || !total || !st->nnames)
        goto out;
    probe_stacks_aggregate(st->window, st->count, pid, from_ns, to_ns, self, total, st->nnames);
    all = calloc(st->nnames, sizeof(*all));
    if (!all)
        goto out;
    for (uint32_t id = 0; id < st->nnames; id++) {
        if (!total[id])
            continue;
        snprintf(all[n].name, sizeof(all[n].name), "%s", st->names[id]);
        all[n].self = self[id];
        all[n].total = total[id];
        n++;
    }
    qsort(all, n, sizeof(*all), frame_cmp);
    if (n > max)
        n = max;
    memcpy(out, all, n * sizeof(*out));
out:
    free(self);
    free(total);
    free(all);
    return n;
}

static size_t stacks_metrics(void *state, char *buf, size_t len)
{
    struct stacks *st = state;
    size_t n = 0;

    n += probe_metric(buf + n, len - n, "stacks", "samples_total", st->samples);
    n += probe_metric(buf + n, len - n, "stacks", "dropped_total",
                      st->skel ? st->skel->bss->stacks_dropped : 0);
    n += probe_metric(buf + n, len - n, "stacks", "lost_stacks_total", st->lost_stacks);
    return n;
}

static void stacks_destroy(void *state)
{
    struct stacks *st = state;

    if (!st)
        return;
    for (int i = 0; i < STACKS_MAX_CPUS; i++) {
        bpf_link__destroy(st->links[i]);
        if (st->perf_fds[i] >= 0)
            close(st->perf_fds[i]);
    }
    ring_buffer__free(st->ring);
    stacks_bpf__destroy(st->skel);
    for (uint32_t i = 0; st->names && i < st->nnames; i++)
        free(st->names[i]);
    free(st->names);
    free(st->slots);
    free(st->window);
    symcache_free(st->sym);
    probe_pids_free(&st->pids);
    free(st);
}

const struct source_ops probe_stacks_ops = {
    .name = "stacks",
    .supported = stacks_supported,
    .create = stacks_create,
    .start = stacks_start,
    .fd = stacks_fd,
    .dispatch = stacks_dispatch,
    .track = stacks_track,
    .metrics = stacks_metrics,
    .destroy = stacks_destroy,
};
