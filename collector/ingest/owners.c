/* Rank ownership: see owners.h. */
#include "collector/ingest/owners.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <search.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "collector/transport/transport.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/name_id.h"

/* One rank of a job: its owner and when it was last heard of. */
struct owners_rank {
    uint64_t last_seen;   /* receive time of the owner's newest record */
    uint64_t stored_seen; /* last_seen as stored */
    uint64_t logged_ns;   /* the last refusal logged, of intruder logged_by */
    uint64_t logged_by;   /* name_id of that intruder */
    uint32_t owner;       /* index + 1 into the job's idents; 0: nobody */
    uint32_t restart;     /* the job's attempt the owner wrote it under */
    bool queued;          /* in this batch's list of entries to store */
};

struct owners_job {
    char *job;
    uint64_t last_seen;
    uint64_t gen;     /* the pass that last touched it */
    uint32_t restart; /* the job's highest attempt seen */
    struct owners_rank *ranks;
    uint32_t n_ranks;
    char **idents; /* the identities that own or owned its ranks */
    uint32_t n_idents;
};

struct owners {
    struct owners_options o;
    struct store *store;
    pthread_mutex_t lock;
    void *tree; /* tsearch of struct owners_job * by job */
    struct owners_job **jobs;
    size_t n_jobs, cap_jobs;
    uint64_t gen, last_sweep_ns, n_ranks;
    uint64_t refused, moves, store_errors;
};

/* A job as one batch sees it. */
struct owners_pass_job {
    const char *name;
    struct owners_job *j; /* NULL: not known yet */
    uint32_t ident;       /* the sender in j->idents (+1), 0: not there */
    uint32_t restart;     /* the highest attempt of it this batch declares */
};

/* One judge call. */
struct owners_pass {
    struct owners *ow;
    const Argus__V1__Batch *b;
    const char *identity;
    uint64_t now;
    struct owners_pass_job *jobs;
    size_t n_jobs, last;
    struct {
        struct owners_job *j;
        uint32_t rank;
    } * queue; /* entries to store */
    size_t n_queue;
    char *err;
    size_t errlen;
};

static int owners_job_cmp(const void *a, const void *b)
{
    return strcmp(((const struct owners_job *)a)->job, ((const struct owners_job *)b)->job);
}

static struct owners_job *owners_find(struct owners *ow, const char *job)
{
    struct owners_job key = {.job = (char *)job};
    void *hit = tfind(&key, &ow->tree, owners_job_cmp);

    return hit ? *(struct owners_job **)hit : NULL;
}

static void owners_job_free(struct owners_job *j)
{
    if (!j)
        return;
    for (uint32_t i = 0; i < j->n_idents; i++)
        free(j->idents[i]);
    free(j->idents);
    free(j->ranks);
    free(j->job);
    free(j);
}

/* A new empty job in the table. NULL on ENOMEM. */
static struct owners_job *owners_add_job(struct owners *ow, const char *job)
{
    struct owners_job *j = calloc(1, sizeof(*j));

    if (!j || !(j->job = strdup(job)))
        goto fail;
    if (ow->n_jobs == ow->cap_jobs) {
        size_t cap = ow->cap_jobs ? ow->cap_jobs * 2 : 16;
        struct owners_job **grown = realloc(ow->jobs, cap * sizeof(*grown));
        if (!grown)
            goto fail;
        ow->jobs = grown;
        ow->cap_jobs = cap;
    }
    if (!tsearch(j, &ow->tree, owners_job_cmp))
        goto fail;
    ow->jobs[ow->n_jobs++] = j;
    return j;
fail:
    owners_job_free(j);
    return NULL;
}

/* Forget the job at index i (and its stored entries). */
static void owners_forget(struct owners *ow, size_t i, const char *why)
{
    struct owners_job *j = ow->jobs[i];
    char err[160];

    log_info("ingest", "rank owners of job %s forgotten (%" PRIu32 " ranks): %s", j->job,
             j->n_ranks, why);
    if (ow->store && store_delete_owners(ow->store, j->job, err, sizeof(err)) < 0)
        ow->store_errors++;
    tdelete(j, &ow->tree, owners_job_cmp);
    ow->jobs[i] = ow->jobs[--ow->n_jobs];
    ow->n_ranks -= j->n_ranks;
    owners_job_free(j);
}

/* Forget jobs silent past the forget bound, then the least recently seen
 * ones over max_jobs (never one the current pass touched). */
static void owners_sweep(struct owners *ow, uint64_t now, bool force)
{
    uint64_t forget = OWNERS_FORGET_IDLE * ow->o.idle_ns;

    if (force || now - ow->last_sweep_ns >= NSEC_PER_SEC || now < ow->last_sweep_ns) {
        ow->last_sweep_ns = now;
        for (size_t i = ow->n_jobs; i-- > 0;)
            if (now > ow->jobs[i]->last_seen && now - ow->jobs[i]->last_seen >= forget)
                owners_forget(ow, i, "silent past twice diag.job_idle");
    }
    while (ow->n_jobs > ow->o.max_jobs) {
        size_t oldest = SIZE_MAX;
        for (size_t i = 0; i < ow->n_jobs; i++)
            if (ow->jobs[i]->gen != ow->gen &&
                (oldest == SIZE_MAX || ow->jobs[i]->last_seen < ow->jobs[oldest]->last_seen))
                oldest = i;
        if (oldest == SIZE_MAX)
            break;
        owners_forget(ow, oldest, "more jobs than limits.max_jobs, this one the least recent");
    }
}

/* The index + 1 of identity among j's, 0 when absent. */
static uint32_t owners_ident_find(const struct owners_job *j, const char *identity)
{
    for (uint32_t i = 0; j && i < j->n_idents; i++)
        if (strcmp(j->idents[i], identity) == 0)
            return i + 1;
    return 0;
}

/* identity in j's idents: its index + 1, or 0 on ENOMEM. */
static uint32_t owners_ident_add(struct owners_job *j, const char *identity)
{
    uint32_t k = owners_ident_find(j, identity);
    char **grown;

    if (k)
        return k;
    grown = realloc(j->idents, (j->n_idents + 1) * sizeof(*grown));
    if (!grown)
        return 0;
    j->idents = grown;
    if (!(j->idents[j->n_idents] = strdup(identity)))
        return 0;
    return ++j->n_idents;
}

/* j's rank slots up to rank. 0 or -ENOMEM. */
static int owners_grow(struct owners *ow, struct owners_job *j, uint32_t rank)
{
    uint32_t n = j->n_ranks ? j->n_ranks : 8;
    struct owners_rank *grown;

    if (rank < j->n_ranks)
        return 0;
    while (n <= rank)
        n = n > UINT32_MAX / 2 ? UINT32_MAX : n * 2;
    if (n > ow->o.max_ranks && rank < ow->o.max_ranks)
        n = ow->o.max_ranks;
    grown = realloc(j->ranks, (size_t)n * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    memset(grown + j->n_ranks, 0, (size_t)(n - j->n_ranks) * sizeof(*grown));
    j->ranks = grown;
    ow->n_ranks += n - j->n_ranks;
    j->n_ranks = n;
    return 0;
}

/* --- one batch ------------------------------------------------------------------ */

/* The batch's view of job name (added on first sight). NULL on ENOMEM. */
static struct owners_pass_job *owners_pass_job(struct owners_pass *p, const char *name)
{
    struct owners_pass_job *grown;

    if (p->last < p->n_jobs && strcmp(p->jobs[p->last].name, name) == 0)
        return &p->jobs[p->last];
    for (p->last = 0; p->last < p->n_jobs; p->last++)
        if (strcmp(p->jobs[p->last].name, name) == 0)
            return &p->jobs[p->last];
    grown = realloc(p->jobs, (p->n_jobs + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    p->jobs = grown;
    struct owners_job *j = owners_find(p->ow, name);
    p->jobs[p->n_jobs] = (struct owners_pass_job){name, j, owners_ident_find(j, p->identity), 0};
    return &p->jobs[p->last = p->n_jobs++];
}

typedef int (*owners_visit_fn)(struct owners_pass *p, struct owners_pass_job *pj, uint32_t rank);

/* fn for every (job, rank) the batch writes: resources first (they may
 * declare the attempt), then step records and rank statuses. Stops at the
 * first nonzero return and returns it; -ENOMEM when out of memory. */
static int owners_each(struct owners_pass *p, owners_visit_fn fn)
{
    const Argus__V1__Batch *b = p->b;
    struct owners_pass_job *pj;
    int r;

#define OWNERS_VISIT(n, arr)                                                                       \
    for (size_t i = 0; i < b->n; i++) {                                                            \
        if (!(pj = owners_pass_job(p, b->arr[i]->job)))                                            \
            return -ENOMEM;                                                                        \
        if ((r = fn(p, pj, b->arr[i]->rank)) != 0)                                                 \
            return r;                                                                              \
    }
    OWNERS_VISIT(n_resources, resources)
    OWNERS_VISIT(n_steps, steps)
    OWNERS_VISIT(n_statuses, statuses)
#undef OWNERS_VISIT
    return 0;
}

/* The attempts this batch declares, per job. 0 or -ENOMEM. */
static int owners_pass_restarts(struct owners_pass *p)
{
    struct owners_pass_job *pj;

    for (size_t i = 0; i < p->b->n_resources; i++) {
        if (!(pj = owners_pass_job(p, p->b->resources[i]->job)))
            return -ENOMEM;
        if (p->b->resources[i]->restart > pj->restart)
            pj->restart = p->b->resources[i]->restart;
    }
    for (size_t i = 0; i < p->b->n_statuses; i++) {
        if (!(pj = owners_pass_job(p, p->b->statuses[i]->job)))
            return -ENOMEM;
        if (p->b->statuses[i]->restart > pj->restart)
            pj->restart = p->b->statuses[i]->restart;
    }
    return 0;
}

static uint32_t owners_epoch(const struct owners_pass_job *pj)
{
    return pj->j && pj->j->restart > pj->restart ? pj->j->restart : pj->restart;
}

/* The refusal: err, counted, logged once per (job, rank, intruder) per
 * interval. */
static int owners_refuse(struct owners_pass *p, struct owners_pass_job *pj, uint32_t rank)
{
    struct owners_rank *e = &pj->j->ranks[rank];
    const char *owner = pj->j->idents[e->owner - 1];
    uint64_t by = name_id(p->identity);
    double ago = (double)(p->now > e->last_seen ? p->now - e->last_seen : 0) / 1e9;

    snprintf(p->err, p->errlen,
             "rank %" PRIu32 " of job %.128s belongs to '%.128s' (its last record %.1f s ago); "
             "'%.128s' may not write it: it moves once '%.128s' is silent for diag.job_idle "
             "(%.0f s) or the job restarts (a higher Resource.restart than %" PRIu32 ")",
             rank, pj->name, owner, ago, p->identity, owner, (double)p->ow->o.idle_ns / 1e9,
             e->restart);
    p->ow->refused++;
    if (e->logged_by != by || p->now - e->logged_ns >= p->ow->o.log_interval_ns) {
        e->logged_by = by;
        e->logged_ns = p->now;
        log_warn("ingest", "refused a batch of agent %s: %s", p->identity, p->err);
    }
    return TRANSPORT_PERMISSION_DENIED;
}

/* Phase 1: may the sender write (job, rank)? */
static int owners_check(struct owners_pass *p, struct owners_pass_job *pj, uint32_t rank)
{
    const struct owners_rank *e;

    if (rank >= p->ow->o.max_ranks) {
        snprintf(p->err, p->errlen, "rank %" PRIu32 " of job %.128s is not below %" PRIu32, rank,
                 pj->name, p->ow->o.max_ranks);
        return TRANSPORT_INVALID_ARGUMENT;
    }
    if (!pj->j || rank >= pj->j->n_ranks)
        return 0;
    e = &pj->j->ranks[rank];
    if (!e->owner || e->owner == pj->ident || owners_epoch(pj) > e->restart)
        return 0;
    if (p->now > e->last_seen && p->now - e->last_seen >= p->ow->o.idle_ns)
        return 0;
    return owners_refuse(p, pj, rank);
}

/* Phase 2: every job, identity and slot the batch needs, so that claiming
 * cannot fail. 0 or -ENOMEM. */
static int owners_prepare(struct owners_pass *p, struct owners_pass_job *pj, uint32_t rank)
{
    if (!pj->j && !(pj->j = owners_add_job(p->ow, pj->name)))
        return -ENOMEM;
    if (!pj->ident && !(pj->ident = owners_ident_add(pj->j, p->identity)))
        return -ENOMEM;
    pj->j->gen = p->ow->gen;
    return owners_grow(p->ow, pj->j, rank);
}

/* Say why rank moves from its owner to the sender. */
static void owners_log_move(struct owners_pass *p, struct owners_pass_job *pj, uint32_t rank,
                            const struct owners_rank *e)
{
    const char *from = pj->j->idents[e->owner - 1];

    if (pj->j->restart > e->restart)
        log_info("ingest",
                 "rank %" PRIu32 " of job %s moves from %s to %s: a new attempt of the job "
                 "(restart %" PRIu32 ", it was written under %" PRIu32 ")",
                 rank, pj->name, from, p->identity, pj->j->restart, e->restart);
    else
        log_info("ingest",
                 "rank %" PRIu32 " of job %s moves from %s to %s: %s sent none of its records for "
                 "%.1f s (diag.job_idle %.0f s)",
                 rank, pj->name, from, p->identity, from, (double)(p->now - e->last_seen) / 1e9,
                 (double)p->ow->o.idle_ns / 1e9);
}

/* Phase 3: claim, move or refresh (job, rank); queue it to be stored. */
static int owners_claim(struct owners_pass *p, struct owners_pass_job *pj, uint32_t rank)
{
    struct owners_rank *e = &pj->j->ranks[rank];
    bool store = false;

    pj->j->last_seen = p->now;
    if (owners_epoch(pj) > pj->j->restart)
        pj->j->restart = owners_epoch(pj);
    if (e->owner != pj->ident) { /* a claim or a move: in the job's newest attempt */
        if (e->owner) {
            owners_log_move(p, pj, rank, e);
            p->ow->moves++;
        }
        e->owner = pj->ident;
        e->restart = pj->j->restart;
        store = true;
    } else if (pj->restart > e->restart) {
        /* the owner's own attempt is what it declares: its late records of an
         * older attempt must not keep the rank from the newer one's writer */
        e->restart = pj->restart;
        store = true;
    }
    e->last_seen = p->now;
    if (p->now - e->stored_seen >= p->ow->o.idle_ns / 8 || p->now < e->stored_seen)
        store = true;
    if (store && !e->queued && p->queue) {
        e->queued = true;
        p->queue[p->n_queue].j = pj->j;
        p->queue[p->n_queue++].rank = rank;
    }
    return 0;
}

/* --- the store ------------------------------------------------------------------ */

/* A stored entry: key job \0 | rank u32, value restart u32 | last_seen u64 |
 * owner (big-endian). */
#define OWNERS_VALUE_HEAD 12

static void owners_put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t owners_get_be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* The queued entries as keys and values in one malloc'd block (*block; the
 * caller frees it and *kv), marked stored. The count, or -ENOMEM. */
static long owners_encode(struct owners_pass *p, void **block, struct store_pair **kv)
{
    size_t total = 0;
    uint8_t *at;

    for (size_t i = 0; i < p->n_queue; i++) {
        struct owners_job *j = p->queue[i].j;
        struct owners_rank *e = &j->ranks[p->queue[i].rank];
        total += strlen(j->job) + 5 + OWNERS_VALUE_HEAD + strlen(j->idents[e->owner - 1]);
        e->queued = false;
    }
    *block = malloc(total ? total : 1);
    *kv = calloc(p->n_queue ? p->n_queue : 1, sizeof(**kv));
    if (!*block || !*kv)
        return -ENOMEM;
    at = *block;
    for (size_t i = 0; i < p->n_queue; i++) {
        struct owners_job *j = p->queue[i].j;
        struct owners_rank *e = &j->ranks[p->queue[i].rank];
        const char *owner = j->idents[e->owner - 1];
        size_t jl = strlen(j->job), ol = strlen(owner);

        memcpy(at, j->job, jl + 1);
        owners_put_be(at + jl + 1, p->queue[i].rank, 4);
        (*kv)[i] = (struct store_pair){at, jl + 5, at + jl + 5, OWNERS_VALUE_HEAD + ol};
        at += jl + 5;
        owners_put_be(at, e->restart, 4);
        owners_put_be(at + 4, e->last_seen, 8);
        memcpy(at + OWNERS_VALUE_HEAD, owner, ol);
        at += OWNERS_VALUE_HEAD + ol;
        e->stored_seen = e->last_seen;
    }
    return (long)p->n_queue;
}

/* Write the encoded entries (outside the lock); a failure is counted, and
 * the entries are written again with their next records. */
static void owners_store(struct owners *ow, const struct store_pair *kv, size_t n)
{
    static struct log_ratelimit rl = {.interval_ns = 60 * NSEC_PER_SEC, .burst = 1};
    char err[160];

    if (!ow->store || !n || store_put_owners(ow->store, kv, n, err, sizeof(err)) == 0)
        return;
    pthread_mutex_lock(&ow->lock);
    ow->store_errors += n;
    for (size_t i = 0; i < n; i++) { /* not stored after all: written again next time */
        const char *job = kv[i].key;
        struct owners_job *j = owners_find(ow, job);
        uint32_t rank = (uint32_t)owners_get_be((const uint8_t *)job + kv[i].klen - 4, 4);
        if (j && rank < j->n_ranks)
            j->ranks[rank].stored_seen = 0;
    }
    log_ratelimited(&rl, LOG_LEVEL_WARN, "ingest", "rank owners not stored (%zu): %s", n, err);
    pthread_mutex_unlock(&ow->lock);
}

/* One stored entry into the table (store_owner_fn). */
static int owners_load_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct owners *ow = ctx;
    const uint8_t *k = key, *v = val;
    char job[256], owner[256];
    struct owners_job *j;
    struct owners_rank *e;
    uint32_t rank, ident;

    if (klen < 6 || klen - 5 >= sizeof(job) || k[klen - 5] != 0 || vlen <= OWNERS_VALUE_HEAD ||
        vlen - OWNERS_VALUE_HEAD >= sizeof(owner))
        return 0; /* not ours: skipped */
    memcpy(job, k, klen - 4);
    memcpy(owner, v + OWNERS_VALUE_HEAD, vlen - OWNERS_VALUE_HEAD);
    owner[vlen - OWNERS_VALUE_HEAD] = '\0';
    rank = (uint32_t)owners_get_be(k + klen - 4, 4);
    if (rank >= ow->o.max_ranks)
        return 0;
    if (!(j = owners_find(ow, job)) && !(j = owners_add_job(ow, job)))
        return -ENOMEM;
    if (!(ident = owners_ident_add(j, owner)) || owners_grow(ow, j, rank) < 0)
        return -ENOMEM;
    e = &j->ranks[rank];
    e->owner = ident;
    e->restart = (uint32_t)owners_get_be(v, 4);
    e->last_seen = e->stored_seen = owners_get_be(v + 4, 8);
    if (e->restart > j->restart)
        j->restart = e->restart;
    if (e->last_seen > j->last_seen)
        j->last_seen = e->last_seen;
    return 0;
}

long owners_load(struct owners *ow, uint64_t now_ns, char *err, size_t errlen)
{
    long r = 0;

    if (!ow->store)
        return 0;
    pthread_mutex_lock(&ow->lock);
    r = store_scan_owners(ow->store, owners_load_one, ow);
    if (r < 0)
        snprintf(err, errlen, "reading the stored rank owners: %s", strerror((int)-r));
    ow->gen++;
    owners_sweep(ow, now_ns, true);
    if (r == 0)
        r = (long)ow->n_ranks;
    pthread_mutex_unlock(&ow->lock);
    return r;
}

/* --- the API -------------------------------------------------------------------- */

struct owners *owners_new(const struct owners_options *o, struct store *store)
{
    struct owners *ow = calloc(1, sizeof(*ow));

    if (!ow)
        return NULL;
    ow->o = *o;
    if (!ow->o.max_ranks)
        ow->o.max_ranks = UINT32_MAX;
    if (!ow->o.max_jobs)
        ow->o.max_jobs = UINT32_MAX;
    ow->store = store;
    pthread_mutex_init(&ow->lock, NULL);
    return ow;
}

static void owners_noop(void *p)
{
}

void owners_free(struct owners *ow)
{
    if (!ow)
        return;
    tdestroy(ow->tree, owners_noop);
    for (size_t i = 0; i < ow->n_jobs; i++)
        owners_job_free(ow->jobs[i]);
    free(ow->jobs);
    pthread_mutex_destroy(&ow->lock);
    free(ow);
}

/* Check, prepare and claim under the lock; the entries to store come back
 * encoded in *block and *kv (n in *nkv). */
static int owners_judge_locked(struct owners_pass *p, void **block, struct store_pair **kv,
                               long *nkv)
{
    size_t records = p->b->n_resources + p->b->n_steps + p->b->n_statuses;
    int r;

    p->ow->gen++;
    owners_sweep(p->ow, p->now, false);
    if (owners_pass_restarts(p) < 0 || (r = owners_each(p, owners_check)) == -ENOMEM)
        goto oom;
    if (r != 0)
        return r;
    p->queue = p->ow->store && records ? malloc(records * sizeof(*p->queue)) : NULL;
    if ((p->ow->store && records && !p->queue) || owners_each(p, owners_prepare) < 0)
        goto oom;
    owners_each(p, owners_claim);
    *nkv = p->n_queue ? owners_encode(p, block, kv) : 0;
    if (*nkv < 0)
        p->ow->store_errors += p->n_queue;
    owners_sweep(p->ow, p->now, false); /* over max_jobs: the least recent, not this batch's */
    return TRANSPORT_OK;
oom:
    snprintf(p->err, p->errlen, "out of memory judging rank owners");
    return TRANSPORT_INTERNAL;
}

int owners_judge(struct owners *ow, const Argus__V1__Batch *b, const char *identity,
                 uint64_t now_ns, char *err, size_t errlen)
{
    struct owners_pass p = {
        .ow = ow, .b = b, .identity = identity, .now = now_ns, .err = err, .errlen = errlen};
    struct store_pair *kv = NULL;
    void *block = NULL;
    long nkv = 0;
    int r;

    pthread_mutex_lock(&ow->lock);
    r = owners_judge_locked(&p, &block, &kv, &nkv);
    pthread_mutex_unlock(&ow->lock);
    if (r == TRANSPORT_OK && nkv > 0)
        owners_store(ow, kv, (size_t)nkv);
    free(kv);
    free(block);
    free(p.queue);
    free(p.jobs);
    return r;
}

int owners_get(struct owners *ow, const char *job, uint32_t rank, char *out, size_t outlen)
{
    struct owners_job *j;
    int owned = 0;

    pthread_mutex_lock(&ow->lock);
    j = owners_find(ow, job);
    if (j && rank < j->n_ranks && j->ranks[rank].owner) {
        snprintf(out, outlen, "%s", j->idents[j->ranks[rank].owner - 1]);
        owned = 1;
    } else if (outlen) {
        out[0] = '\0';
    }
    pthread_mutex_unlock(&ow->lock);
    return owned;
}

void owners_get_stats(struct owners *ow, struct owners_stats *out)
{
    pthread_mutex_lock(&ow->lock);
    *out = (struct owners_stats){ow->refused, ow->moves, ow->store_errors, ow->n_jobs, ow->n_ranks};
    pthread_mutex_unlock(&ow->lock);
}
