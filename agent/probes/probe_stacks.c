/* The stacks probe (see probe_stacks.h). BPF side: bpf/stacks.bpf.c; the
 * symbolizer thread: agent/probes/stacks_worker.c. */
#include "agent/probes/probe_stacks.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/probes/probe_common.h"
#include "agent/probes/stacks_worker.h"
#include "bpf/stacks.h"
#include "bpf/stacks.skel.h"
#include "common/clock.h"

#define STACKS_MAX_CPUS 1024
#define STACKS_DEFAULT_WINDOW 16384
#define STACKS_LAST_MAX 256 /* processes whose last sample is kept */

/* A sample handed to the symbolizer and not back yet. */
struct stacks_pending {
    uint64_t ts_ns;
    uint32_t pid;
};

struct stacks {
    struct probe_stacks_config cfg;
    const struct event_sink *sink;
    struct stacks_bpf *skel;
    struct ring_buffer *ring;
    struct probe_wakeup wakeup;
    struct stacks_worker *worker;
    struct probe_pids pids;
    int perf_fds[STACKS_MAX_CPUS];
    struct bpf_link *links[STACKS_MAX_CPUS];
    int ncpus;
    struct probe_stacks_sample *window; /* named samples, a ring of cfg.window */
    size_t head, count;
    struct stacks_pending *pending; /* a ring of cfg.queue, by push order */
    uint64_t pending_first, pending_next;
    uint64_t pending_min_ts; /* of pending[first, next); valid when pending_min_ok */
    bool pending_min_ok;
    uint64_t samples, lost_stacks, unresolved;
    uint64_t window_short; /* queries reaching back past the window's oldest sample */
    uint64_t ring_drops_reported, queue_drops_reported;
    int delivered;
    /* the last named sample of each tracked process, however old (a hung
     * rank is sampled no more while the window moves on) */
    struct probe_stacks_sample last[STACKS_LAST_MAX];
    size_t nlast;
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

/* --- the main-loop half: record, take back ------------------------------- */

int probe_stacks_record(void *state, const struct stacks_raw *raw)
{
    struct stacks *st = state;
    int err;

    st->samples++;
    err = stacks_worker_push(st->worker, raw);
    if (err < 0)
        return err; /* counted by the worker as dropped */
    st->pending[st->pending_next++ % st->cfg.queue] = (struct stacks_pending){raw->ts_ns, raw->pid};
    st->pending_min_ok = false;
    return 0;
}

/* Copy up to room addresses of stack id from the stack map into ips. */
static uint16_t stacks_read_ips(struct stacks *st, int id, uint64_t *ips, size_t room)
{
    __u64 stack[ARGUS_STACK_DEPTH];
    uint16_t n = 0;

    if (id < 0)
        return 0; /* no stack of that kind (user-mode samples have no kernel one) */
    if (bpf_map_lookup_elem(bpf_map__fd(st->skel->maps.stacks_map), &id, stack) < 0) {
        st->lost_stacks++;
        return 0;
    }
    for (int i = 0; i < ARGUS_STACK_DEPTH && stack[i] && n < room; i++)
        ips[n++] = stack[i];
    return n;
}

static int stacks_on_record(void *ctx, void *data, size_t size)
{
    struct stacks *st = ctx;
    const struct argus_stack_sample *r = data;
    struct stacks_raw raw;

    if (size < sizeof(*r))
        return 0;
    raw.ts_ns = r->ts_ns;
    raw.pid = r->pid;
    raw.nkernel = stacks_read_ips(st, r->kstack_id, raw.ips, PROBE_STACKS_FRAMES);
    raw.nuser =
        stacks_read_ips(st, r->ustack_id, raw.ips + raw.nkernel, PROBE_STACKS_FRAMES - raw.nkernel);
    probe_stacks_record(st, &raw);
    return 0;
}

/* Keep s as its process's last sample (not when STACKS_LAST_MAX others
 * are kept). */
static void stacks_keep_last(struct stacks *st, const struct probe_stacks_sample *s)
{
    size_t i = 0;

    while (i < st->nlast && st->last[i].pid != s->pid)
        i++;
    if (i == STACKS_LAST_MAX)
        return;
    st->nlast += i == st->nlast;
    st->last[i] = *s;
}

static void stacks_forget_last(struct stacks *st, uint32_t pid)
{
    for (size_t i = 0; i < st->nlast; i++)
        if (st->last[i].pid == pid) {
            st->last[i] = st->last[--st->nlast];
            return;
        }
}

/* Move what the symbolizer finished into the window. */
static void stacks_take(struct stacks *st)
{
    size_t n, room;

    do { /* again only when the window's end cut a take short */
        room = st->cfg.window - st->head;
        n = stacks_worker_take(st->worker, &st->window[st->head], room);
        for (size_t i = 0; i < n; i++)
            if (st->window[st->head + i].nframes)
                stacks_keep_last(st, &st->window[st->head + i]);
        st->head = (st->head + n) % st->cfg.window;
        st->count = st->count + n < st->cfg.window ? st->count + n : st->cfg.window;
        st->pending_first += n;
        if (n)
            st->pending_min_ok = false;
    } while (n == room); /* room > 0: head < window */
}

/* Read the BPF ring (cheap: no symbols) and take results. */
static int stacks_drain(struct stacks *st)
{
    int err = st->ring ? ring_buffer__consume(st->ring) : 0;

    stacks_worker_kick(st->worker);
    stacks_take(st);
    return err < 0 ? err : 0;
}

static uint64_t stacks_pending_min_ts(struct stacks *st)
{
    if (!st->pending_min_ok) {
        st->pending_min_ts = UINT64_MAX;
        for (uint64_t s = st->pending_first; s < st->pending_next; s++) {
            const struct stacks_pending *p = &st->pending[s % st->cfg.queue];

            if (p->ts_ns < st->pending_min_ts)
                st->pending_min_ts = p->ts_ns;
        }
        st->pending_min_ok = true;
    }
    return st->pending_min_ts;
}

bool probe_stacks_settled(void *state, uint64_t to_ns)
{
    struct stacks *st = state;

    stacks_drain(st);
    return stacks_pending_min_ts(st) >= to_ns;
}

static size_t stacks_pending_count(const struct stacks *st, uint32_t pid, uint64_t from_ns,
                                   uint64_t to_ns)
{
    size_t n = 0;

    for (uint64_t s = st->pending_first; s < st->pending_next; s++) {
        const struct stacks_pending *p = &st->pending[s % st->cfg.queue];

        n += p->pid == pid && p->ts_ns >= from_ns && p->ts_ns < to_ns;
    }
    return n;
}

/* --- source ops ------------------------------------------------------------ */

static int stacks_supported(char *why, size_t whylen)
{
    return probe_perf_supported(why, whylen);
}

static void stacks_destroy(void *state);

static void stacks_defaults(struct probe_stacks_config *c)
{
    if (!c->frequency_hz)
        c->frequency_hz = PROBE_STACKS_DEFAULT_HZ;
    if (c->frequency_hz > PROBE_STACKS_MAX_HZ)
        c->frequency_hz = PROBE_STACKS_MAX_HZ;
    if (!c->window)
        c->window = STACKS_DEFAULT_WINDOW;
    if (!c->queue)
        c->queue = STACKS_WORKER_DEFAULT_QUEUE;
}

static void *stacks_create(const void *config, char *why, size_t whylen)
{
    struct stacks *st = calloc(1, sizeof(*st));
    struct stacks_worker_options wo = {0};

    if (!st)
        goto fail;
    if (config)
        st->cfg = *(const struct probe_stacks_config *)config;
    stacks_defaults(&st->cfg);
    st->wakeup = (struct probe_wakeup){-1, -1};
    for (int i = 0; i < STACKS_MAX_CPUS; i++)
        st->perf_fds[i] = -1;
    wo.queue = st->cfg.queue;
    wo.cache.cap_bytes = st->cfg.cache_bytes;
    st->worker = stacks_worker_new(&wo);
    st->window = calloc(st->cfg.window, sizeof(*st->window));
    st->pending = calloc(st->cfg.queue, sizeof(*st->pending));
    if (st->worker && st->window && st->pending)
        return st;
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

/* The wakeup fd: the ring a quarter full, or every 100 ms. Not the
 * symbolizer's results: they are taken at the next wakeup, so that naming
 * a tick's samples costs the loop no wakeup of its own (10 a second more
 * under a job, on cores the job uses); a step record waits for them in
 * agent/steps/stepframes.c, up to a tick longer. */
static int stacks_open_wakeup(struct stacks *st)
{
    return probe_wakeup_open(&st->wakeup, ring_buffer__epoll_fd(st->ring), 100 * NSEC_PER_MSEC);
}

static int stacks_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct stacks *st = state;
    const char *step = "open";
    int err = -ENOMEM;

    st->sink = sink;
    probe_libbpf_logging();
    st->skel = stacks_bpf__open();
    if (!st->skel)
        goto fail;
    step = "load";
    err = stacks_bpf__load(st->skel);
    if (err < 0)
        goto fail;
    step = "symbolizer thread";
    err = stacks_worker_start(st->worker);
    if (err < 0)
        goto fail;
    step = "perf_event_open";
    err = stacks_open_perf(st);
    if (err < 0)
        goto fail;
    step = "ring buffer";
    st->ring =
        ring_buffer__new(bpf_map__fd(st->skel->maps.stacks_ring), stacks_on_record, st, NULL);
    err = st->ring ? stacks_open_wakeup(st) : -errno;
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
    return ((struct stacks *)state)->wakeup.epfd;
}

static int stacks_dispatch(void *state)
{
    struct stacks *st = state;
    struct stacks_worker_stats ws;
    int err;

    st->delivered = 0;
    probe_wakeup_drain(&st->wakeup);
    err = stacks_drain(st);
    if (st->sink && st->skel) {
        stacks_worker_get_stats(st->worker, &ws);
        st->delivered += probe_report_drops(st->sink, st->skel->bss->stacks_dropped,
                                            &st->ring_drops_reported, "stacks_ring_full");
        st->delivered += probe_report_drops(st->sink, ws.dropped, &st->queue_drops_reported,
                                            "stacks_queue_full");
    }
    return err < 0 ? err : st->delivered; /* samples are kept, not delivered as events */
}

static int stacks_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct stacks *st = state;

    if (!add) {
        stacks_worker_forget(st->worker, pid); /* after its samples so far */
        stacks_forget_last(st, pid);
    }
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

size_t probe_stacks_last_stack(void *state, uint32_t pid, const char **out, size_t max)
{
    struct stacks *st = state;
    size_t n = 0;

    stacks_drain(st);
    for (size_t i = 0; i < st->nlast; i++) {
        const struct probe_stacks_sample *s = &st->last[i];

        if (s->pid != pid)
            continue;
        for (uint32_t f = 0; f < s->nframes && f < PROBE_STACKS_FRAMES && n < max; f++)
            out[n++] = stacks_worker_name(st->worker, s->frames[f]);
        break;
    }
    return n;
}

/* The named samples' top frames of pid in [from_ns, to_ns), at most max. */
static size_t stacks_top_named(struct stacks *st, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                               struct probe_stacks_frame *out, size_t max)
{
    uint32_t nnames = stacks_worker_nnames(st->worker);
    uint64_t *self = calloc(nnames, sizeof(*self)), *total = calloc(nnames, sizeof(*total));
    struct probe_stacks_frame *all = NULL;
    size_t n = 0;

    if (!self || !total || !max)
        goto out;
    probe_stacks_aggregate(st->window, st->count, pid, from_ns, to_ns, self, total, nnames);
    all = calloc(nnames, sizeof(*all));
    if (!all)
        goto out;
    for (uint32_t id = 0; id < nnames; id++) {
        if (!total[id])
            continue;
        snprintf(all[n].name, sizeof(all[n].name), "%s", stacks_worker_name(st->worker, id));
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

size_t probe_stacks_top_frames(void *state, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                               struct probe_stacks_frame *out, size_t max)
{
    struct stacks *st = state;
    size_t unresolved, n;

    stacks_drain(st);
    unresolved = stacks_pending_count(st, pid, from_ns, to_ns);
    if (st->count == st->cfg.window && st->window[st->head].ts_ns > from_ns)
        st->window_short++; /* the oldest samples of that window may be overwritten */
    if (!max)
        return 0;
    n = stacks_top_named(st, pid, from_ns, to_ns, out, unresolved ? max - 1 : max);
    if (unresolved) {
        out[n] = (struct probe_stacks_frame){PROBE_STACKS_UNRESOLVED, unresolved, unresolved};
        st->unresolved += unresolved;
        n++;
    }
    return n;
}

static size_t stacks_metrics(void *state, char *buf, size_t len)
{
    struct stacks *st = state;
    struct stacks_worker_stats ws;
    size_t n = 0;

    stacks_worker_get_stats(st->worker, &ws);
    n += probe_metric(buf + n, len - n, "stacks", "samples_total", st->samples);
    n += probe_metric(buf + n, len - n, "stacks", "dropped_total",
                      st->skel ? st->skel->bss->stacks_dropped : 0);
    n += probe_metric(buf + n, len - n, "stacks", "queue_dropped_total", ws.dropped);
    n += probe_metric(buf + n, len - n, "stacks", "lost_stacks_total", st->lost_stacks);
    n += probe_metric(buf + n, len - n, "stacks", "resolved_total", ws.resolved);
    n += probe_metric(buf + n, len - n, "stacks", "unresolved_total", st->unresolved);
    n += probe_metric(buf + n, len - n, "stacks", "window_short_total", st->window_short);
    n += probe_metric(buf + n, len - n, "stacks", "names_full_total", ws.names_full);
    n += probe_metric(buf + n, len - n, "stacks", "files_loaded_total", ws.cache.files_loaded);
    n += probe_metric(buf + n, len - n, "stacks", "files_evicted_total", ws.cache.files_evicted);
    n += probe_metric(buf + n, len - n, "stacks", "maps_reads_total", ws.cache.maps_reads);
    n += probe_metric(buf + n, len - n, "stacks", "cache_bytes", ws.cache.bytes);
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
    probe_wakeup_close(&st->wakeup);
    ring_buffer__free(st->ring);
    stacks_worker_free(st->worker); /* joins the thread */
    stacks_bpf__destroy(st->skel);
    free(st->window);
    free(st->pending);
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
