/* The store's writers: store_ingest (a batch staged against the caches,
 * committed in one WriteBatch with its high-water mark, then applied to the
 * caches), store_high_water, and store_put_report. See store_impl.h for the
 * locking.
 */
#include "collector/store/store_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "common/array.h"
#include "common/clock.h"

#define STORE_TIME_CACHE_MAX 65536
#define STORE_HWM_CACHE_MAX 65536

/* ---- ingest ------------------------------------------------------------------ */

/* True when the sorted r[0..n) holds rank. */
static bool ranks_has(const uint32_t *r, size_t n, uint32_t rank)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[mid] == rank)
            return true;
        if (r[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Pack j as a JobInfo into s->buf (*buf points there). Returns its size, or
 * SIZE_MAX on ENOMEM. */
static size_t job_info_pack(const struct job_entry *j, uint8_t **buf, struct store *s)
{
    Argus__V1__JobInfo ji = ARGUS__V1__JOB_INFO__INIT;
    size_t n;

    ji.job = j->job;
    ji.first_seen_unix_ns = j->first_seen;
    ji.last_seen_unix_ns = j->last_seen;
    ji.world_size = j->world_size;
    ji.ranks_seen = j->ranks_seen;
    ji.last_step = j->last_step;
    ji.rank_steps = j->rank_steps;
    n = argus__v1__job_info__get_packed_size(&ji);
    if (store_buf_reserve(s, n ? n : 1))
        return SIZE_MAX;
    argus__v1__job_info__pack(&ji, s->buf);
    *buf = s->buf;
    return n;
}

/* Read a u64 (or a min/max pair) value; *found false when absent. */
static int db_get_u64s(struct store *s, int cf, const void *key, size_t klen, uint64_t *vals, int n,
                       bool *found, char *err, size_t errlen)
{
    char *rerr = NULL;
    size_t vl = 0;
    char *v = rocksdb_get_cf(s->db, s->ro, s->cf[cf], key, klen, &vl, &rerr);

    if (rerr)
        return store_rocks_fail(rerr, err, errlen, "read");
    *found = v && vl == (size_t)n * 8;
    for (int i = 0; *found && i < n; i++)
        vals[i] = store_get_be64((const uint8_t *)v + 8 * i);
    free(v);
    return 0;
}

static int hwm_lookup(struct store *s, const uint8_t *key, size_t klen, uint64_t *seq, char *err,
                      size_t errlen)
{
    struct kv_node *n = store_kv_find(&s->hwm, key, klen);
    bool found, created;
    int rc;

    if (n) {
        *seq = n->v.seq;
        return 0;
    }
    rc = db_get_u64s(s, CF_DEDUP, key, klen, seq, 1, &found, err, errlen);
    if (rc)
        return rc;
    if (!found)
        *seq = 0;
    if (s->hwm.count >= STORE_HWM_CACHE_MAX)
        store_kv_clear(&s->hwm, free);
    n = store_kv_get(&s->hwm, key, klen, &created);
    if (n)
        n->v.seq = *seq;
    return 0;
}

/* The staged copy of job's entry, created from the cache on first use. */
static struct job_entry *stage_job(struct store *s, const char *job)
{
    struct stage *st = &s->stage;
    size_t jl = strlen(job);
    bool created;
    struct kv_node *n = store_kv_get(&st->jobs_index, job, jl, &created), *c;
    struct job_entry *j;

    if (!n)
        return NULL;
    if (!created)
        return &st->jobs[n->v.index];
    if (array_reserve((void **)&st->jobs, &st->cap_jobs, st->n_jobs + 1, sizeof(*st->jobs)) ||
        array_reserve((void **)&st->cached, &st->cap_cached, st->n_jobs + 1, sizeof(*st->cached))) {
        store_kv_remove(&st->jobs_index, n);
        return NULL;
    }
    n->v.index = st->n_jobs;
    j = &st->jobs[st->n_jobs];
    c = store_kv_find(&s->jobs, job, jl);
    st->cached[st->n_jobs++] = c ? c->v.job : NULL;
    if (c)
        *j = *c->v.job;
    else
        memset(j, 0, sizeof(*j));
    j->job = (char *)job; /* borrowed from the batch */
    j->ranks = NULL;
    j->n_ranks = j->cap_ranks = 0;
    return j;
}

/* Widen the (second, job) step range by step; reads the DB on a cache miss. */
static int stage_time(struct store *s, const char *job, uint64_t start_ns, uint64_t step, char *err,
                      size_t errlen)
{
    struct stage *st = &s->stage;
    size_t jl = strlen(job), kl = 8 + jl;
    uint8_t *key = malloc(kl);
    struct kv_node *n = NULL, *c;
    bool created, found;
    uint64_t r[2];
    int rc = -ENOMEM;

    if (!key)
        goto out;
    store_put_be64(key, start_ns / NSEC_PER_SEC);
    memcpy(key + 8, job, jl);
    n = store_kv_get(&st->time_index, key, kl, &created);
    if (!n)
        goto out;
    if (created) {
        n->v.range.min = UINT64_MAX;
        n->v.range.max = 0;
        if (array_reserve((void **)&st->times, &st->cap_times, st->n_times + 1,
                          sizeof(*st->times))) {
            store_kv_remove(&st->time_index, n);
            goto out;
        }
        st->times[st->n_times++] = n;
        c = store_kv_find(&s->times, key, kl);
        if (c) {
            n->v.range = c->v.range;
        } else {
            rc = db_get_u64s(s, CF_TIME, key, kl, r, 2, &found, err, errlen);
            if (rc)
                goto out;
            if (found) {
                n->v.range.min = r[0];
                n->v.range.max = r[1];
            }
        }
    }
    if (step < n->v.range.min)
        n->v.range.min = step;
    if (step > n->v.range.max)
        n->v.range.max = step;
    rc = 0;
out:
    if (rc == -ENOMEM)
        store_set_err(err, errlen, "ingest: out of memory");
    free(key);
    return rc;
}

static int stage_steps(struct store *s, rocksdb_writebatch_t *wb, const Argus__V1__Batch *b,
                       const struct store_slice *raw, char *err, size_t errlen)
{
    for (size_t i = 0; i < b->n_steps; i++) {
        const Argus__V1__StepRecord *r = b->steps[i];
        const char *job = r->job ? r->job : "";
        size_t kl, n = raw ? raw[i].len : argus__v1__step_record__get_packed_size(r);
        uint8_t *key = store_job_key(job, r->step, 8, r->rank, 4, false, &kl);
        struct job_entry *j = stage_job(s, job);
        int rc;

        if (!key || !j || (!raw && store_buf_reserve(s, n + 1))) {
            free(key);
            store_set_err(err, errlen, "ingest: out of memory");
            return -ENOMEM;
        }
        if (raw) { /* the record's bytes as the agent packed them: no repack */
            rocksdb_writebatch_put_cf(wb, s->cf[CF_STEPS], (char *)key, kl, raw[i].data, n);
        } else {
            argus__v1__step_record__pack(r, s->buf);
            rocksdb_writebatch_put_cf(wb, s->cf[CF_STEPS], (char *)key, kl, (char *)s->buf, n);
        }
        free(key);
        if (!j->first_seen || r->start_unix_ns < j->first_seen)
            j->first_seen = r->start_unix_ns;
        if (r->start_unix_ns > j->last_seen)
            j->last_seen = r->start_unix_ns;
        if (r->step > j->last_step)
            j->last_step = r->step;
        j->rank_steps++;
        rc = stage_time(s, job, r->start_unix_ns, r->step, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

static int stage_resources(struct store *s, rocksdb_writebatch_t *wb, const Argus__V1__Batch *b)
{
    for (size_t i = 0; i < b->n_resources; i++) {
        const Argus__V1__Resource *r = b->resources[i];
        const char *job = r->job ? r->job : "";
        size_t kl, n = argus__v1__resource__get_packed_size(r);
        uint8_t *key = store_job_key(job, 0, 0, r->rank, 4, false, &kl);
        struct job_entry *j = stage_job(s, job);
        size_t ci = j ? (size_t)(j - s->stage.jobs) : 0;
        const struct job_entry *c = j ? s->stage.cached[ci] : NULL;
        bool seen;

        if (!key || !j || store_buf_reserve(s, n + 1)) {
            free(key);
            return -ENOMEM;
        }
        argus__v1__resource__pack(r, s->buf);
        rocksdb_writebatch_put_cf(wb, s->cf[CF_RANKS], (char *)key, kl, (char *)s->buf, n);
        free(key);
        if (r->world_size > j->world_size)
            j->world_size = r->world_size;
        seen = c && ranks_has(c->ranks, c->n_ranks, r->rank);
        for (size_t k = 0; !seen && k < j->n_ranks; k++)
            seen = j->ranks[k] == r->rank;
        if (!seen) {
            if (store_ranks_add(j, &r->rank, 1, false))
                return -ENOMEM;
            j->ranks_seen++;
        }
    }
    return 0;
}

static int stage_names(struct store *s, rocksdb_writebatch_t *wb, const Argus__V1__Batch *b)
{
    for (size_t i = 0; i < b->n_names; i++) {
        const Argus__V1__NameEntry *e = b->names[i];
        const char *name = e->name ? e->name : "";
        size_t kl;
        uint8_t *key = store_job_key(e->job ? e->job : "", e->id, 8, 0, 0, false, &kl);

        if (!key)
            return -ENOMEM;
        rocksdb_writebatch_put_cf(wb, s->cf[CF_NAMES], (char *)key, kl, name, strlen(name));
        free(key);
    }
    return 0;
}

/* JobInfo and time index values of everything staged. */
static int stage_finish(struct store *s, rocksdb_writebatch_t *wb)
{
    struct stage *st = &s->stage;
    uint8_t v[16];

    for (size_t i = 0; i < st->n_jobs; i++) {
        uint8_t *p;
        size_t n = job_info_pack(&st->jobs[i], &p, s);

        if (n == SIZE_MAX)
            return -ENOMEM;
        rocksdb_writebatch_put_cf(wb, s->cf[CF_JOBS], st->jobs[i].job, strlen(st->jobs[i].job),
                                  (char *)p, n);
    }
    for (size_t i = 0; i < st->n_times; i++) {
        store_put_be64(v, st->times[i]->v.range.min);
        store_put_be64(v + 8, st->times[i]->v.range.max);
        rocksdb_writebatch_put_cf(wb, s->cf[CF_TIME], (char *)st->times[i]->key, st->times[i]->klen,
                                  (char *)v, sizeof(v));
    }
    return 0;
}

/* After a committed write: move the staged state into the caches. A cache
 * that cannot take it (ENOMEM) is dropped: time and hwm are reread lazily,
 * the job cache is reloaded by the next ingest. */
static void stage_apply(struct store *s, const uint8_t *hkey, size_t hlen, uint64_t seq)
{
    struct stage *st = &s->stage;
    struct kv_node *n;
    bool created;

    for (size_t i = 0; i < st->n_jobs; i++) {
        struct job_entry *j = &st->jobs[i], *c = st->cached[i];

        if (!c) {
            c = calloc(1, sizeof(*c));
            n = c ? store_kv_get(&s->jobs, j->job, strlen(j->job), &created) : NULL;
            if (!n || !(c->job = strdup(j->job))) {
                if (n)
                    store_kv_remove(&s->jobs, n);
                free(c);
                s->jobs_stale = true;
                continue;
            }
            n->v.job = c;
        }
        c->first_seen = j->first_seen;
        c->last_seen = j->last_seen;
        c->last_step = j->last_step;
        c->rank_steps = j->rank_steps;
        c->world_size = j->world_size;
        c->ranks_seen = j->ranks_seen;
        if (store_ranks_add(c, j->ranks, j->n_ranks, true))
            s->jobs_stale = true;
    }
    if (s->times.count + st->n_times > STORE_TIME_CACHE_MAX)
        store_kv_clear(&s->times, free);
    for (size_t i = 0; i < st->n_times; i++) {
        n = store_kv_get(&s->times, st->times[i]->key, st->times[i]->klen, &created);
        if (!n) {
            store_kv_clear(&s->times, free);
            break;
        }
        n->v.range = st->times[i]->v.range;
    }
    n = store_kv_get(&s->hwm, hkey, hlen, &created);
    if (n)
        n->v.seq = seq;
    else
        store_kv_clear(&s->hwm, free);
}

static void stage_reset(struct stage *st)
{
    for (size_t i = 0; i < st->n_jobs; i++)
        free(st->jobs[i].ranks);
    st->n_jobs = 0;
    st->n_times = 0;
    store_kv_clear(&st->jobs_index, free);
    store_kv_clear(&st->time_index, free);
}

void store_stage_free(struct stage *st)
{
    stage_reset(st);
    free(st->jobs);
    free(st->cached);
    free(st->times);
}

static int ingest_locked(struct store *s, const Argus__V1__Batch *b, const struct store_slice *raw,
                         char *err, size_t errlen)
{
    rocksdb_writebatch_t *wb = NULL;
    size_t hl;
    uint8_t *hkey = store_job_key(b->agent_id ? b->agent_id : "", b->epoch, 8, 0, 0, false, &hl);
    uint8_t seqv[8];
    uint64_t hwm;
    int rc = -ENOMEM;

    if (!hkey)
        goto out;
    rc = hwm_lookup(s, hkey, hl, &hwm, err, errlen);
    if (rc)
        goto out;
    if (b->seq <= hwm) {
        s->stats.duplicates++;
        rc = STORE_INGEST_DUPLICATE;
        goto out;
    }
    wb = rocksdb_writebatch_create();
    rc = stage_steps(s, wb, b, raw, err, errlen);
    if (!rc)
        rc = stage_resources(s, wb, b);
    if (!rc)
        rc = stage_names(s, wb, b);
    if (!rc)
        rc = stage_finish(s, wb);
    if (rc)
        goto out;
    store_put_be64(seqv, b->seq);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_DEDUP], (char *)hkey, hl, (char *)seqv, 8);
    rc = store_commit(s, wb, true, err, errlen);
    if (rc)
        goto out;
    stage_apply(s, hkey, hl, b->seq);
    s->stats.write_batches++;
    rc = STORE_INGEST_WRITTEN;
out:
    if (rc == -ENOMEM)
        store_set_err(err, errlen, "ingest: out of memory");
    if (wb)
        rocksdb_writebatch_destroy(wb);
    stage_reset(&s->stage);
    free(hkey);
    return rc;
}

int store_ingest(struct store *s, const Argus__V1__Batch *batch, char *err, size_t errlen)
{
    return store_ingest_raw(s, batch, NULL, err, errlen);
}

int store_ingest_raw(struct store *s, const Argus__V1__Batch *batch, const struct store_slice *raw,
                     char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0 && s->jobs_stale) {
        store_kv_clear(&s->jobs, store_job_node_free);
        rc = store_jobs_load(s, err, errlen);
        s->jobs_stale = rc != 0;
    }
    if (rc == 0)
        rc = ingest_locked(s, batch, raw, err, errlen);
    else
        s->stats.write_errors++;
    /* health follows the last write: failing until one succeeds again,
     * with the first error of the streak (the cause; later ones tend to
     * be "closed after an error") */
    if (rc < 0 && !s->stats.failing)
        snprintf(s->stats.last_error, sizeof(s->stats.last_error), "%s",
                 err && errlen && err[0] ? err : strerror(-rc));
    s->stats.failing = rc < 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int store_high_water(struct store *s, const char *agent_id, uint64_t epoch, uint64_t *seq)
{
    size_t kl;
    uint8_t *key = store_job_key(agent_id ? agent_id : "", epoch, 8, 0, 0, false, &kl);
    int rc = -ENOMEM;

    *seq = 0;
    if (!key)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = s->db ? hwm_lookup(s, key, kl, seq, NULL, 0) : -EIO;
    pthread_mutex_unlock(&s->lock);
    free(key);
    return rc;
}

/* ---- reports ----------------------------------------------------------------- */

/* job \0 | created ns u64 | id, malloc'd. */
static uint8_t *report_key(const char *job, uint64_t created, const char *id, size_t *len)
{
    size_t jl = strlen(job), il = strlen(id);
    uint8_t *k = malloc(jl + 9 + il + 1);

    if (!k)
        return NULL;
    memcpy(k, job, jl);
    k[jl] = 0;
    store_put_be64(k + jl + 1, created);
    memcpy(k + jl + 9, id, il);
    *len = jl + 9 + il;
    return k;
}

static int report_put_locked(struct store *s, const Argus__V1__Report *r, char *err, size_t errlen)
{
    const char *id = r->id ? r->id : "";
    size_t kl, ol = 0, n = argus__v1__report__get_packed_size(r);
    uint8_t *key = report_key(r->job ? r->job : "", r->created_unix_ns, id, &kl);
    char *rerr = NULL, *old = NULL;
    rocksdb_writebatch_t *wb = NULL;
    int rc = -ENOMEM;

    if (!key || store_buf_reserve(s, n + 1)) {
        store_set_err(err, errlen, "put report: out of memory");
        goto out;
    }
    old = rocksdb_get_cf(s->db, s->ro, s->cf[CF_REPORT_IDS], id, strlen(id), &ol, &rerr);
    if (rerr) {
        rc = store_rocks_fail(rerr, err, errlen, "put report");
        goto out;
    }
    wb = rocksdb_writebatch_create();
    if (old && (ol != kl || memcmp(old, key, kl)))
        rocksdb_writebatch_delete_cf(wb, s->cf[CF_REPORTS], old, ol);
    argus__v1__report__pack(r, s->buf);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_REPORTS], (char *)key, kl, (char *)s->buf, n);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_REPORT_IDS], id, strlen(id), (char *)key, kl);
    rc = store_commit(s, wb, false, err, errlen);
out:
    if (wb)
        rocksdb_writebatch_destroy(wb);
    free(old);
    free(key);
    return rc;
}

int store_put_report(struct store *s, const Argus__V1__Report *report, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = report_put_locked(s, report, err, errlen);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
