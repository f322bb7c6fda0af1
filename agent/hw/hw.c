/* The hardware stage (see hw.h): a sampler thread publishing cumulative
 * counters per GPU and for the NICs, and per-rank baselines turned into
 * each step's HwCounters. */
#include "agent/hw/hw.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/hw/nic.h"
#include "agent/hw/nvml.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/name_id.h"

#define HW_REASONS_RING 64 /* the reasons of the last samples, for a step's OR */

/* One GPU as published: its last sample and running sums over samples. */
struct hw_gpu {
    struct nvml_gpu last;
    uint64_t seq;       /* samples taken */
    uint64_t clock_sum; /* SM clock, summed over samples */
    uint64_t throttled; /* samples with a slowdown reason */
    uint32_t reasons[HW_REASONS_RING];
};

/* What a rank's previous step saw (the deltas' base). */
struct hw_base {
    uint64_t seq, clock_sum, throttled;
    uint64_t power_ns, thermal_ns, ecc_c, ecc_u, rows, pcie, nvlink, xids;
    struct nic_totals nic;
};

struct hw_rank {
    uint64_t job; /* name_id of the job */
    uint32_t rank;
    int32_t gpu;
    char uuid[96];
    bool has_base;
    uint64_t used; /* hw_step calls of the stage when last stepped */
    struct hw_base base;
};

struct hw {
    struct hw_options o;
    char *nvml_lib, *nic_list, *sysroot;
    struct nvml *nvml;
    struct nic *nic;
    pthread_t thread;
    bool running, stop;
    pthread_mutex_t mu; /* guards what follows, and stop */
    pthread_cond_t wake;
    uint32_t ngpus;
    struct hw_gpu gpus[NVML_GPUS_MAX];
    struct nic_totals nics;
    bool nics_ok;
    struct hw_stats st;
    /* the main loop's */
    struct hw_rank *ranks;
    uint32_t nranks;
    uint64_t steps;
};

static char *hw_dup(const char *s)
{
    return strdup(s ? s : "");
}

/* Open NVML and the NICs; log once what there is to read. */
static void hw_open(struct hw *h)
{
    char why[256] = "";

    if (h->o.gpus) {
        h->nvml = nvml_open(h->nvml_lib, why, sizeof(why));
        if (h->nvml)
            log_info("hw", "%u GPUs through NVML (%s)", nvml_count(h->nvml),
                     *h->nvml_lib ? h->nvml_lib : NVML_DEFAULT_LIB);
        else
            log_info("hw", "no GPU counters: %s", why);
    }
    if (h->o.nics) {
        h->nic = nic_new(*h->sysroot ? h->sysroot : NULL, h->nic_list, why, sizeof(why));
        if (!h->nic)
            log_warn("hw", "no NIC counters: %s", why);
    }
    h->st.gpus = h->nvml ? nvml_count(h->nvml) : 0;
}

struct hw *hw_new(const struct hw_options *o, char *why, size_t whylen)
{
    struct hw *h;

    if (o->interval_ns < 10 * NSEC_PER_MSEC) {
        snprintf(why, whylen, "hw.interval must be 10ms or more");
        return NULL;
    }
    h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->o = *o;
    h->nvml_lib = hw_dup(o->nvml_lib);
    h->nic_list = hw_dup(o->nic_list);
    h->sysroot = hw_dup(o->sysroot);
    h->ranks = calloc(HW_RANKS_MAX, sizeof(*h->ranks));
    if (!h->nvml_lib || !h->nic_list || !h->sysroot || !h->ranks) {
        snprintf(why, whylen, "out of memory");
        hw_free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->wake, NULL);
    hw_open(h);
    return h;
}

/* --- the sampler ---------------------------------------------------------- */

static void hw_publish_gpu(struct hw_gpu *g, const struct nvml_gpu *s)
{
    if (s->ok || !g->seq) {
        g->last = *s;
    } else { /* keep the counters of the last good sample; say it did not answer */
        g->last.ok = false;
        g->last.reasons = 0;
        g->last.sm_clock_mhz = 0;
    }
    if (!s->ok)
        return;
    g->reasons[g->seq % HW_REASONS_RING] = s->reasons;
    g->seq++;
    g->clock_sum += s->sm_clock_mhz;
    g->throttled += (s->reasons & NVML_REASON_SLOWDOWN) != 0;
}

/* One sample of everything, published. */
static void hw_sample(struct hw *h)
{
    struct nvml_gpu got[NVML_GPUS_MAX];
    struct nic_totals nt = {0};
    uint64_t t0 = clock_mono_ns();
    int ng = h->nvml ? nvml_sample(h->nvml, got, NVML_GPUS_MAX) : 0;

    if (ng == -EIO) /* none answered: each is filled, ok = false */
        ng = (int)(nvml_count(h->nvml) < NVML_GPUS_MAX ? nvml_count(h->nvml) : NVML_GPUS_MAX);
    int nr = h->nic ? nic_sample(h->nic, &nt) : -ENODEV;

    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < ng; i++) {
        hw_publish_gpu(&h->gpus[i], &got[i]);
        h->st.gpu_errors += !got[i].ok;
    }
    if (ng > 0 && (uint32_t)ng > h->ngpus)
        h->ngpus = (uint32_t)ng;
    if (ng < 0)
        h->st.gpu_errors++;
    if (nr == 0) {
        h->nics = nt;
        h->nics_ok = true;
        h->st.nics = nt.nics;
    } else if (h->nic) {
        h->st.nic_errors++;
    }
    h->st.samples++;
    h->st.sample_ns = clock_mono_ns() - t0;
    pthread_mutex_unlock(&h->mu);
}

static void *hw_thread(void *arg)
{
    struct hw *h = arg;
    struct timespec at;

    clock_gettime(CLOCK_MONOTONIC, &at);
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        uint64_t ns = (uint64_t)at.tv_nsec + h->o.interval_ns;
        at.tv_sec += (time_t)(ns / NSEC_PER_SEC);
        at.tv_nsec = (long)(ns % NSEC_PER_SEC);
        while (!h->stop && pthread_cond_timedwait(&h->wake, &h->mu, &at) != ETIMEDOUT)
            ;
        if (h->stop)
            break;
        pthread_mutex_unlock(&h->mu);
        hw_sample(h);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int hw_start(struct hw *h)
{
    pthread_condattr_t ca;
    int err;

    if (!h->nvml && !h->nic)
        return 0;
    hw_sample(h); /* the first steps' baseline */
    pthread_cond_destroy(&h->wake);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    err = pthread_create(&h->thread, NULL, hw_thread, h);
    if (err)
        return -err;
    h->running = true;
    return 0;
}

void hw_free(struct hw *h)
{
    if (!h)
        return;
    if (h->running) {
        pthread_mutex_lock(&h->mu);
        h->stop = true;
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
    }
    if (h->ranks) { /* initialised past the allocations */
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->wake);
    }
    nvml_close(h->nvml);
    nic_free(h->nic);
    free(h->nvml_lib);
    free(h->nic_list);
    free(h->sysroot);
    free(h->ranks);
    free(h);
}

void hw_get_stats(struct hw *h, struct hw_stats *out)
{
    pthread_mutex_lock(&h->mu);
    *out = h->st;
    pthread_mutex_unlock(&h->mu);
}

/* --- ranks ---------------------------------------------------------------- */

static struct hw_rank *hw_find(struct hw *h, uint64_t job, uint32_t rank)
{
    for (uint32_t i = 0; i < h->nranks; i++)
        if (h->ranks[i].job == job && h->ranks[i].rank == rank)
            return &h->ranks[i];
    return NULL;
}

/* A slot for a new rank: a free one, else the one stepped least recently. */
static struct hw_rank *hw_slot(struct hw *h)
{
    struct hw_rank *old = &h->ranks[0];

    if (h->nranks < HW_RANKS_MAX)
        return &h->ranks[h->nranks++];
    for (uint32_t i = 1; i < h->nranks; i++)
        if (h->ranks[i].used < old->used)
            old = &h->ranks[i];
    return old;
}

void hw_track(struct hw *h, const char *job, uint32_t rank, int32_t gpu, const char *uuid)
{
    uint64_t id = name_id(job ? job : "");
    struct hw_rank *r = hw_find(h, id, rank);

    if (!r)
        r = hw_slot(h);
    *r = (struct hw_rank){.job = id, .rank = rank, .gpu = gpu, .used = h->steps};
    snprintf(r->uuid, sizeof(r->uuid), "%s", uuid ? uuid : "");
}

/* The published GPU of r (by uuid, else by index), or -1. Under mu. A
 * CUDA_VISIBLE_DEVICES uuid may be a prefix ("GPU-8c6f"), as CUDA takes. */
static int hw_gpu_of(const struct hw *h, const struct hw_rank *r)
{
    size_t n = strlen(r->uuid);

    if (n)
        for (uint32_t i = 0; i < h->ngpus; i++)
            if (strncmp(h->gpus[i].last.uuid, r->uuid, n) == 0)
                return (int)i;
    return r->gpu >= 0 && (uint32_t)r->gpu < h->ngpus ? r->gpu : -1;
}

static uint64_t hw_grew(uint64_t now, uint64_t then)
{
    return now > then ? now - then : 0;
}

/* The counters of a GPU now, as a base. */
static void hw_base_gpu(const struct hw_gpu *g, struct hw_base *b)
{
    b->seq = g->seq;
    b->clock_sum = g->clock_sum;
    b->throttled = g->throttled;
    b->power_ns = g->last.power_violation_ns;
    b->thermal_ns = g->last.thermal_violation_ns;
    b->ecc_c = g->last.ecc_corrected;
    b->ecc_u = g->last.ecc_uncorrected;
    b->rows = g->last.rows_remapped;
    b->pcie = g->last.pcie_replays;
    b->nvlink = g->last.nvlink_errors;
    b->xids = g->last.xid_count;
}

/* out from GPU g against the base b. */
static void hw_fill_gpu(const struct hw_gpu *g, const struct hw_base *b, Argus__V1__HwCounters *out)
{
    uint64_t n = hw_grew(g->seq, b->seq);

    out->samples = (uint32_t)n;
    if (n) {
        out->sm_clock_mhz = (uint32_t)(hw_grew(g->clock_sum, b->clock_sum) / n);
        out->throttled_samples = (uint32_t)hw_grew(g->throttled, b->throttled);
        for (uint64_t k = 0; k < n && k < HW_REASONS_RING; k++)
            out->throttle |= g->reasons[(g->seq - 1 - k) % HW_REASONS_RING];
    } else { /* no sample inside the step: the latest stands in */
        out->sm_clock_mhz = g->last.sm_clock_mhz;
        out->throttle = g->last.reasons;
    }
    out->temperature_c = g->last.temperature_c;
    out->power_violation_ns = hw_grew(g->last.power_violation_ns, b->power_ns);
    out->thermal_violation_ns = hw_grew(g->last.thermal_violation_ns, b->thermal_ns);
    out->ecc_corrected = hw_grew(g->last.ecc_corrected, b->ecc_c);
    out->ecc_uncorrected = hw_grew(g->last.ecc_uncorrected, b->ecc_u);
    out->rows_remapped = (uint32_t)hw_grew(g->last.rows_remapped, b->rows);
    out->pcie_replays = hw_grew(g->last.pcie_replays, b->pcie);
    out->nvlink_errors = hw_grew(g->last.nvlink_errors, b->nvlink);
    out->xid_errors = (uint32_t)hw_grew(g->last.xid_count, b->xids);
    out->xid = out->xid_errors ? g->last.last_xid : 0;
}

static void hw_fill_nic(const struct nic_totals *now, const struct nic_totals *b,
                        Argus__V1__HwCounters *out)
{
    out->nic_errors = hw_grew(now->errors, b->errors);
    out->nic_drops = hw_grew(now->drops, b->drops);
    out->nic_link_downs = (uint32_t)hw_grew(now->link_downs, b->link_downs);
}

/* r's counters now against its base, then the base moves on. Under mu.
 * Returns whether anything was read for it. */
static bool hw_step_locked(struct hw *h, struct hw_rank *r, Argus__V1__HwCounters *out)
{
    int g = hw_gpu_of(h, r);
    bool had = r->has_base, any = false;

    if (g < 0 && r->gpu >= 0 && h->ngpus)
        h->st.unmatched++;
    if (g >= 0) {
        if (had)
            hw_fill_gpu(&h->gpus[g], &r->base, out);
        hw_base_gpu(&h->gpus[g], &r->base);
        any = true;
    }
    if (h->nics_ok) {
        if (had)
            hw_fill_nic(&h->nics, &r->base.nic, out);
        r->base.nic = h->nics;
        any = true;
    }
    r->has_base = any;
    return had && any;
}

bool hw_step(struct hw *h, const char *job, uint32_t rank, Argus__V1__HwCounters *out)
{
    uint64_t id = name_id(job ? job : "");
    struct hw_rank *r = hw_find(h, id, rank);
    bool got;

    if (!h->nvml && !h->nic)
        return false;
    if (!r) {
        hw_track(h, job, rank, -1, NULL);
        r = hw_find(h, id, rank);
    }
    r->used = ++h->steps;
    pthread_mutex_lock(&h->mu);
    got = hw_step_locked(h, r, out);
    pthread_mutex_unlock(&h->mu);
    return got;
}
