/* The CUPTI test double: a stand-in libcupti with the calls libargus-cupti.so
 * makes (see double.h). cuptiActivityGetNextRecord is forwarded to the real
 * libcupti.so.13 when it is installed (it parses buffers without a GPU), else
 * a walker over the record kinds produced here is used. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "tests/cupti/double.h"
#include "tests/cupti/double_rec.h"

#define EXPORT __attribute__((visibility("default")))
#define LAT_SAMPLES (1u << 20)

static struct {
    pthread_mutex_t lock; /* buffer state: producer thread vs flush */
    pthread_cond_t cond;
    CUpti_BuffersCallbackRequestFunc req;
    CUpti_BuffersCallbackCompleteFunc done;
    CUpti_TimestampCallbackFunc ts;
    uint8_t *buf;
    size_t cap, used;
    _Atomic int enabled[64];
    _Atomic int foreign, subscribed;
    _Atomic uint64_t dropped_unread;
    struct cupti_double_stats st;
    uint64_t *lat;
    uint32_t nlat;
    struct rec *recs;
    size_t nrecs;
    pthread_t thr;
    int playing, started;
    uint64_t rate, count;
    uint32_t steps_every;
    _Atomic uint32_t flush_period_ms;
    uint64_t buf_since; /* when the current buffer got its first record */
    void *real;
    CUptiResult (*real_next)(uint8_t *, size_t, CUpti_Activity **);
} d = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static uint64_t mono(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t now_ts(void)
{
    struct timespec t;

    if (d.ts)
        return d.ts();
    clock_gettime(CLOCK_REALTIME, &t); /* CUPTI's default clock */
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void lat_add(uint64_t ns)
{
    if (!d.lat)
        d.lat = calloc(LAT_SAMPLES, sizeof(uint64_t));
    if (d.lat)
        d.lat[d.nlat++ % LAT_SAMPLES] = ns;
    d.st.callbacks++;
    d.st.cb_total_ns += ns;
    if (ns > d.st.cb_max_ns)
        d.st.cb_max_ns = ns;
}

/* Give the current buffer back (lock held). */
static void complete_locked(void)
{
    uint64_t t0;

    if (!d.buf)
        return;
    t0 = mono();
    d.done(NULL, 0, d.buf, d.cap, d.used);
    lat_add(mono() - t0);
    d.st.buffers++;
    d.buf = NULL;
}

/* The foreign client's callbacks: one static buffer, records counted. */
static _Alignas(8) uint8_t foreign_buf[1 << 16];

static void CUPTIAPI foreign_request(uint8_t **buf, size_t *size, size_t *max)
{
    *buf = foreign_buf;
    *size = sizeof(foreign_buf);
    *max = 0;
}

static void CUPTIAPI foreign_complete(CUcontext c, uint32_t s, uint8_t *buf, size_t size,
                                      size_t valid)
{
}

static void put_locked(const struct rec *r)
{
    size_t sz = (r->size + 7) & ~(size_t)7;
    uint64_t t0;

    if (!d.enabled[r->kind & 63]) {
        d.st.skipped++;
        return;
    }
    if (d.buf && d.used + sz > d.cap)
        complete_locked();
    if (!d.buf) {
        size_t max = 0;
        t0 = mono();
        d.req(&d.buf, &d.cap, &max);
        lat_add(mono() - t0);
        d.used = 0;
        if (!d.buf || d.cap < sz) {
            d.buf = NULL;
            d.st.empty_requests++;
            d.st.dropped++;
            d.dropped_unread++;
            return;
        }
    }
    if (!d.used)
        d.buf_since = mono();
    memcpy(d.buf + d.used, &r->u, r->size);
    d.used += sz;
    d.st.produced++;
    if (d.req == foreign_request)
        d.st.foreign_records++;
    else if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        d.st.kernels++;
}

/* --- generated and replayed records ------------------------------------- */

static const char *const gen_names[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    "ampere_sgemm_128x64_tn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "void at::native::reduce_kernel<512, 1>",
    "void at::native::unrolled_elementwise_kernel<at::native::MulFunctor<float>>",
    "softmax_warp_forward",
    "layer_norm_kernel"};

static void gen_one(struct rec *r, uint64_t i, uint64_t t)
{
    memset(r, 0, sizeof(*r));
    if (i & 1) {
        r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r->size = sizeof(r->u.k);
        r->u.k.kind = r->kind;
        r->u.k.start = t;
        r->u.k.end = t + 1000 + (i % 7) * 100;
        r->u.k.streamId = 7 + (uint32_t)(i % 3);
        r->u.k.correlationId = (uint32_t)(i / 2 + 1);
        r->u.k.name = gen_names[(i / 2) % 8];
    } else {
        r->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
        r->size = sizeof(r->u.a);
        r->u.a.kind = r->kind;
        r->u.a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
        r->u.a.start = t;
        r->u.a.end = t + 300;
        r->u.a.threadId = 1;
        r->u.a.correlationId = (uint32_t)(i / 2 + 1);
    }
}

/* Generated mode: a ProfilerStep#N range every steps_every launches. */
static void gen_step(uint64_t j, uint64_t t)
{
    static char names[16][32];
    uint64_t step = j / (2 * d.steps_every);
    struct rec r;

    memset(&r, 0, sizeof(r));
    r.kind = r.u.m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    r.size = sizeof(r.u.m);
    r.u.m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    r.u.m.objectId.pt.threadId = 1;
    r.u.m.timestamp = t;
    if (step) {
        r.u.m.id = (uint32_t)step;
        r.u.m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
        put_locked(&r);
    }
    r.u.m.id = (uint32_t)step + 1;
    r.u.m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
    snprintf(names[step % 16], sizeof(names[0]), "ProfilerStep#%" PRIu64, step);
    r.u.m.name = names[step % 16];
    put_locked(&r);
}

static void pace(uint64_t t0, uint64_t done, uint64_t rate)
{
    uint64_t due = t0 + done * 1000000000u / rate;
    struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};

    if (mono() + 200000 < due)
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void *play_main(void *arg)
{
    uint64_t n = d.nrecs ? d.nrecs : d.count, t0 = mono(), base = now_ts();
    int64_t shift = d.nrecs ? (int64_t)base - (int64_t)d.recs[0].emit_ns : 0;
    struct rec r;

    for (uint64_t i = 0; i < n; i += 256) {
        pthread_mutex_lock(&d.lock);
        for (uint64_t j = i; j < i + 256 && j < n; j++) {
            if (!d.nrecs) {
                uint64_t t = now_ts();
                if (d.steps_every && j % (2 * d.steps_every) == 0)
                    gen_step(j, t);
                gen_one(&r, j, t);
                put_locked(&r);
                continue;
            }
            r = d.recs[j];
            if (r.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
                r.u.k.start += shift, r.u.k.end += shift;
            } else if (r.kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
                r.u.c.start += shift, r.u.c.end += shift;
            } else if (r.kind == CUPTI_ACTIVITY_KIND_MEMSET) {
                r.u.s.start += shift, r.u.s.end += shift;
            } else if (r.kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
                r.u.a.start += shift, r.u.a.end += shift;
            } else {
                r.u.m.timestamp += shift;
            }
            put_locked(&r);
        }
        if (d.flush_period_ms && d.buf && d.used &&
            mono() - d.buf_since > d.flush_period_ms * UINT64_C(1000000))
            complete_locked(); /* CUPTI's periodic flush */
        pthread_mutex_unlock(&d.lock);
        if (d.rate)
            pace(t0, i + 256, d.rate);
    }
    pthread_mutex_lock(&d.lock);
    complete_locked();
    d.playing = 0;
    pthread_cond_broadcast(&d.cond);
    pthread_mutex_unlock(&d.lock);
    return NULL;
}

/* --- control ------------------------------------------------------------ */

EXPORT int cupti_double_load(const char *path)
{
    return kineto_load(path, &d.recs, &d.nrecs);
}

EXPORT int cupti_double_play(uint64_t rate, uint64_t count)
{
    int err;

    if (!d.req || !d.done)
        return -EINVAL;
    if (d.started)
        pthread_join(d.thr, NULL);
    d.rate = rate;
    d.count = count;
    d.playing = 1;
    err = pthread_create(&d.thr, NULL, play_main, NULL);
    d.started = !err;
    return -err;
}

EXPORT void cupti_double_wait(void)
{
    pthread_mutex_lock(&d.lock);
    while (d.playing)
        pthread_cond_wait(&d.cond, &d.lock);
    pthread_mutex_unlock(&d.lock);
}

EXPORT int cupti_double_gen_steps(uint32_t every)
{
    d.steps_every = every;
    return 0;
}

EXPORT void cupti_double_foreign(int on)
{
    pthread_mutex_lock(&d.lock);
    complete_locked(); /* what was in the current buffer goes to its owner */
    if (on) {
        d.foreign = 1;
        d.req = foreign_request;
        d.done = foreign_complete;
        d.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] = 1;
    } else {
        for (int i = 0; i < 64; i++)
            d.enabled[i] = 0;
        d.foreign = 0;
    }
    pthread_mutex_unlock(&d.lock);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

EXPORT void cupti_double_stats(struct cupti_double_stats *out)
{
    uint32_t n;

    pthread_mutex_lock(&d.lock);
    *out = d.st;
    n = d.nlat < LAT_SAMPLES ? d.nlat : LAT_SAMPLES;
    if (n) {
        uint64_t *c = malloc(n * sizeof(*c));
        if (c) {
            memcpy(c, d.lat, n * sizeof(*c));
            qsort(c, n, sizeof(*c), cmp_u64);
            out->cb_p99_ns = c[(size_t)n * 99 / 100];
            free(c);
        }
    }
    out->enabled_kernel = (uint32_t)d.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
    out->foreign_callbacks = d.req == foreign_request;
    pthread_mutex_unlock(&d.lock);
}

/* --- the CUPTI API ------------------------------------------------------ */

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc done)
{
    if (!req || !done)
        return CUPTI_ERROR_INVALID_PARAMETER;
    d.req = req;
    d.done = done;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
    d.ts = f;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    d.enabled[kind & 63] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    d.enabled[kind & 63] = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    pthread_mutex_lock(&d.lock);
    if (d.buf && d.done)
        complete_locked();
    pthread_mutex_unlock(&d.lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
    d.flush_period_ms = ms;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                                     size_t *dropped)
{
    *dropped = atomic_exchange(&d.dropped_unread, 0);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
    int zero = 0;

    if (d.foreign || !atomic_compare_exchange_strong(&d.subscribed, &zero, 1))
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    *sub = (CUpti_SubscriberHandle)&d;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
    d.subscribed = 0;
    return CUPTI_SUCCESS;
}

static size_t own_size(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
        return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER:
        return sizeof(CUpti_ActivityMarker2);
    default:
        return 0;
    }
}

/* The real parser when installed (ARGUS_DOUBLE_OWN_PARSER=1 forces ours). */
EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    uint8_t *next;
    size_t sz;

    if (!d.real && !getenv("ARGUS_DOUBLE_OWN_PARSER")) {
        d.real = dlopen("/usr/local/cuda/lib64/libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
        if (d.real)
            *(void **)&d.real_next = dlsym(d.real, "cuptiActivityGetNextRecord");
        if (!d.real)
            d.real = (void *)1;
    }
    if (d.real_next)
        return d.real_next(buf, valid, rec);
    next = *rec ? (uint8_t *)*rec + ((own_size((*rec)->kind) + 7) & ~(size_t)7) : buf;
    if (next >= buf + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    sz = own_size(((CUpti_Activity *)next)->kind);
    if (!sz || next + sz > buf + valid)
        return CUPTI_ERROR_INVALID_KIND;
    *rec = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **str)
{
    *str = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (double)";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiFinalize(void)
{
    return CUPTI_SUCCESS;
}
