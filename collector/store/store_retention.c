/* The store's retention: store_apply_retention deletes steps (through the
 * time index), the jobs left without steps, and old reports, in one
 * WriteBatch under the writer lock; store_compact flushes and compacts every
 * family.
 */
#include "collector/store/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "collector/store/store_seen.h"
#include "common/array.h"
#include "common/clock.h"

struct retention {
    struct store *s;
    rocksdb_writebatch_t *wb;
    uint64_t cutoff_ns;
    int64_t removed;
    char **dead_jobs;
    size_t n_dead, cap_dead;
};

/* True when job has a step key at or after step `from`. */
static int job_has_steps_from(struct store *s, const char *job, uint64_t from, bool *has)
{
    size_t ll, hl;
    uint8_t *lo = store_job_key(job, from, 8, 0, 0, false, &ll);
    uint8_t *hi = store_job_key(job, 0, 0, 0, 0, true, &hl);
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it;
    char *rerr = NULL;

    if (!lo || !hi) {
        free(lo);
        free(hi);
        return -ENOMEM;
    }
    ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, hl);
    it = rocksdb_create_iterator_cf(s->db, ro, s->cf[CF_STEPS]);
    rocksdb_iter_seek(it, (char *)lo, ll);
    *has = rocksdb_iter_valid(it);
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    free(lo);
    free(hi);
    if (rerr) {
        free(rerr);
        return -EIO;
    }
    return 0;
}

/* Delete job's steps below `end`; when none remain, its ranks, names and
 * JobInfo go too. */
static int retire_job_steps(struct retention *r, const char *job, uint64_t end)
{
    struct store *s = r->s;
    size_t ll = 0, hl = 0;
    uint8_t *lo = store_job_key(job, 0, 8, 0, 0, false, &ll);
    uint8_t *hi = store_job_key(job, end, 8, 0, 0, false, &hl);
    bool has = true;
    int rc = -ENOMEM;

    if (!lo || !hi)
        goto out;
    rocksdb_writebatch_delete_range_cf(r->wb, s->cf[CF_STEPS], (char *)lo, ll, (char *)hi, hl);
    r->removed++;
    rc = job_has_steps_from(s, job, end, &has);
    if (rc || has)
        goto out;
    rc = -ENOMEM;
    free(hi);
    hi = store_job_key(job, 0, 0, 0, 0, true, &hl);
    if (!hi || array_reserve((void **)&r->dead_jobs, &r->cap_dead, r->n_dead + 1, sizeof(char *)) ||
        !(r->dead_jobs[r->n_dead] = strdup(job)))
        goto out;
    r->n_dead++;
    rocksdb_writebatch_delete_range_cf(r->wb, s->cf[CF_RANKS], (char *)lo, ll - 8, (char *)hi, hl);
    rocksdb_writebatch_delete_range_cf(r->wb, s->cf[CF_NAMES], (char *)lo, ll - 8, (char *)hi, hl);
    rocksdb_writebatch_delete_cf(r->wb, s->cf[CF_JOBS], job, strlen(job));
    r->removed += 3;
    rc = 0;
out:
    free(lo);
    free(hi);
    return rc;
}

/* Delete the index cf (time or received) below second `below`. */
static void retire_index(struct retention *r, int cf, uint64_t below)
{
    uint8_t lo[8], hi[8];

    store_put_be64(lo, 0);
    store_put_be64(hi, below);
    rocksdb_writebatch_delete_range_cf(r->wb, r->s->cf[cf], (char *)lo, 8, (char *)hi, 8);
}

static int stop_at_first(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    *(bool *)ctx = true;
    return 1;
}

/* 1 when the index cf has an entry below second `below`, 0 when not, -EIO. */
static int index_has_before(struct store *s, int cf, uint64_t below)
{
    uint8_t hi[8];
    bool found = false;
    int rc;

    store_put_be64(hi, below);
    rc = store_scan_range(s, cf, NULL, 0, hi, 8, stop_at_first, &found);
    return rc < 0 ? rc : found;
}

/* The steps of job o (its old received range) that a later replay of lower
 * steps (n) keeps stay indexed: one entry in the last old minute, looked at
 * again by the next pass. It goes after retire_index in the same WriteBatch. */
static int carry_forward(struct retention *r, const struct kv_node *o, const struct kv_node *n,
                         uint64_t cut)
{
    if (!n || n->v.range.min > o->v.range.max)
        return 0;
    return store_received_put(r->s, r->wb, cut - STORE_RECEIVED_BUCKET_SEC, o, n->v.range.min,
                              o->v.range.max);
}

/* Steps received in minutes that ended before cutoff_sec, found through the
 * received index. Each job's range is capped by the lowest step of anything
 * it received later, so a step whose records straddle the cutoff stays whole
 * and a replay of old steps keeps them until it ages out too. The time index
 * (agents' clocks) goes below the same cutoff on its own clock. */
static int retire_steps(struct retention *r, uint64_t cutoff_sec)
{
    struct time_agg old = {0}, newer = {0};
    uint64_t cut = cutoff_sec - cutoff_sec % STORE_RECEIVED_BUCKET_SEC;
    int rc;

    rc = cut ? store_time_aggregate(r->s, CF_RECEIVED, 0, cut, &old) : 0;
    if (rc == 0 && old.n)
        rc = store_time_aggregate(r->s, CF_RECEIVED, cut, 0, &newer);
    for (size_t i = 0; rc == 0 && i < old.n; i++) {
        struct kv_node *o = old.items[i];
        struct kv_node *n = store_kv_find(&newer.jobs, o->key, o->klen);
        uint64_t end = o->v.range.max == UINT64_MAX ? UINT64_MAX : o->v.range.max + 1;
        char *job = strndup((const char *)o->key, o->klen);

        if (n && n->v.range.min < end)
            end = n->v.range.min;
        rc = !job ? -ENOMEM : end ? retire_job_steps(r, job, end) : 0;
        free(job);
    }
    if (rc == 0 && old.keys) {
        retire_index(r, CF_RECEIVED, cut);
        r->removed += (int64_t)old.keys;
    }
    for (size_t i = 0; rc == 0 && i < old.n; i++)
        rc = carry_forward(r, old.items[i],
                           store_kv_find(&newer.jobs, old.items[i]->key, old.items[i]->klen), cut);
    if (rc == 0 && (rc = index_has_before(r->s, CF_TIME, cutoff_sec)) > 0) {
        retire_index(r, CF_TIME, cutoff_sec);
        r->removed++;
        rc = 0;
    }
    store_time_agg_free(&old);
    store_time_agg_free(&newer);
    return rc;
}

static int retire_report(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    struct retention *r = ctx;
    size_t jl = strnlen((const char *)key, klen);

    if (jl + 9 > klen || store_get_be64(key + jl + 1) >= r->cutoff_ns)
        return 0;
    rocksdb_writebatch_delete_cf(r->wb, r->s->cf[CF_REPORTS], (const char *)key, klen);
    rocksdb_writebatch_delete_cf(r->wb, r->s->cf[CF_REPORT_IDS], (const char *)key + jl + 9,
                                 klen - jl - 9);
    r->removed++;
    return 0;
}

static int64_t retention_locked(struct store *s, struct retention *r, uint64_t now_ns)
{
    const struct store_options *o = &s->opts;
    int rc = 0;

    if (o->steps_retention_ns && now_ns > o->steps_retention_ns &&
        (now_ns - o->steps_retention_ns) / NSEC_PER_SEC)
        rc = retire_steps(r, (now_ns - o->steps_retention_ns) / NSEC_PER_SEC);
    if (rc == 0 && o->reports_retention_ns && now_ns > o->reports_retention_ns) {
        r->cutoff_ns = now_ns - o->reports_retention_ns;
        rc = store_scan_range(s, CF_REPORTS, NULL, 0, NULL, 0, retire_report, r);
    }
    if (rc == 0 && r->removed)
        rc = store_commit(s, r->wb, false, NULL, 0);
    if (rc)
        return rc == -ENOMEM ? -ENOMEM : -EIO;
    for (size_t i = 0; i < r->n_dead; i++) {
        struct kv_node *n = store_kv_find(&s->jobs, r->dead_jobs[i], strlen(r->dead_jobs[i]));

        if (n) {
            store_job_entry_free(n->v.job);
            store_kv_remove(&s->jobs, n);
        }
        store_seen_forget(s, r->dead_jobs[i]);
    }
    store_kv_clear(&s->times, free);
    store_kv_clear(&s->received, free);
    return r->removed;
}

int64_t store_apply_retention(struct store *s, uint64_t now_ns)
{
    struct retention r = {.s = s};
    int64_t rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, NULL, 0);
    if (rc == 0) {
        r.wb = rocksdb_writebatch_create();
        rc = retention_locked(s, &r, now_ns);
        rocksdb_writebatch_destroy(r.wb);
    }
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < r.n_dead; i++)
        free(r.dead_jobs[i]);
    free(r.dead_jobs);
    return rc;
}

/* ---- compaction ---------------------------------------------------------------- */

int store_compact(struct store *s)
{
    int rc = store_read_begin(s);

    if (rc)
        return rc;
    for (int i = 0; i < CF_COUNT; i++)
        rocksdb_compact_range_cf(s->db, s->cf[i], NULL, 0, NULL, 0);
    store_read_end(s);
    return 0;
}
