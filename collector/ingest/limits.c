/* Admission limits per job and per collector: see limits.h. */
#include "collector/ingest/limits.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/transport/transport.h"
#include "common/name_id.h"
#include "common/u64set.h"

#define LIMITS_SWEEP_NS 1000000000ULL /* idle jobs are looked for at most once a second */
#define LIMITS_PENDING_MAX 256        /* upper bound of max_jobs_per_batch */

struct limits_job {
    char *job;
    uint64_t hash;
    struct u64set names; /* name ids defined */
    struct u64set ranks; /* rank numbers seen, + 1 (a set key is never 0) */
    bool has_step;
    uint64_t max_step;
    uint64_t last_ns;
    uint64_t charge; /* bytes charged to job_memory */
};

struct limits {
    struct limits_options o;
    pthread_mutex_t lock;
    struct limits_job **jobs;
    size_t njobs, cap;
    uint32_t *index; /* open addressing on hash: job index + 1, 0 empty */
    size_t index_cap;
    uint64_t names, memory, forgotten, last_sweep_ns;
    uint64_t rejections[LIMITS_KIND_COUNT];
};

/* What one job of the batch being admitted would add. */
struct limits_pending {
    const char *job; /* in the batch */
    uint64_t hash;
    struct limits_job *known; /* NULL: a new job */
    struct u64set new_ranks;  /* ranks (+ 1) the job does not have yet */
    bool has_step;
    uint64_t lo, hi;         /* its steps in the batch */
    struct u64set new_names; /* ids the job does not have yet */
    uint64_t new_name_bytes; /* their lengths */
    uint64_t charge;         /* bytes it would add */
};

struct limits_batch {
    struct limits_pending *p;
    size_t n, last;
};

void limits_default_options(struct limits_options *o)
{
    *o = (struct limits_options){
        .max_jobs = 1024,
        .max_ranks_per_job = 65536,
        .max_names_per_job = 1000000,
        .max_names_total = 4000000,
        .max_step = 1ULL << 48,
        .max_step_jump = 1000000,
        .max_jobs_per_batch = 16,
        .job_memory = 4ULL << 30,
        .job_idle_ns = 300ULL * 1000000000ULL,
        .cost = {.job = 32 * 1024, .rank = 24 * 1024, .name = 96},
    };
}

const char *limits_kind_name(enum limits_kind k)
{
    static const char *const names[LIMITS_KIND_COUNT] = {
        "jobs",     "ranks_per_job", "names_per_job",  "names_total",
        "step_max", "step_jump",     "jobs_per_batch", "job_memory",
    };
    return k < LIMITS_KIND_COUNT ? names[k] : "?";
}

struct limits *limits_new(const struct limits_options *o)
{
    struct limits *l = calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    l->o = *o;
    if (!l->o.max_jobs_per_batch || l->o.max_jobs_per_batch > LIMITS_PENDING_MAX)
        l->o.max_jobs_per_batch = LIMITS_PENDING_MAX;
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

static void limits_job_free(struct limits_job *j)
{
    if (!j)
        return;
    u64set_clear(&j->names);
    u64set_clear(&j->ranks);
    free(j->job);
    free(j);
}

void limits_free(struct limits *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->njobs; i++)
        limits_job_free(l->jobs[i]);
    free(l->jobs);
    free(l->index);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* --- the job table ----------------------------------------------------------- */

static struct limits_job *limits_find(const struct limits *l, const char *job, uint64_t hash)
{
    if (!l->index_cap)
        return NULL;
    for (size_t i = hash & (l->index_cap - 1);; i = (i + 1) & (l->index_cap - 1)) {
        uint32_t slot = l->index[i];
        if (!slot)
            return NULL;
        struct limits_job *j = l->jobs[slot - 1];
        if (j->hash == hash && strcmp(j->job, job) == 0)
            return j;
    }
}

/* Rebuild the index for cap slots (a power of two over twice the jobs); the
 * same size reuses the array. 0 or -ENOMEM (the old index stays). */
static int limits_reindex(struct limits *l, size_t cap)
{
    uint32_t *index = cap == l->index_cap ? l->index : calloc(cap, sizeof(*index));

    if (!index)
        return -ENOMEM;
    memset(index, 0, cap * sizeof(*index));
    for (size_t k = 0; k < l->njobs; k++) {
        size_t i = l->jobs[k]->hash & (cap - 1);
        while (index[i])
            i = (i + 1) & (cap - 1);
        index[i] = (uint32_t)k + 1;
    }
    if (index != l->index)
        free(l->index);
    l->index = index;
    l->index_cap = cap;
    return 0;
}

/* A new, empty job entry in the table. NULL on ENOMEM. */
static struct limits_job *limits_add_job(struct limits *l, const char *job, uint64_t hash)
{
    struct limits_job *j = calloc(1, sizeof(*j));

    if (!j || !(j->job = strdup(job)))
        goto fail;
    j->hash = hash;
    if (l->njobs == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct limits_job **grown = realloc(l->jobs, cap * sizeof(*grown));
        if (!grown)
            goto fail;
        l->jobs = grown;
        l->cap = cap;
    }
    l->jobs[l->njobs++] = j;
    size_t want = l->index_cap ? l->index_cap : 32;
    while (want < 2 * l->njobs)
        want *= 2;
    if (limits_reindex(l, want) < 0) {
        l->njobs--;
        goto fail;
    }
    return j;
fail:
    limits_job_free(j);
    return NULL;
}

/* Forget the jobs idle for job_idle_ns at now_ns. */
static void limits_sweep(struct limits *l, uint64_t now_ns)
{
    size_t kept = 0;

    l->last_sweep_ns = now_ns;
    for (size_t i = 0; i < l->njobs; i++) {
        struct limits_job *j = l->jobs[i];
        if (now_ns > j->last_ns && now_ns - j->last_ns >= l->o.job_idle_ns) {
            l->memory -= j->charge;
            l->names -= j->names.count;
            l->forgotten++;
            limits_job_free(j);
        } else {
            l->jobs[kept++] = j;
        }
    }
    if (kept != l->njobs) {
        l->njobs = kept;
        limits_reindex(l, l->index_cap); /* in place: cannot fail */
    }
}

/* --- admission --------------------------------------------------------------- */

/* Count a refusal of kind and write its sentence. Returns status. */
static int limits_refuse(struct limits *l, enum limits_kind kind, int status, char *err,
                         size_t errlen, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int limits_refuse(struct limits *l, enum limits_kind kind, int status, char *err,
                         size_t errlen, const char *fmt, ...)
{
    va_list ap;

    l->rejections[kind]++;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return status;
}

/* The pending entry of job in the batch, added when new; NULL when the batch
 * names more than max_jobs_per_batch jobs. */
static struct limits_pending *limits_pending(struct limits *l, struct limits_batch *bt,
                                             const char *job)
{
    if (bt->n && strcmp(bt->p[bt->last].job, job) == 0)
        return &bt->p[bt->last];
    for (size_t i = 0; i < bt->n; i++)
        if (strcmp(bt->p[i].job, job) == 0)
            return &bt->p[bt->last = i];
    if (bt->n >= l->o.max_jobs_per_batch)
        return NULL;
    struct limits_pending *p = &bt->p[bt->last = bt->n++];
    *p = (struct limits_pending){.job = job, .hash = name_id(job)};
    p->known = limits_find(l, job, p->hash);
    return p;
}

#define REFUSE(kind, status, ...) limits_refuse(l, kind, status, err, errlen, __VA_ARGS__)

static int limits_too_many_jobs(struct limits *l, const Argus__V1__Batch *b, char *err,
                                size_t errlen)
{
    return REFUSE(LIMITS_JOBS_PER_BATCH, TRANSPORT_RESOURCE_EXHAUSTED,
                  "batch from %s names more than %" PRIu32
                  " jobs (limits.max_jobs_per_batch); send each job's records in fewer batches",
                  b->agent_id, l->o.max_jobs_per_batch);
}

static int limits_rank(struct limits *l, struct limits_pending *p, uint32_t rank, char *err,
                       size_t errlen)
{
    if (rank >= l->o.max_ranks_per_job)
        return REFUSE(LIMITS_RANKS_PER_JOB, TRANSPORT_INVALID_ARGUMENT,
                      "rank %" PRIu32
                      " of job %s is over limits.max_ranks_per_job (ranks 0-%" PRIu32 ")",
                      rank, p->job, l->o.max_ranks_per_job - 1);
    if ((p->known && u64set_has(&p->known->ranks, (uint64_t)rank + 1)) ||
        u64set_add(&p->new_ranks, (uint64_t)rank + 1) >= 0)
        return TRANSPORT_OK;
    snprintf(err, errlen, "out of memory");
    return TRANSPORT_INTERNAL;
}

static int limits_step(struct limits *l, struct limits_pending *p, const Argus__V1__StepRecord *s,
                       char *err, size_t errlen)
{
    int r = limits_rank(l, p, s->rank, err, errlen);

    if (r != TRANSPORT_OK)
        return r;
    if (s->step >= l->o.max_step)
        return REFUSE(LIMITS_STEP, TRANSPORT_INVALID_ARGUMENT,
                      "step %" PRIu64 " of job %s rank %" PRIu32
                      " is not a step number (limits.max_step %" PRIu64 ")",
                      s->step, p->job, s->rank, l->o.max_step);
    if (!p->has_step || s->step < p->lo)
        p->lo = s->step;
    if (!p->has_step || s->step > p->hi)
        p->hi = s->step;
    p->has_step = true;
    return TRANSPORT_OK;
}

static int limits_name(struct limits *l, struct limits_pending *p, const Argus__V1__NameEntry *e,
                       char *err, size_t errlen)
{
    if (p->known && u64set_has(&p->known->names, e->id))
        return TRANSPORT_OK;
    int added = u64set_add(&p->new_names, e->id);
    if (added < 0) {
        snprintf(err, errlen, "out of memory");
        return TRANSPORT_INTERNAL;
    }
    if (added)
        p->new_name_bytes += strlen(e->name);
    return TRANSPORT_OK;
}

/* Gather what every job of b would add, checking ranks and steps. */
static int limits_gather(struct limits *l, const Argus__V1__Batch *b, struct limits_batch *bt,
                         char *err, size_t errlen)
{
    struct limits_pending *p;
    int r = TRANSPORT_OK;

    for (size_t i = 0; i < b->n_steps && r == TRANSPORT_OK; i++)
        r = (p = limits_pending(l, bt, b->steps[i]->job))
                ? limits_step(l, p, b->steps[i], err, errlen)
                : limits_too_many_jobs(l, b, err, errlen);
    for (size_t i = 0; i < b->n_resources && r == TRANSPORT_OK; i++)
        r = (p = limits_pending(l, bt, b->resources[i]->job))
                ? limits_rank(l, p, b->resources[i]->rank, err, errlen)
                : limits_too_many_jobs(l, b, err, errlen);
    for (size_t i = 0; i < b->n_statuses && r == TRANSPORT_OK; i++)
        r = (p = limits_pending(l, bt, b->statuses[i]->job))
                ? limits_rank(l, p, b->statuses[i]->rank, err, errlen)
                : limits_too_many_jobs(l, b, err, errlen);
    for (size_t i = 0; i < b->n_names && r == TRANSPORT_OK; i++)
        r = (p = limits_pending(l, bt, b->names[i]->job))
                ? limits_name(l, p, b->names[i], err, errlen)
                : limits_too_many_jobs(l, b, err, errlen);
    return r;
}

/* Per-job checks of one pending job: step jump and names; sets its charge. */
static int limits_check_job(struct limits *l, struct limits_pending *p, char *err, size_t errlen)
{
    const struct limits_job *k = p->known;
    uint64_t base = k && k->has_step ? k->max_step : p->lo;
    uint64_t names = k ? k->names.count : 0;

    if (p->has_step && p->hi > base && p->hi - base > l->o.max_step_jump)
        return REFUSE(LIMITS_STEP_JUMP, TRANSPORT_INVALID_ARGUMENT,
                      "step %" PRIu64 " of job %s is %" PRIu64 " past its %s step %" PRIu64
                      "; limits.max_step_jump is %" PRIu64,
                      p->hi, p->job, p->hi - base, k && k->has_step ? "highest" : "lowest", base,
                      l->o.max_step_jump);
    if (names + p->new_names.count > l->o.max_names_per_job)
        return REFUSE(LIMITS_NAMES_PER_JOB, TRANSPORT_RESOURCE_EXHAUSTED,
                      "job %s already has %" PRIu64 " names and this batch adds %zu; limit %" PRIu64
                      " (limits.max_names_per_job)",
                      p->job, names, p->new_names.count, l->o.max_names_per_job);
    p->charge = (k ? 0 : l->o.cost.job) + p->new_names.count * l->o.cost.name + p->new_name_bytes +
                p->new_ranks.count * l->o.cost.rank;
    return TRANSPORT_OK;
}

/* Collector-wide checks of the batch: jobs, names in all, memory. */
static int limits_check_totals(struct limits *l, const struct limits_batch *bt, char *err,
                               size_t errlen)
{
    uint64_t new_jobs = 0, new_names = 0, charge = 0;
    const char *first_new = NULL, *biggest = NULL;
    uint64_t biggest_charge = 0;

    for (size_t i = 0; i < bt->n; i++) {
        const struct limits_pending *p = &bt->p[i];
        if (!p->known && !new_jobs++)
            first_new = p->job;
        new_names += p->new_names.count;
        charge += p->charge;
        if (p->charge > biggest_charge)
            biggest = p->job, biggest_charge = p->charge;
    }
    if (new_jobs && l->njobs + new_jobs > l->o.max_jobs)
        return REFUSE(LIMITS_JOBS, TRANSPORT_RESOURCE_EXHAUSTED,
                      "the collector has %zu active jobs; limit %" PRIu32
                      " (limits.max_jobs): new job %s refused until one has been idle for "
                      "diag.job_idle",
                      l->njobs, l->o.max_jobs, first_new);
    if (l->names + new_names > l->o.max_names_total)
        return REFUSE(LIMITS_NAMES_TOTAL, TRANSPORT_RESOURCE_EXHAUSTED,
                      "the collector holds %" PRIu64 " names and this batch adds %" PRIu64
                      "; limit %" PRIu64 " (limits.max_names_total)",
                      l->names, new_names, l->o.max_names_total);
    if (l->memory + charge > l->o.job_memory)
        return REFUSE(LIMITS_JOB_MEMORY, TRANSPORT_RESOURCE_EXHAUSTED,
                      "per-job state would take %" PRIu64 " bytes, over limits.job_memory (%" PRIu64
                      " bytes, %" PRIu64 " in use): job %s would add %" PRIu64 " bytes",
                      l->memory + charge, l->o.job_memory, l->memory, biggest, biggest_charge);
    return TRANSPORT_OK;
}

/* Record what p adds. 0 or -ENOMEM (part of it may be recorded). */
static int limits_commit(struct limits *l, struct limits_pending *p, uint64_t now_ns)
{
    struct limits_job *j = p->known ? p->known : limits_add_job(l, p->job, p->hash);

    if (!j)
        return -ENOMEM;
    for (size_t i = 0; i < p->new_names.cap; i++) {
        uint64_t id = p->new_names.keys[i];
        if (id && u64set_add(&j->names, id) < 0)
            return -ENOMEM;
    }
    l->names += p->new_names.count;
    for (size_t i = 0; i < p->new_ranks.cap; i++) {
        uint64_t r = p->new_ranks.keys[i];
        if (r && u64set_add(&j->ranks, r) < 0)
            return -ENOMEM;
    }
    if (p->has_step && (!j->has_step || p->hi > j->max_step))
        j->max_step = p->hi;
    j->has_step |= p->has_step;
    j->last_ns = now_ns;
    j->charge += p->charge;
    l->memory += p->charge;
    return 0;
}

static int limits_admit_locked(struct limits *l, const Argus__V1__Batch *b, uint64_t now_ns,
                               struct limits_batch *bt, char *err, size_t errlen)
{
    int r = limits_gather(l, b, bt, err, errlen);

    for (size_t i = 0; i < bt->n && r == TRANSPORT_OK; i++)
        r = limits_check_job(l, &bt->p[i], err, errlen);
    if (r == TRANSPORT_OK)
        r = limits_check_totals(l, bt, err, errlen);
    for (size_t i = 0; i < bt->n && r == TRANSPORT_OK; i++)
        if (limits_commit(l, &bt->p[i], now_ns) < 0) {
            snprintf(err, errlen, "out of memory");
            r = TRANSPORT_INTERNAL;
        }
    return r;
}

int limits_admit(struct limits *l, const Argus__V1__Batch *b, uint64_t now_ns, char *err,
                 size_t errlen)
{
    struct limits_batch bt = {0};
    int r;

    bt.p = calloc(l->o.max_jobs_per_batch, sizeof(*bt.p));
    if (!bt.p) {
        snprintf(err, errlen, "out of memory");
        return TRANSPORT_INTERNAL;
    }
    pthread_mutex_lock(&l->lock);
    /* forget idle jobs first: once a second, and whenever a new job may not fit */
    if (now_ns - l->last_sweep_ns >= LIMITS_SWEEP_NS || l->njobs >= l->o.max_jobs ||
        l->memory + l->o.cost.job > l->o.job_memory)
        limits_sweep(l, now_ns);
    r = limits_admit_locked(l, b, now_ns, &bt, err, errlen);
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < bt.n; i++) {
        u64set_clear(&bt.p[i].new_names);
        u64set_clear(&bt.p[i].new_ranks);
    }
    free(bt.p);
    return r;
}

void limits_get_stats(struct limits *l, struct limits_stats *out)
{
    pthread_mutex_lock(&l->lock);
    for (int k = 0; k < LIMITS_KIND_COUNT; k++)
        out->rejections[k] = l->rejections[k];
    out->jobs = l->njobs;
    out->names = l->names;
    out->memory = l->memory;
    out->memory_limit = l->o.job_memory;
    out->jobs_forgotten = l->forgotten;
    pthread_mutex_unlock(&l->lock);
}
