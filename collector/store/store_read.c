/* The store's readers: the scans of jobs, steps, ranks and reports, one
 * report by id, names, and the time index aggregated per job
 * (store_time_aggregate, store_db.h). Each takes the read lock (store_read_begin), so it
 * runs next to ingest and fails with -EIO while the DB is closed.
 */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "collector/store/store_stepform.h"
#include "common/clock.h"

struct value_ctx {
    store_scan_fn fn;
    void *ctx;
};

static int value_only(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    struct value_ctx *c = ctx;

    return c->fn(c->ctx, val, vlen);
}

/* A step scan's state: the caller's fn and ctx, and the scratch that
 * restores compact values (store_stepform.h). */
struct step_ctx {
    store_scan_fn fn;
    void *ctx;
    struct store_stepform form;
};

/* Hand the StepRecord stored under key (job\0 | step | rank) to c->fn. */
static int step_value(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    struct step_ctx *c = ctx;
    size_t jl = strnlen((const char *)key, klen);
    const void *rec;
    size_t len;
    int rc;

    if (jl + 13 != klen)
        return -EIO; /* not a key this store writes */
    rc = store_stepform_decode(&c->form, (const char *)key, store_get_be64(key + jl + 1),
                               store_get_be32(key + jl + 9), val, vlen, &rec, &len);
    return rc ? rc : c->fn(c->ctx, rec, len);
}

/* Scan [job\0 | lo_a, job\0 | hi_a] (8-byte suffixes; hi_a 0 = the job's end). */
static int scan_job(struct store *s, int cf, const char *job, uint64_t lo_a, uint64_t hi_a,
                    store_kv_scan_fn fn, void *ctx)
{
    size_t ll, hl;
    bool open_end = hi_a == 0 || hi_a == UINT64_MAX;
    uint8_t *lo = store_job_key(job, lo_a, lo_a ? 8 : 0, 0, 0, false, &ll);
    uint8_t *hi = store_job_key(job, hi_a + 1, open_end ? 0 : 8, 0, 0, open_end, &hl);
    int rc = -ENOMEM;

    if (lo && hi) {
        rc = store_read_begin(s);
        if (rc == 0) {
            rc = store_scan_range(s, cf, lo, ll, hi, hl, fn, ctx);
            store_read_end(s);
        }
    }
    free(lo);
    free(hi);
    return rc;
}

int store_scan_jobs(struct store *s, store_scan_fn fn, void *ctx)
{
    struct value_ctx c = {fn, ctx};
    int rc = store_read_begin(s);

    if (rc)
        return rc;
    rc = store_scan_range(s, CF_JOBS, NULL, 0, NULL, 0, value_only, &c);
    store_read_end(s);
    return rc;
}

int store_get_job(struct store *s, const char *job, store_scan_fn fn, void *ctx)
{
    char *rerr = NULL, *val = NULL;
    size_t vl = 0;
    int rc = store_read_begin(s);

    if (rc)
        return rc;
    val = rocksdb_get_cf(s->db, s->ro, s->cf[CF_JOBS], job, strlen(job), &vl, &rerr);
    store_read_end(s);
    rc = rerr ? -EIO : !val ? -ENOENT : fn(ctx, val, vl);
    free(rerr);
    free(val);
    return rc < 0 ? rc : 0;
}

int store_scan_ranks(struct store *s, const char *job, store_scan_fn fn, void *ctx)
{
    struct value_ctx c = {fn, ctx};

    return scan_job(s, CF_RANKS, job, 0, 0, value_only, &c);
}

int store_scan_reports(struct store *s, const char *job, uint64_t from_ns, uint64_t to_ns,
                       store_scan_fn fn, void *ctx)
{
    struct value_ctx c = {fn, ctx};

    return scan_job(s, CF_REPORTS, job, from_ns, to_ns, value_only, &c);
}

struct since_ctx {
    uint64_t from_ns;
    store_scan_fn fn;
    void *ctx;
};

/* store_kv_scan_fn of store_scan_reports_since: the key's created time
 * (after the job's NUL) decides before the value is read. */
static int since_filter(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    struct since_ctx *c = ctx;
    const uint8_t *nul = memchr(key, 0, klen);

    if (!nul || (size_t)(nul - key) + 9 > klen || store_get_be64(nul + 1) < c->from_ns)
        return 0;
    return c->fn(c->ctx, val, vlen);
}

int store_scan_reports_since(struct store *s, uint64_t from_ns, store_scan_fn fn, void *ctx)
{
    struct since_ctx c = {from_ns, fn, ctx};
    int rc = store_read_begin(s);

    if (rc)
        return rc;
    rc = store_scan_range(s, CF_REPORTS, NULL, 0, NULL, 0, since_filter, &c);
    store_read_end(s);
    return rc;
}

/* One rank of a job: seek to (step, rank) for each step instead of walking
 * every rank of every step. */
static int scan_steps_rank(struct store *s, const char *job, uint32_t rank, uint64_t from,
                           const uint8_t *hi, size_t hl, struct step_ctx *c)
{
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it;
    size_t jl = strlen(job), kl;
    uint8_t *key = store_job_key(job, from, 8, rank, 4, false, &kl);
    uint64_t target = from;
    char *rerr = NULL;
    int rc = key ? 0 : -ENOMEM;

    rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi, hl);
    it = rocksdb_create_iterator_cf(s->db, ro, s->cf[CF_STEPS]);
    while (rc == 0) {
        size_t l, vl;
        const uint8_t *k;
        uint64_t step;

        store_put_be64(key + jl + 1, target);
        rocksdb_iter_seek(it, (char *)key, kl);
        if (!rocksdb_iter_valid(it))
            break;
        k = (const uint8_t *)rocksdb_iter_key(it, &l);
        if (l != kl) {
            rc = -EIO; /* not a key this store writes */
            break;
        }
        step = store_get_be64(k + jl + 1);
        if (step == target && store_get_be32(k + jl + 9) == rank) {
            const char *v = rocksdb_iter_value(it, &vl);
            rc = step_value(c, k, l, v, vl);
        }
        if (step > target)
            target = step;
        else if (step == UINT64_MAX)
            break;
        else
            target = step + 1;
    }
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    free(key);
    if (rerr) {
        free(rerr);
        return -EIO;
    }
    return rc < 0 ? rc : 0;
}

int store_scan_steps(struct store *s, const char *job, int64_t rank, uint64_t from_step,
                     uint64_t to_step, store_scan_fn fn, void *ctx)
{
    struct step_ctx c = {.fn = fn, .ctx = ctx};
    bool open_end = to_step == 0 || to_step == UINT64_MAX;
    size_t hl;
    uint8_t *hi = NULL;
    int rc;

    if (rank < 0) {
        rc = scan_job(s, CF_STEPS, job, from_step, to_step, step_value, &c);
        goto out;
    }
    rc = 0;
    if (rank > UINT32_MAX)
        goto out;
    hi = store_job_key(job, to_step + 1, open_end ? 0 : 8, 0, 0, open_end, &hl);
    rc = hi ? store_read_begin(s) : -ENOMEM;
    if (rc == 0) {
        rc = scan_steps_rank(s, job, (uint32_t)rank, from_step, hi, hl, &c);
        store_read_end(s);
    }
out:
    store_stepform_free(&c.form);
    free(hi);
    return rc;
}

int store_get_report(struct store *s, const char *id, store_scan_fn fn, void *ctx)
{
    char *rerr = NULL, *key = NULL, *val = NULL;
    size_t kl = 0, vl = 0;
    int rc = store_read_begin(s);

    if (rc)
        return rc;
    key = rocksdb_get_cf(s->db, s->ro, s->cf[CF_REPORT_IDS], id, strlen(id), &kl, &rerr);
    if (key && !rerr)
        val = rocksdb_get_cf(s->db, s->ro, s->cf[CF_REPORTS], key, kl, &vl, &rerr);
    store_read_end(s);
    if (rerr)
        rc = -EIO;
    else if (!val)
        rc = -ENOENT;
    else
        rc = fn(ctx, val, vl);
    free(rerr);
    free(key);
    free(val);
    return rc < 0 ? rc : 0;
}

char *store_get_name(struct store *s, const char *job, uint64_t id)
{
    char *rerr = NULL, *v = NULL, *out = NULL;
    size_t kl, vl = 0;
    uint8_t *key = store_job_key(job, id, 8, 0, 0, false, &kl);

    if (key && store_read_begin(s) == 0) {
        v = rocksdb_get_cf(s->db, s->ro, s->cf[CF_NAMES], (char *)key, kl, &vl, &rerr);
        store_read_end(s);
    }
    if (v && !rerr)
        out = strndup(v, vl);
    free(rerr);
    free(v);
    free(key);
    return out;
}

int store_scan_time(struct store *s, uint64_t from_ns, uint64_t to_ns,
                    int (*fn)(void *ctx, const char *job, uint64_t min_step, uint64_t max_step),
                    void *ctx)
{
    struct time_agg a = {0};
    int rc = store_read_begin(s);

    if (rc)
        return rc;
    rc = store_time_aggregate(s, CF_TIME, from_ns / NSEC_PER_SEC,
                              to_ns ? to_ns / NSEC_PER_SEC + 1 : 0, &a);
    store_read_end(s);
    for (size_t i = 0; rc == 0 && i < a.n; i++) {
        char *job = strndup((const char *)a.items[i]->key, a.items[i]->klen);

        rc = job ? fn(ctx, job, a.items[i]->v.range.min, a.items[i]->v.range.max) : -ENOMEM;
        free(job);
    }
    store_time_agg_free(&a);
    return rc < 0 ? rc : 0;
}
