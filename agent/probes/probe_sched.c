/* The sched probe (see probe_sched.h). BPF side: bpf/sched.bpf.c. */
#include "agent/probes/probe_sched.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/probes/probe_common.h"
#include "bpf/sched.h"
#include "bpf/sched.skel.h"
#include "common/clock.h"

#define SCHED_SLOTS 32768 /* power of two, twice the BPF map */
#define SCHED_BATCH 256

int probe_sched_decode(const struct argus_sched_acc *cur, const struct argus_sched_acc *last,
                       uint32_t tid, uint64_t ts, struct agent_event out[2])
{
    uint64_t off0 = last ? last->off_cpu_ns : 0, rq0 = last ? last->runq_ns : 0;
    int n = 0;

    if (cur->off_cpu_ns > off0)
        out[n++] =
            (struct agent_event){.kind = AGENT_EVENT_COUNTER,
                                 .pid = cur->tgid,
                                 .tid = tid,
                                 .ts_ns = ts,
                                 .counter = {AGENT_COUNTER_OFF_CPU_NS, cur->off_cpu_ns - off0}};
    if (cur->runq_ns > rq0)
        out[n++] = (struct agent_event){.kind = AGENT_EVENT_COUNTER,
                                        .pid = cur->tgid,
                                        .tid = tid,
                                        .ts_ns = ts,
                                        .counter = {AGENT_COUNTER_RUNQ_NS, cur->runq_ns - rq0}};
    return n;
}

struct sched_slot {
    uint32_t tid; /* 0 = empty */
    struct argus_sched_acc last;
};

struct sched {
    struct sched_bpf *skel;
    const struct event_sink *sink;
    struct probe_pids pids;
    struct sched_slot *slots; /* what was last emitted, per thread */
    uint64_t events, slots_full, reaped, ticks, next_idle_poll_ns;
    uint32_t reap_ticks;
    bool no_batch; /* the kernel has no batch lookup for hash maps: walk by key */
};

static int sched_reap(struct sched *s, uint32_t drop_tgid);

static struct sched_slot *sched_slot(struct sched *s, uint32_t tid)
{
    uint32_t h = tid * 2654435761u;

    for (uint32_t i = 0; i < SCHED_SLOTS; i++) {
        struct sched_slot *slot = &s->slots[(h + i) & (SCHED_SLOTS - 1)];

        if (slot->tid == tid || slot->tid == 0)
            return slot;
    }
    return NULL;
}

static int sched_supported(char *why, size_t whylen)
{
    static const char *const tps[] = {"sched_switch", NULL};

    return probe_tp_btf_supported(tps, why, whylen);
}

static void sched_destroy(void *state);

static void *sched_create(const void *config, char *why, size_t whylen)
{
    struct sched *s = calloc(1, sizeof(*s));

    if (s) {
        s->slots = calloc(SCHED_SLOTS, sizeof(*s->slots));
        s->reap_ticks = config ? ((const struct probe_sched_config *)config)->reap_ticks : 0;
        if (!s->reap_ticks)
            s->reap_ticks = 50;
    }
    if (!s || !s->slots) {
        sched_destroy(s);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    return s;
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
    for (size_t i = 0; i < s->pids.n; i++) {
        err =
            probe_pids_update(&s->pids, s->skel->maps.sched_tracked, s->pids.v[i].pid, NULL, true);
        if (err < 0)
            goto fail;
    }
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

/* One thread's accumulators: emit their growth since the last tick. */
static int sched_emit(struct sched *s, uint32_t tid, const struct argus_sched_acc *cur,
                      uint64_t now)
{
    struct sched_slot *slot = sched_slot(s, tid);
    struct agent_event ev[2];
    int k;

    if (!slot) {
        s->slots_full++;
        return 0;
    }
    k = probe_sched_decode(cur, slot->tid ? &slot->last : NULL, tid, now, ev);
    slot->tid = tid;
    slot->last = *cur;
    for (int i = 0; i < k; i++)
        s->sink->event(s->sink->ctx, &ev[i]);
    return k;
}

/* The accumulator map SCHED_BATCH entries per syscall (a walk by key took
 * two per thread, every tick: ~1,600 a second under a 4-rank gloo job);
 * adds the events emitted to *n. -1 when the kernel has no batch lookup for
 * this map or a bucket holds more than SCHED_BATCH (the caller walks it by
 * key instead: what was emitted here shows no growth there). */
static int sched_read_batch(struct sched *s, int fd, uint64_t now, int *n)
{
    uint32_t keys[SCHED_BATCH], token = 0;
    struct argus_sched_acc vals[SCHED_BATCH];
    bool first = true;

    for (;;) {
        uint32_t count = SCHED_BATCH;
        int err = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys, vals, &count, NULL);

        if (err < 0 && err != -ENOENT)
            return -1;
        first = false;
        for (uint32_t i = 0; i < count; i++)
            *n += sched_emit(s, keys[i], &vals[i], now);
        if (err == -ENOENT)
            return 0;
    }
}

static int sched_dispatch(void *state)
{
    struct sched *s = state;
    int fd = bpf_map__fd(s->skel->maps.sched_acc), n = 0;
    uint64_t now = clock_mono_ns();
    uint32_t key, next;
    bool first = true;

    if (probe_idle_skip(&s->pids, &s->next_idle_poll_ns, now))
        return 0;
    if (!s->no_batch && sched_read_batch(s, fd, now, &n) < 0)
        s->no_batch = true;
    while (s->no_batch && bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
        struct argus_sched_acc cur;

        first = false;
        key = next;
        if (bpf_map_lookup_elem(fd, &key, &cur) == 0)
            n += sched_emit(s, key, &cur, now);
    }
    s->events += (uint64_t)n;
    if (++s->ticks % s->reap_ticks == 0)
        sched_reap(s, 0);
    return n;
}

static bool thread_alive(uint32_t tgid, uint32_t tid)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%u/task/%u", tgid, tid);
    return access(path, F_OK) == 0;
}

/* Delete the kernel entries of exited threads and of the untracked process
 * drop_tgid (0 = none), and rebuild the user table from what is left, so
 * neither fills up over a long run. Their last growth was emitted by the
 * dispatch before. Returns 0 or -ENOMEM (nothing changed). */
static int sched_reap(struct sched *s, uint32_t drop_tgid)
{
    struct sched_slot *fresh = calloc(SCHED_SLOTS, sizeof(*fresh)), *old = s->slots;
    int fd = bpf_map__fd(s->skel->maps.sched_acc);
    uint32_t key, next;
    bool first = true;

    if (!fresh)
        return -ENOMEM;
    while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
        struct argus_sched_acc cur;
        struct sched_slot *from, *to;

        first = false;
        key = next;
        if (bpf_map_lookup_elem(fd, &key, &cur) < 0)
            continue;
        if (cur.tgid == drop_tgid || !thread_alive(cur.tgid, key)) {
            bpf_map_delete_elem(fd, &key);
            s->reaped++;
            first = true; /* the walk restarts after a delete */
            continue;
        }
        s->slots = old;
        from = sched_slot(s, key);
        s->slots = fresh;
        to = sched_slot(s, key);
        if (from && to && from->tid == key)
            *to = *from;
    }
    s->slots = fresh;
    free(old);
    return 0;
}

static int sched_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct sched *s = state;
    int err;

    if (!add && s->skel)
        sched_dispatch(s); /* deliver what it accumulated before it goes */
    err = probe_pids_update(&s->pids, s->skel ? s->skel->maps.sched_tracked : NULL, pid, root, add);
    if (!add && s->skel)
        sched_reap(s, pid);
    return err;
}

static size_t sched_metrics(void *state, char *buf, size_t len)
{
    struct sched *s = state;
    size_t n = 0;

    n += probe_metric(buf + n, len - n, "sched", "events_total", s->events);
    n += probe_metric(buf + n, len - n, "sched", "threads_reaped_total", s->reaped);
    n += probe_metric(buf + n, len - n, "sched", "map_full_total",
                      (s->skel ? s->skel->bss->sched_acc_full : 0) + s->slots_full);
    return n;
}

static void sched_destroy(void *state)
{
    struct sched *s = state;

    if (!s)
        return;
    sched_bpf__destroy(s->skel);
    probe_pids_free(&s->pids);
    free(s->slots);
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
    .destroy = sched_destroy,
};
