/* The sync probe (see probe_sync.h). BPF side: bpf/calls.bpf.c. */
#include "agent/probes/probe_sync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/probes/probe_calls.h"
#include "bpf/calls.h"

struct sync_func {
    const char *symbol;
    uint32_t counter;
    bool driver;
    int8_t stream_arg; /* index of the stream argument, -1 none */
    int8_t size_arg;   /* index of the size argument, -1 none */
};

static const struct sync_func sync_funcs[] = {
    {"cuStreamSynchronize", AGENT_COUNTER_SYNC_WAIT_NS, true, 0, -1},
    {"cuCtxSynchronize", AGENT_COUNTER_SYNC_WAIT_NS, true, -1, -1},
    {"cudaStreamSynchronize", AGENT_COUNTER_SYNC_WAIT_NS, false, 0, -1},
    {"cudaDeviceSynchronize", AGENT_COUNTER_SYNC_WAIT_NS, false, -1, -1},
    {"cudaMalloc", AGENT_COUNTER_ALLOC_NS, false, -1, 1}, /* (void **ptr, size_t size) */
    {"cuMemAlloc", AGENT_COUNTER_ALLOC_NS, true, -1, 1},  /* (CUdeviceptr *dptr, size_t) */
    {"cuMemAlloc_v2", AGENT_COUNTER_ALLOC_NS, true, -1, 1},
};
#define NFUNCS (sizeof(sync_funcs) / sizeof(sync_funcs[0]))
#define SYNC_PENDING_MAX 256

static const char *const sync_libs[] = {"libcuda.so", "libcudart.so", NULL};

int probe_sync_decode(const struct argus_call_record *r, struct probe_sync_call *out)
{
    const struct sync_func *f;

    if (r->cookie >= NFUNCS || r->exit_ns < r->enter_ns)
        return -EINVAL;
    f = &sync_funcs[r->cookie];
    memset(out, 0, sizeof(*out));
    out->name = f->symbol;
    out->counter = f->counter;
    out->driver = f->driver;
    out->wait_ns = r->exit_ns - r->enter_ns;
    out->stream = f->stream_arg >= 0 ? r->args[f->stream_arg] : 0;
    out->alloc_bytes = f->size_arg >= 0 ? r->args[f->size_arg] : 0;
    out->ret = r->ret;
    return 0;
}

struct sync_pending {
    struct argus_call_record rec;
    uint32_t counter;
    uint64_t generation;
};

struct sync {
    struct probe_sync_config cfg;
    struct probe_calls *calls;
    const struct event_sink *sink;
    struct probe_uprobe_func funcs[NFUNCS];
    struct sync_pending pending[SYNC_PENDING_MAX]; /* driver calls, held one tick */
    size_t npending;
    uint64_t generation, decode_errors, nested, pending_overflow;
};

static void sync_emit(struct sync *s, const struct argus_call_record *r, uint32_t counter)
{
    struct agent_event ev = {.kind = AGENT_EVENT_COUNTER, .pid = r->pid, .tid = r->tid};

    ev.ts_ns = r->enter_ns;
    ev.counter.counter = counter;
    ev.counter.value = r->exit_ns - r->enter_ns;
    s->sink->event(s->sink->ctx, &ev);
}

/* Drop held driver calls of r's thread that ran inside r. */
static void sync_drop_nested(struct sync *s, const struct argus_call_record *r)
{
    size_t out = 0;

    for (size_t i = 0; i < s->npending; i++) {
        const struct argus_call_record *p = &s->pending[i].rec;

        if (p->tid == r->tid && p->pid == r->pid && p->enter_ns >= r->enter_ns &&
            p->exit_ns <= r->exit_ns) {
            s->nested++;
            continue;
        }
        s->pending[out++] = s->pending[i];
    }
    s->npending = out;
}

static int sync_on_record(void *owner, const struct argus_call_record *r)
{
    struct sync *s = owner;
    struct probe_sync_call call;

    if (probe_sync_decode(r, &call) < 0) {
        s->decode_errors++;
        return 0;
    }
    if (!call.driver) {
        sync_drop_nested(s, r);
        sync_emit(s, r, call.counter);
        return 1;
    }
    if (s->npending == SYNC_PENDING_MAX) { /* no room to wait: emit now */
        s->pending_overflow++;
        sync_emit(s, r, call.counter);
        return 1;
    }
    s->pending[s->npending++] = (struct sync_pending){*r, call.counter, s->generation};
    return 0;
}

/* Emit the driver calls held since the previous dispatch: any runtime call
 * around them has returned by now. */
static int sync_flush(struct sync *s)
{
    size_t out = 0;
    int n = 0;

    for (size_t i = 0; i < s->npending; i++) {
        if (s->pending[i].generation < s->generation) {
            sync_emit(s, &s->pending[i].rec, s->pending[i].counter);
            n++;
            continue;
        }
        s->pending[out++] = s->pending[i];
    }
    s->npending = out;
    return n;
}

static int sync_supported(char *why, size_t whylen)
{
    return probe_uprobe_supported(why, whylen);
}

static void sync_destroy(void *state);

static void *sync_create(const void *config, char *why, size_t whylen)
{
    struct sync *s = calloc(1, sizeof(*s));
    struct probe_calls_spec spec = {.probe = "sync",
                                    .nfuncs = NFUNCS,
                                    .libs = sync_libs,
                                    .on_record = sync_on_record,
                                    .drop_reason = "sync_ring_full"};

    if (!s)
        goto fail;
    if (config)
        s->cfg = *(const struct probe_sync_config *)config;
    for (size_t i = 0; i < NFUNCS; i++)
        s->funcs[i] = (struct probe_uprobe_func){sync_funcs[i].symbol, i};
    spec.funcs = s->funcs;
    spec.all_processes = s->cfg.all_processes;
    spec.files = s->cfg.files;
    spec.owner = s;
    s->calls = probe_calls_new(&spec);
    if (s->calls)
        return s;
fail:
    sync_destroy(s);
    snprintf(why, whylen, "out of memory");
    return NULL;
}

static int sync_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct sync *s = state;

    s->sink = sink;
    return probe_calls_start(s->calls, sink, why, whylen);
}

static int sync_fd(void *state)
{
    struct sync *s = state;

    return probe_calls_fd(s->calls);
}

static int sync_dispatch(void *state)
{
    struct sync *s = state;
    int n = sync_flush(s), err;

    s->generation++;
    err = probe_calls_dispatch(s->calls);
    return err < 0 ? err : n + err;
}

static int sync_track(void *state, uint32_t pid, const char *root, bool add)
{
    struct sync *s = state;

    return probe_calls_track(s->calls, pid, root, add);
}

static size_t sync_metrics(void *state, char *buf, size_t len)
{
    struct sync *s = state;
    size_t n = probe_calls_metrics(s->calls, buf, len);

    n += probe_metric(buf + n, len - n, "sync", "nested_total", s->nested);
    n += probe_metric(buf + n, len - n, "sync", "decode_errors_total", s->decode_errors);
    return n;
}

static void sync_destroy(void *state)
{
    struct sync *s = state;

    if (!s)
        return;
    probe_calls_free(s->calls);
    free(s);
}

const struct source_ops probe_sync_ops = {
    .name = "sync",
    .supported = sync_supported,
    .create = sync_create,
    .start = sync_start,
    .fd = sync_fd,
    .dispatch = sync_dispatch,
    .track = sync_track,
    .metrics = sync_metrics,
    .destroy = sync_destroy,
};
