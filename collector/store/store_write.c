/* The store's writers: store_ingest (a batch staged against the caches,
 * committed in one WriteBatch with its high-water mark, then applied to the
 * caches), store_high_water, and store_put_report. See store_db.h for the
 * locking.
 */
#include "collector/store/store_write.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "collector/store/store_seen.h"
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
    ji.state = (Argus__V1__JobState)j->state;
    ji.state_reason = (char *)j->reason;
    ji.restart = j->restart;
    ji.blind = (char *)j->blind;
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

/* Widen the (second, job) step range of index (the time or the received
 * family, cached in cache) by [lo, hi]; reads the DB on a cache miss. */
static int stage_range(struct store *s, struct stage_index *ix, struct kvset *cache, int cf,
                       uint64_t second, const char *job, uint64_t lo, uint64_t hi, char *err,
                       size_t errlen)
{
    size_t jl = strlen(job), kl = 8 + jl;
    uint8_t *key = malloc(kl);
    struct kv_node *n = NULL, *c;
    bool created, found;
    uint64_t r[2];
    int rc = -ENOMEM;

    if (!key)
        goto out;
    store_put_be64(key, second);
    memcpy(key + 8, job, jl);
    n = store_kv_get(&ix->index, key, kl, &created);
    if (!n)
        goto out;
    if (created) {
        n->v.range.min = UINT64_MAX;
        n->v.range.max = 0;
        if (array_reserve((void **)&ix->items, &ix->cap, ix->n + 1, sizeof(*ix->items))) {
            store_kv_remove(&ix->index, n);
            goto out;
        }
        ix->items[ix->n++] = n;
        c = store_kv_find(cache, key, kl);
        if (c) {
            n->v.range = c->v.range;
        } else {
            rc = db_get_u64s(s, cf, key, kl, r, 2, &found, err, errlen);
            if (rc)
                goto out;
            if (found) {
                n->v.range.min = r[0];
                n->v.range.max = r[1];
            }
        }
    }
    if (lo < n->v.range.min)
        n->v.range.min = lo;
    if (hi > n->v.range.max)
        n->v.range.max = hi;
    rc = 0;
out:
    if (rc == -ENOMEM)
        store_set_err(err, errlen, "ingest: out of memory");
    free(key);
    return rc;
}

/* The steps of one job that a batch carries next to each other: they go to
 * the received index as one range. */
struct step_run {
    const char *job;
    uint64_t min, max;
};

/* Stage run (the received index entry of its job) and start a new one. */
static int run_flush(struct store *s, struct step_run *run, const char *job, char *err,
                     size_t errlen)
{
    uint64_t sec = s->stage.recv_ns / NSEC_PER_SEC;
    struct step_run done = *run;

    *run = (struct step_run){job, UINT64_MAX, 0};
    if (!done.job)
        return 0;
    sec -= sec % STORE_RECEIVED_BUCKET_SEC;
    return stage_range(s, &s->stage.received, &s->received, CF_RECEIVED, sec, done.job, done.min,
                       done.max, err, errlen);
}

/* What one step record changes in its job's entry: first and last seen go by
 * the collector's receive time, rank_steps counts it when it is new. */
static void stage_job_record(struct job_entry *j, const Argus__V1__StepRecord *r, uint64_t recv,
                             bool fresh)
{
    if (!j->first_seen || recv < j->first_seen)
        j->first_seen = recv;
    if (recv > j->last_seen)
        j->last_seen = recv;
    if (r->step > j->last_step)
        j->last_step = r->step;
    j->rank_steps += fresh;
}

static int stage_step(struct store *s, rocksdb_writebatch_t *wb, const Argus__V1__StepRecord *r,
                      const struct store_slice *raw, char *err, size_t errlen)
{
    const char *job = r->job ? r->job : "";
    size_t kl, n;
    uint8_t *key = store_job_key(job, r->step, 8, r->rank, 4, false, &kl);
    struct job_entry *j = stage_job(s, job);
    int fresh = -ENOMEM;
    long compact;

    if (!key || !j) {
        store_set_err(err, errlen, "ingest: out of memory");
        goto out;
    }
    fresh = store_seen_mark(s, job, r->step, r->rank, key, kl, err, errlen);
    if (fresh < 0)
        goto out;
    /* a record already stored is written again under the same key (stored
     * once, the newest copy wins) and not counted again */
    compact = store_stepform_encode(&s->form, r);
    if (compact < 0) {
        fresh = -ENOMEM;
        store_set_err(err, errlen, "ingest: out of memory");
        goto out;
    }
    if (compact) {
        rocksdb_writebatch_put_cf(wb, s->cf[CF_STEPS], (char *)key, kl, (char *)s->form.buf,
                                  (size_t)compact);
    } else if (raw) { /* the record's bytes as the agent packed them: no repack */
        rocksdb_writebatch_put_cf(wb, s->cf[CF_STEPS], (char *)key, kl, raw->data, raw->len);
    } else { /* packed again (its size only computed here: the compact form is the rule) */
        n = argus__v1__step_record__get_packed_size(r);
        if (store_buf_reserve(s, n + 1)) {
            fresh = -ENOMEM;
            store_set_err(err, errlen, "ingest: out of memory");
            goto out;
        }
        argus__v1__step_record__pack(r, s->buf);
        rocksdb_writebatch_put_cf(wb, s->cf[CF_STEPS], (char *)key, kl, (char *)s->buf, n);
    }
    stage_job_record(j, r, s->stage.recv_ns, fresh);
    s->stage.fresh_records += fresh;
out:
    free(key);
    return fresh < 0 ? fresh : 0;
}

static int stage_steps(struct store *s, rocksdb_writebatch_t *wb, const Argus__V1__Batch *b,
                       const struct store_slice *raw, char *err, size_t errlen)
{
    struct step_run run = {0};
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < b->n_steps; i++) {
        const Argus__V1__StepRecord *r = b->steps[i];
        const char *job = r->job ? r->job : "";

        if (!run.job || strcmp(run.job, job) != 0)
            rc = run_flush(s, &run, job, err, errlen);
        if (rc == 0)
            rc = stage_step(s, wb, r, raw ? &raw[i] : NULL, err, errlen);
        if (r->step < run.min)
            run.min = r->step;
        if (r->step > run.max)
            run.max = r->step;
        if (rc == 0)
            rc = stage_range(s, &s->stage.time, &s->times, CF_TIME, r->start_unix_ns / NSEC_PER_SEC,
                             job, r->step, r->step, err, errlen);
    }
    return rc ? rc : run_flush(s, &run, NULL, err, errlen);
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

/* Put the staged entries of ix into wb (family cf). */
static void stage_index_put(struct store *s, rocksdb_writebatch_t *wb, int cf,
                            const struct stage_index *ix)
{
    uint8_t v[16];

    for (size_t i = 0; i < ix->n; i++) {
        store_put_be64(v, ix->items[i]->v.range.min);
        store_put_be64(v + 8, ix->items[i]->v.range.max);
        rocksdb_writebatch_put_cf(wb, s->cf[cf], (char *)ix->items[i]->key, ix->items[i]->klen,
                                  (char *)v, sizeof(v));
    }
}

/* JobInfo and index values of everything staged. */
static int stage_finish(struct store *s, rocksdb_writebatch_t *wb)
{
    struct stage *st = &s->stage;

    for (size_t i = 0; i < st->n_jobs; i++) {
        uint8_t *p;
        size_t n = job_info_pack(&st->jobs[i], &p, s);

        if (n == SIZE_MAX)
            return -ENOMEM;
        rocksdb_writebatch_put_cf(wb, s->cf[CF_JOBS], st->jobs[i].job, strlen(st->jobs[i].job),
                                  (char *)p, n);
    }
    stage_index_put(s, wb, CF_TIME, &st->time);
    stage_index_put(s, wb, CF_RECEIVED, &st->received);
    return 0;
}

/* Copy the committed entries of ix into cache (emptied when it would grow
 * past its bound or cannot take them: it is reread lazily). */
static void stage_index_apply(struct kvset *cache, const struct stage_index *ix)
{
    struct kv_node *n;
    bool created;

    if (cache->count + ix->n > STORE_TIME_CACHE_MAX)
        store_kv_clear(cache, free);
    for (size_t i = 0; i < ix->n; i++) {
        n = store_kv_get(cache, ix->items[i]->key, ix->items[i]->klen, &created);
        if (!n) {
            store_kv_clear(cache, free);
            break;
        }
        n->v.range = ix->items[i]->v.range;
    }
}

/* After a committed write: move the staged state into the caches. A cache
 * that cannot take it (ENOMEM) is dropped: the indexes and hwm are reread
 * lazily, the job cache is reloaded by the next ingest. */
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
    stage_index_apply(&s->times, &st->time);
    stage_index_apply(&s->received, &st->received);
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
    st->time.n = st->received.n = 0;
    st->fresh_records = 0;
    store_kv_clear(&st->jobs_index, free);
    store_kv_clear(&st->time.index, free);
    store_kv_clear(&st->received.index, free);
}

void store_stage_free(struct stage *st)
{
    stage_reset(st);
    free(st->jobs);
    free(st->cached);
    free(st->time.items);
    free(st->received.items);
}

/* Stage everything the batch carries into a new WriteBatch (*wb). */
static int stage_batch(struct store *s, rocksdb_writebatch_t **wb, const Argus__V1__Batch *b,
                       const struct store_slice *raw, char *err, size_t errlen)
{
    int rc;

    *wb = rocksdb_writebatch_create();
    rc = stage_steps(s, *wb, b, raw, err, errlen);
    if (!rc)
        rc = stage_resources(s, *wb, b);
    if (!rc)
        rc = stage_names(s, *wb, b);
    if (!rc)
        rc = stage_finish(s, *wb);
    return rc;
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
    rc = stage_batch(s, &wb, b, raw, err, errlen);
    if (rc)
        goto out;
    store_put_be64(seqv, b->seq);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_DEDUP], (char *)hkey, hl, (char *)seqv, 8);
    rc = store_commit(s, wb, true, err, errlen);
    if (rc)
        goto out;
    stage_apply(s, hkey, hl, b->seq);
    s->stats.write_batches++;
    s->stats.duplicate_records += b->n_steps - s->stage.fresh_records;
    rc = STORE_INGEST_WRITTEN;
out:
    if (rc == -ENOMEM)
        store_set_err(err, errlen, "ingest: out of memory");
    if (wb)
        rocksdb_writebatch_destroy(wb);
    store_seen_end_batch(s, rc == STORE_INGEST_WRITTEN);
    stage_reset(&s->stage);
    free(hkey);
    return rc;
}

int store_ingest(struct store *s, const Argus__V1__Batch *batch, char *err, size_t errlen)
{
    return store_ingest_raw(s, batch, NULL, 0, err, errlen);
}

int store_ingest_raw(struct store *s, const Argus__V1__Batch *batch, const struct store_slice *raw,
                     uint64_t recv_unix_ns, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    s->stage.recv_ns = recv_unix_ns ? recv_unix_ns : clock_real_ns();
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0 && store_reserve_short(&s->reserve)) {
        store_set_err(err, errlen,
                      "disk full: the reserve (%llu bytes) is not held in %s; ingest waits "
                      "until twice that is free",
                      (unsigned long long)s->reserve.want, s->dir);
        rc = -EIO;
    }
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

/* The cached entry of job gets the state (state < 0: unchanged) and the
 * blind line (NULL: unchanged), and its JobInfo is written. */
static int job_state_locked(struct store *s, const char *job, int state, const char *reason,
                            uint32_t restart, const char *blind, char *err, size_t errlen)
{
    struct kv_node *n = store_kv_find(&s->jobs, job, strlen(job));
    rocksdb_writebatch_t *wb;
    uint8_t *p;
    size_t len;
    int rc;

    if (!n)
        return 0;
    struct job_entry *j = n->v.job;
    if (state >= 0) {
        j->state = state;
        j->restart = restart;
        snprintf(j->reason, sizeof(j->reason), "%s", reason ? reason : "");
    }
    if (blind)
        snprintf(j->blind, sizeof(j->blind), "%s", blind);
    len = job_info_pack(j, &p, s);
    if (len == SIZE_MAX) {
        store_set_err(err, errlen, "job state: out of memory");
        return -ENOMEM;
    }
    wb = rocksdb_writebatch_create();
    rocksdb_writebatch_put_cf(wb, s->cf[CF_JOBS], job, strlen(job), (char *)p, len);
    rc = store_commit(s, wb, false, err, errlen);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int store_put_job_state(struct store *s, const char *job, int state, const char *reason,
                        uint32_t restart, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = job_state_locked(s, job, state, reason, restart, NULL, err, errlen);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int store_put_job_blind(struct store *s, const char *job, const char *blind, char *err,
                        size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = job_state_locked(s, job, -1, NULL, 0, blind ? blind : "", err, errlen);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
