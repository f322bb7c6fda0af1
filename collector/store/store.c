/* The collector's store: open, close and reopen (recovery after a failed
 * write), RocksDB options and column families, the key helpers, the
 * in-memory caches (kvset) with the job cache, how writers and readers enter
 * (store_writer_ready, store_commit, store_read_begin), and stats. The key
 * layout is in store.h; what the files of collector/store/ share, and the
 * locking, in store_impl.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* tdestroy */
#endif
#include "collector/store/store_impl.h"

#include <errno.h>
#include <pthread.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "common/array.h"
#include "common/clock.h"

static const char *const cf_names[CF_COUNT] = {
    "default", "steps", "ranks", "jobs",       "time",     "reports",
    "alerts",  "names", "dedup", "report_ids", "received", "traces",
};

#define STORE_REOPEN_INTERVAL_NS NSEC_PER_SEC
/* InfoLogLevel::HEADER_LEVEL: Debian's librocksdb 7.8 keeps assert()s, and a
 * second append to the info LOG after ENOSPC aborts the process; at this level
 * nothing is appended while running. */
#define STORE_INFO_LOG_LEVEL 5

/* ---- small helpers ------------------------------------------------------- */

void store_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Take a RocksDB errptr: copy it into err, free it, return -EIO. */
int store_rocks_fail(char *rerr, char *err, size_t errlen, const char *what)
{
    store_set_err(err, errlen, "%s: %s", what, rerr ? rerr : "unknown RocksDB error");
    free(rerr);
    return -EIO;
}

/* A malloc'd key: job \0 | a (8 bytes, unless alen 0) | b (4 bytes, unless
 * blen 0). tail_end replaces the \0 by \1: the exclusive end of job's keys. */
uint8_t *store_job_key(const char *job, uint64_t a, int alen, uint32_t b, int blen, bool tail_end,
                       size_t *len)
{
    size_t jl = strlen(job);
    uint8_t *k = malloc(jl + 13);

    if (!k)
        return NULL;
    memcpy(k, job, jl);
    k[jl] = tail_end ? 1 : 0;
    *len = jl + 1;
    if (alen) {
        store_put_be64(k + *len, a);
        *len += 8;
    }
    if (blen) {
        store_put_be32(k + *len, b);
        *len += 4;
    }
    return k;
}

/* Grow s->buf to n bytes. */
int store_buf_reserve(struct store *s, size_t n)
{
    uint8_t *p;

    if (n <= s->buf_cap)
        return 0;
    p = realloc(s->buf, n);
    if (!p)
        return -ENOMEM;
    s->buf = p;
    s->buf_cap = n;
    return 0;
}

/* ---- kvset: tsearch tree of kv_node ----------------------------------------- */

int store_kv_cmp(const void *a, const void *b)
{
    const struct kv_node *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n);

    if (c)
        return c;
    return (x->klen > y->klen) - (x->klen < y->klen);
}

struct kv_node *store_kv_find(struct kvset *set, const void *key, size_t klen)
{
    struct kv_node *q = malloc(sizeof(*q) + klen);
    void *found;

    if (!q)
        return NULL;
    q->klen = klen;
    memcpy(q->key, key, klen);
    found = tfind(q, &set->root, store_kv_cmp);
    free(q);
    return found ? *(struct kv_node **)found : NULL;
}

/* Find or insert; *created says which. NULL on ENOMEM. */
struct kv_node *store_kv_get(struct kvset *set, const void *key, size_t klen, bool *created)
{
    struct kv_node *n = malloc(sizeof(*n) + klen), *got;
    void *slot;

    if (!n)
        return NULL;
    memset(&n->v, 0, sizeof(n->v));
    n->klen = klen;
    memcpy(n->key, key, klen);
    slot = tsearch(n, &set->root, store_kv_cmp);
    if (!slot) {
        free(n);
        return NULL;
    }
    got = *(struct kv_node **)slot;
    *created = got == n;
    if (got != n)
        free(n);
    else
        set->count++;
    return got;
}

void store_kv_remove(struct kvset *set, struct kv_node *n)
{
    tdelete(n, &set->root, store_kv_cmp);
    set->count--;
    free(n);
}

void store_job_entry_free(struct job_entry *j)
{
    if (!j)
        return;
    free(j->job);
    free(j->ranks);
    free(j);
}

void store_job_node_free(void *p)
{
    store_job_entry_free(((struct kv_node *)p)->v.job);
    free(p);
}

void store_kv_clear(struct kvset *set, void (*free_fn)(void *))
{
    tdestroy(set->root, free_fn);
    set->root = NULL;
    set->count = 0;
}

/* ---- job entries ------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

int store_ranks_add(struct job_entry *j, const uint32_t *add, size_t n, bool sort)
{
    if (!n)
        return 0;
    if (array_reserve((void **)&j->ranks, &j->cap_ranks, j->n_ranks + n, sizeof(uint32_t)))
        return -ENOMEM;
    memcpy(j->ranks + j->n_ranks, add, n * sizeof(uint32_t));
    j->n_ranks += n;
    if (sort)
        qsort(j->ranks, j->n_ranks, sizeof(uint32_t), cmp_u32);
    return 0;
}

/* ---- open, close, reopen -------------------------------------------------- */

/* Options of one family; cache (may be NULL) is shared by all of them.
 * bulky: the steps family, with a big memtable and 16 KiB blocks. ZSTD at
 * the bottom runs at level 1 without a trained dictionary: with level 3 and a
 * 16 KiB dictionary zstd took 40% of the collector's CPU at 50k rank-steps/s
 * (perf), for ~20% fewer bytes on disk (bench_store: 1266 -> 1035 B per
 * rank-step). */
static rocksdb_options_t *cf_options_create(rocksdb_cache_t *cache, bool bulky)
{
    rocksdb_options_t *co = rocksdb_options_create();
    rocksdb_block_based_table_options_t *bbo = rocksdb_block_based_options_create();

    rocksdb_block_based_options_set_filter_policy(bbo, rocksdb_filterpolicy_create_bloom_full(10));
    if (cache)
        rocksdb_block_based_options_set_block_cache(bbo, cache);
    if (bulky) {
        rocksdb_block_based_options_set_block_size(bbo, 16 << 10);
        /* window_bits, level, strategy, max_dict_bytes, enabled */
        rocksdb_options_set_bottommost_compression_options(co, -14, 1, 0, 0, 1);
    }
    rocksdb_options_set_block_based_table_factory(co, bbo);
    rocksdb_block_based_options_destroy(bbo);
    rocksdb_options_set_compression(co, rocksdb_lz4_compression);
    rocksdb_options_set_bottommost_compression(co, rocksdb_zstd_compression);
    rocksdb_options_set_write_buffer_size(co, bulky ? 32u << 20 : 4u << 20);
    rocksdb_options_set_max_write_buffer_number(co, 3);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(co, 1);
    return co;
}

/* DB-wide options sized for a 2-core collector; steps get the big memtable. */
static void options_create(struct store *s)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_cache_t *cache = NULL;

    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_set_create_missing_column_families(o, 1);
    rocksdb_options_increase_parallelism(o, 2);
    rocksdb_options_set_max_background_jobs(o, 2);
    rocksdb_options_set_info_log_level(o, STORE_INFO_LOG_LEVEL);
    rocksdb_options_set_keep_log_file_num(o, 2);
    rocksdb_options_set_max_total_wal_size(o, 256u << 20);
    rocksdb_options_set_bytes_per_sync(o, 1u << 20);
    s->db_opts = o;
    if (s->opts.block_cache_bytes)
        cache = rocksdb_cache_create_lru(s->opts.block_cache_bytes);
    for (int i = 0; i < CF_COUNT; i++)
        s->cf_opts[i] = cf_options_create(cache, i == CF_STEPS);
    if (cache)
        rocksdb_cache_destroy(cache); /* the table factories keep it */
    s->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(s->wo, s->opts.sync);
    s->ro = rocksdb_readoptions_create();
}

static void db_close(struct store *s)
{
    if (!s->db)
        return;
    for (int i = 0; i < CF_COUNT; i++) {
        if (s->cf[i])
            rocksdb_column_family_handle_destroy(s->cf[i]);
        s->cf[i] = NULL;
    }
    rocksdb_close(s->db);
    s->db = NULL;
}

/* Load the JobInfo cache and each job's ranks with a Resource. */
int store_jobs_load(struct store *s, char *err, size_t errlen)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ro, s->cf[CF_JOBS]);
    char *rerr = NULL;
    int rc = 0;

    for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
        Argus__V1__JobInfo *ji = argus__v1__job_info__unpack(NULL, vl, (const uint8_t *)v);
        struct job_entry *j = calloc(1, sizeof(*j));
        struct kv_node *n = NULL;
        bool created;

        if (j && ji && (j->job = strndup(k, kl)))
            n = store_kv_get(&s->jobs, k, kl, &created);
        if (n && created) {
            j->first_seen = ji->first_seen_unix_ns;
            j->last_seen = ji->last_seen_unix_ns;
            j->world_size = ji->world_size;
            j->ranks_seen = ji->ranks_seen;
            j->last_step = ji->last_step;
            j->rank_steps = ji->rank_steps;
            n->v.job = j;
        } else {
            store_job_entry_free(j);
            rc = ji ? -ENOMEM : -EIO;
            store_set_err(err, errlen, "loading jobs: %s", ji ? "out of memory" : "bad JobInfo");
        }
        if (ji)
            argus__v1__job_info__free_unpacked(ji, NULL);
    }
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    if (rerr)
        return store_rocks_fail(rerr, err, errlen, "loading jobs");
    if (rc)
        return rc;
    it = rocksdb_create_iterator_cf(s->db, s->ro, s->cf[CF_RANKS]);
    for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(it, &kl);
        size_t jl = strnlen(k, kl);
        struct kv_node *n = jl + 5 == kl ? store_kv_find(&s->jobs, k, jl) : NULL;
        uint32_t rank = jl + 5 == kl ? store_get_be32((const uint8_t *)k + jl + 1) : 0;

        if (n)
            rc = store_ranks_add(n->v.job, &rank, 1, false);
    }
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    if (rerr)
        return store_rocks_fail(rerr, err, errlen, "loading ranks");
    if (rc)
        store_set_err(err, errlen, "loading ranks: out of memory");
    return rc;
}

static void caches_clear(struct store *s)
{
    store_kv_clear(&s->jobs, store_job_node_free);
    store_kv_clear(&s->times, free);
    store_kv_clear(&s->received, free);
    store_kv_clear(&s->hwm, free);
}

/* True when the store in dir exists without the received family (written
 * by a collector older than it): it is built from the time index at open. */
static bool lacks_received(struct store *s)
{
    char *rerr = NULL, **names;
    size_t n = 0;
    bool found = false;

    names = rocksdb_list_column_families(s->db_opts, s->dir, &n, &rerr);
    free(rerr); /* no store yet */
    for (size_t i = 0; names && i < n; i++)
        found |= strcmp(names[i], cf_names[CF_RECEIVED]) == 0;
    if (names)
        rocksdb_list_column_families_destroy(names, n);
    return names && !found;
}

static int db_open(struct store *s, char *err, size_t errlen)
{
    const rocksdb_options_t *copts[CF_COUNT];
    char *rerr = NULL;
    bool migrate = lacks_received(s);
    int rc;

    for (int i = 0; i < CF_COUNT; i++)
        copts[i] = s->cf_opts[i];
    s->db =
        rocksdb_open_column_families(s->db_opts, s->dir, CF_COUNT, cf_names, copts, s->cf, &rerr);
    if (rerr) {
        bool locked = strstr(rerr, "lock") != NULL;

        s->db = NULL;
        memset(s->cf, 0, sizeof(s->cf));
        rc = store_rocks_fail(rerr, err, errlen, s->dir);
        return locked ? -EBUSY : rc;
    }
    rc = store_jobs_load(s, err, errlen);
    if (rc == 0 && migrate)
        rc = store_received_build(s, err, errlen);
    if (rc) {
        caches_clear(s);
        db_close(s);
    }
    return rc;
}

/* Close and open the DB again: the C API of RocksDB 7.8 has no
 * rocksdb_resume(), and a DB that hit ENOSPC stays in background-error state
 * (its own recovery polls every 5 s and waits for a reserve of free space).
 * Caches are rebuilt from what is on disk. Called under s->lock. */
static int store_reopen(struct store *s, char *err, size_t errlen)
{
    int rc;

    s->last_reopen_ns = clock_mono_ns();
    pthread_rwlock_wrlock(&s->db_lock);
    db_close(s);
    caches_clear(s);
    rc = db_open(s, err, errlen);
    pthread_rwlock_unlock(&s->db_lock);
    if (rc == 0)
        s->broken = false;
    return rc;
}

/* Called by writers under s->lock: reopen when the last write failed (at most
 * once per STORE_REOPEN_INTERVAL_NS) or when the DB is closed. */
int store_writer_ready(struct store *s, char *err, size_t errlen)
{
    bool due = clock_mono_ns() - s->last_reopen_ns >= STORE_REOPEN_INTERVAL_NS;

    if ((s->broken || !s->db) && due)
        return store_reopen(s, err, errlen);
    if (!s->db) {
        store_set_err(err, errlen, "store %s is closed after an error; reopening", s->dir);
        return -EIO;
    }
    return 0;
}

int store_open(const struct store_options *opts, struct store **out, char *err, size_t errlen)
{
    struct store *s;
    int rc;

    *out = NULL;
    if (!opts || !opts->dir || !opts->dir[0]) {
        store_set_err(err, errlen, "store: no directory given");
        return -EINVAL;
    }
    s = calloc(1, sizeof(*s));
    if (!s || !(s->dir = strdup(opts->dir))) {
        free(s);
        store_set_err(err, errlen, "store: out of memory");
        return -ENOMEM;
    }
    s->opts = *opts;
    s->opts.dir = s->dir;
    pthread_mutex_init(&s->lock, NULL);
    pthread_rwlock_init(&s->db_lock, NULL);
    options_create(s);
    rc = db_open(s, err, errlen);
    if (rc) {
        store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    db_close(s);
    caches_clear(s);
    store_stage_free(&s->stage);
    store_seen_free(s);
    for (int i = 0; i < CF_COUNT; i++)
        if (s->cf_opts[i])
            rocksdb_options_destroy(s->cf_opts[i]);
    if (s->db_opts)
        rocksdb_options_destroy(s->db_opts);
    if (s->wo)
        rocksdb_writeoptions_destroy(s->wo);
    if (s->ro)
        rocksdb_readoptions_destroy(s->ro);
    pthread_rwlock_destroy(&s->db_lock);
    pthread_mutex_destroy(&s->lock);
    free(s->buf);
    free(s->dir);
    free(s);
}

/* ---- writers and readers ------------------------------------------------------ */

/* Write wb. A failure marks the store broken (the next writer reopens it)
 * and counts as a write error when it was an ingest. */
int store_commit(struct store *s, rocksdb_writebatch_t *wb, bool ingest, char *err, size_t errlen)
{
    char *rerr = NULL;
    uint64_t t0 = clock_mono_ns(), dt;

    rocksdb_write(s->db, s->wo, wb, &rerr);
    dt = clock_mono_ns() - t0;
    if (rerr) {
        s->stats.write_errors += ingest;
        s->broken = true;
        return store_rocks_fail(rerr, err, errlen, "write");
    }
    s->broken = false; /* RocksDB recovered by itself, or the error was transient */
    s->stats.write_ns_total += dt;
    if (dt > s->stats.write_ns_max)
        s->stats.write_ns_max = dt;
    return 0;
}

/* Take the read lock; -EIO (lock released) when the DB is closed. */
int store_read_begin(struct store *s)
{
    pthread_rwlock_rdlock(&s->db_lock);
    if (s->db)
        return 0;
    pthread_rwlock_unlock(&s->db_lock);
    return -EIO;
}

void store_read_end(struct store *s)
{
    pthread_rwlock_unlock(&s->db_lock);
}

void store_get_stats(struct store *s, struct store_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    if (!s->db) {
        out->failing = true;
        if (!out->last_error[0])
            snprintf(out->last_error, sizeof(out->last_error), "store is closed");
    }
    pthread_mutex_unlock(&s->lock);
    out->live_sst_bytes = 0;
    if (store_read_begin(s))
        return;
    for (int i = 0; i < CF_COUNT; i++) {
        char *v = rocksdb_property_value_cf(s->db, s->cf[i], "rocksdb.live-sst-files-size");

        if (v)
            out->live_sst_bytes += strtoull(v, NULL, 10);
        free(v);
    }
    store_read_end(s);
}
