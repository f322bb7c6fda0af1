/* The store's handle: see store_db.h. Options and column families, opening
 * and reopening the DB with its caches, writers' and readers' entry, range
 * scans and the index aggregation.
 */
#include "collector/store/store_db.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "common/array.h"
#include "common/clock.h"

static const char *const cf_names[CF_COUNT] = {
    "default", "steps", "ranks",      "jobs",     "time",   "reports", "alerts",
    "names",   "dedup", "report_ids", "received", "traces", "actions", "owners",
};

#define STORE_REOPEN_INTERVAL_NS NSEC_PER_SEC
#define STORE_MEMTABLE_DEFAULT (32u << 20)
#define STORE_LEVELS 7 /* RocksDB's default number of levels */
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

/* ---- job entries ------------------------------------------------------------ */

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

/* ---- scans and the index aggregation ----------------------------------------- */

/* Every key of cf in [lo, hi) (hi NULL: to the end) through fn. Read lock held. */
int store_scan_range(struct store *s, int cf, const void *lo, size_t lolen, const void *hi,
                     size_t hilen, store_kv_scan_fn fn, void *ctx)
{
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it;
    char *rerr = NULL;
    int rc = 0;

    if (hi)
        rocksdb_readoptions_set_iterate_upper_bound(ro, hi, hilen);
    it = rocksdb_create_iterator_cf(s->db, ro, s->cf[cf]);
    if (lolen)
        rocksdb_iter_seek(it, lo, lolen);
    else
        rocksdb_iter_seek_to_first(it);
    for (; rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);

        rc = fn(ctx, (const uint8_t *)k, kl, v, vl);
    }
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (rerr) {
        free(rerr);
        return -EIO;
    }
    return rc < 0 ? rc : 0;
}

/* store_kv_scan_fn that adds one index entry (ctx: struct time_agg). */
static int store_time_collect(void *ctx, const uint8_t *key, size_t klen, const void *val,
                              size_t vlen)
{
    struct time_agg *a = ctx;
    uint64_t lo, hi;
    struct kv_node *n;
    bool created;

    if (klen < 8 || vlen != 16)
        return 0;
    a->keys++;
    lo = store_get_be64(val);
    hi = store_get_be64((const uint8_t *)val + 8);
    n = store_kv_get(&a->jobs, key + 8, klen - 8, &created);
    if (!n || (created && array_reserve((void **)&a->items, &a->cap, a->n + 1, sizeof(*a->items))))
        return -ENOMEM;
    if (created) {
        a->items[a->n++] = n;
        n->v.range.min = lo;
        n->v.range.max = hi;
    }
    if (lo < n->v.range.min)
        n->v.range.min = lo;
    if (hi > n->v.range.max)
        n->v.range.max = hi;
    return 0;
}

static int cmp_node(const void *a, const void *b)
{
    return store_kv_cmp(*(const struct kv_node *const *)a, *(const struct kv_node *const *)b);
}

/* Collect the index cf (time or received) of seconds [lo_sec, hi_sec)
 * (hi_sec 0: no bound). */
int store_time_aggregate(struct store *s, int cf, uint64_t lo_sec, uint64_t hi_sec,
                         struct time_agg *a)
{
    uint8_t lo[8], hi[8];
    int rc;

    store_put_be64(lo, lo_sec);
    store_put_be64(hi, hi_sec);
    rc = store_scan_range(s, cf, lo, 8, hi_sec ? hi : NULL, 8, store_time_collect, a);
    if (rc == 0 && a->n)
        qsort(a->items, a->n, sizeof(*a->items), cmp_node);
    return rc;
}

void store_time_agg_free(struct time_agg *a)
{
    store_kv_clear(&a->jobs, free);
    free(a->items);
}

/* Put one received-index entry in wb: key minute + the job of node j, value
 * the step range [min, max]. 0 or -ENOMEM. */
int store_received_put(struct store *s, rocksdb_writebatch_t *wb, uint64_t minute,
                       const struct kv_node *j, uint64_t min, uint64_t max)
{
    uint8_t *key = malloc(8 + j->klen), v[16];

    if (!key)
        return -ENOMEM;
    store_put_be64(key, minute);
    memcpy(key + 8, j->key, j->klen);
    store_put_be64(v, min);
    store_put_be64(v + 8, max);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_RECEIVED], (char *)key, 8 + j->klen, (char *)v,
                              sizeof(v));
    free(key);
    return 0;
}

/* ---- the received index of an older store ---------------------------------------- */

struct received_build {
    struct store *s;
    rocksdb_writebatch_t *wb;
    uint64_t minute; /* of the entries in jobs */
    struct time_agg jobs;
    int rc;
};

/* Write the aggregated minute and start the next one. */
static void received_flush(struct received_build *b)
{
    for (size_t i = 0; i < b->jobs.n; i++) {
        struct kv_node *n = b->jobs.items[i];

        if (store_received_put(b->s, b->wb, b->minute, n, n->v.range.min, n->v.range.max) < 0) {
            b->rc = -ENOMEM;
            break;
        }
    }
    store_time_agg_free(&b->jobs);
    b->jobs = (struct time_agg){0};
}

static int received_add(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    struct received_build *b = ctx;
    uint64_t sec = klen >= 8 ? store_get_be64(key) : 0;
    uint64_t minute = sec - sec % STORE_RECEIVED_BUCKET_SEC;

    if (klen < 8 || vlen != 16)
        return 0;
    if (minute != b->minute)
        received_flush(b);
    b->minute = minute;
    return b->rc ? b->rc : store_time_collect(&b->jobs, key, klen, val, vlen);
}

static int received_build(struct store *s, char *err, size_t errlen)
{
    struct received_build b = {.s = s, .wb = rocksdb_writebatch_create()};
    int rc = store_scan_range(s, CF_TIME, NULL, 0, NULL, 0, received_add, &b);

    if (rc == 0)
        received_flush(&b);
    rc = rc ? rc : b.rc;
    if (rc == 0)
        rc = store_commit(s, b.wb, false, err, errlen);
    else
        store_set_err(err, errlen, "building the received index: %s", strerror(-rc));
    store_time_agg_free(&b.jobs);
    rocksdb_writebatch_destroy(b.wb);
    return rc;
}

/* ---- open, close, reopen -------------------------------------------------- */

/* Options of one family; cache (may be NULL) is shared by all of them.
 * bulky: the steps family, with a big memtable (memtable bytes; the others
 * 4 MiB or less), 64 KiB blocks (consecutive ranks' records of a step
 * compress against each other) and ZSTD level 1 at every level below L0, without a
 * trained dictionary; the other families LZ4 above the bottommost level.
 * tests/bench/bench_ingest.sh (SST + WAL before a full compaction), against
 * LZ4 above ZSTD and 16 KiB blocks: ZSTD at every level took the SSTs from
 * 561 to 492 MB, 64 KiB blocks to 460 MB; a 16 KiB dictionary at the
 * bottommost only to 456 MB, not worth its CPU (with level 3 it took 40% of
 * the collector's CPU at 50k rank-steps/s).
 * What the steps family's compactions cost (issue 30; ceiling runs of
 * 10,240 ranks x 240 steps): ZSTD was a third of the collector's CPU, over
 * half of it compactions that merged each 4 new L0 files with the 64 MiB table at
 * the bottom they overlap (keys go by step, and agents are a step or so
 * apart). So L0 is LZ4 (a flush is cheap; an L0 file lives until the next
 * compaction), compactions wait for 8 L0 files and write 8 MiB tables (the
 * table rewritten at the edge is small). */
static rocksdb_options_t *cf_options_create(rocksdb_cache_t *cache, bool bulky, uint64_t memtable)
{
    rocksdb_options_t *co = rocksdb_options_create();
    rocksdb_block_based_table_options_t *bbo = rocksdb_block_based_options_create();
    int levels[STORE_LEVELS];

    rocksdb_block_based_options_set_filter_policy(bbo, rocksdb_filterpolicy_create_bloom_full(10));
    if (cache)
        rocksdb_block_based_options_set_block_cache(bbo, cache);
    rocksdb_options_set_compression(co, rocksdb_lz4_compression);
    if (bulky) {
        for (int i = 0; i < STORE_LEVELS; i++)
            levels[i] = i == 0 ? rocksdb_lz4_compression : rocksdb_zstd_compression;
        rocksdb_options_set_level0_file_num_compaction_trigger(co, 8);
        rocksdb_options_set_target_file_size_base(co, 8u << 20);
        rocksdb_block_based_options_set_block_size(bbo, 64 << 10);
        rocksdb_options_set_num_levels(co, STORE_LEVELS);
        rocksdb_options_set_compression_per_level(co, levels, STORE_LEVELS);
        /* window_bits, level, strategy, max_dict_bytes (and enabled) */
        rocksdb_options_set_compression_options(co, -14, 1, 0, 0);
        rocksdb_options_set_bottommost_compression_options(co, -14, 1, 0, 0, 1);
    }
    rocksdb_options_set_block_based_table_factory(co, bbo);
    rocksdb_block_based_options_destroy(bbo);
    rocksdb_options_set_bottommost_compression(co, rocksdb_zstd_compression);
    /* RocksDB preallocates each WAL to 1.1 x the largest of these */
    rocksdb_options_set_write_buffer_size(co, bulky || memtable < (4u << 20) ? memtable : 4u << 20);
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
    /* the WAL's records compressed with streaming ZSTD (the only kind
     * RocksDB 7.8 takes): a third of the WAL bytes, off by default: a WAL
     * write cut short by a full disk left a compressed record whose fragments
     * pass their checksums but whose batch does not decode, and RocksDB then
     * refuses to open the store in every recovery mode ("Corruption: bad
     * WriteBatch Put"), or a reopen that dropped synced, acked batches (fill
     * and free cycles of collector_diskfull.sh: about 1 run in 5; RocksDB
     * alone, 16 random-valued batches a cycle: 3 of 15 runs lost synced
     * writes with it, 0 of 15 without); the uncompressed WAL's checksums
     * cover what it replays */
    if (s->opts.wal_zstd)
        rocksdb_options_set_wal_compression(o, rocksdb_zstd_compression);
    s->db_opts = o;
    if (s->opts.block_cache_bytes)
        cache = rocksdb_cache_create_lru(s->opts.block_cache_bytes);
    for (int i = 0; i < CF_COUNT; i++)
        s->cf_opts[i] = cf_options_create(cache, i == CF_STEPS,
                                          s->opts.memtable_bytes ? s->opts.memtable_bytes
                                                                 : STORE_MEMTABLE_DEFAULT);
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
            j->state = ji->state;
            j->restart = ji->restart;
            snprintf(j->reason, sizeof(j->reason), "%s", ji->state_reason ? ji->state_reason : "");
            snprintf(j->blind, sizeof(j->blind), "%s", ji->blind ? ji->blind : "");
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

static int db_open_once(struct store *s, char *err, size_t errlen)
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
        rc = received_build(s, err, errlen);
    if (rc) {
        caches_clear(s);
        db_close(s);
    }
    return rc;
}

/* db_open_once, and once more after releasing the reserve when it failed
 * for space (RocksDB's recovery writes the WAL out as a table). */
static int db_open(struct store *s, char *err, size_t errlen)
{
    char why[256] = "";
    int rc = db_open_once(s, why, sizeof(why));

    if (rc == -EIO && store_is_nospace(why) &&
        store_reserve_release(&s->reserve, "opening the store failed for space"))
        rc = db_open_once(s, why, sizeof(why));
    store_set_err(err, errlen, "%s", why);
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

int store_db_open(struct store *s, char *err, size_t errlen)
{
    if (store_reserve_init(&s->reserve, s->dir, s->opts.reserve_bytes) < 0) {
        store_set_err(err, errlen, "store: out of memory");
        return -ENOMEM;
    }
    options_create(s);
    return db_open(s, err, errlen);
}

void store_db_close(struct store *s)
{
    db_close(s);
    caches_clear(s);
    for (int i = 0; i < CF_COUNT; i++)
        if (s->cf_opts[i])
            rocksdb_options_destroy(s->cf_opts[i]);
    if (s->db_opts)
        rocksdb_options_destroy(s->db_opts);
    if (s->wo)
        rocksdb_writeoptions_destroy(s->wo);
    if (s->ro)
        rocksdb_readoptions_destroy(s->ro);
    store_reserve_fini(&s->reserve);
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
        if (store_is_nospace(rerr))
            store_reserve_release(&s->reserve, "a write failed for space");
        return store_rocks_fail(rerr, err, errlen, "write");
    }
    s->broken = false; /* RocksDB recovered by itself, or the error was transient */
    s->stats.write_ns_total += dt;
    if (dt > s->stats.write_ns_max)
        s->stats.write_ns_max = dt;
    return 0;
}

int store_write_locked(struct store *s, store_fill_fn fill, const void *ctx, char *err,
                       size_t errlen)
{
    rocksdb_writebatch_t *wb;
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0) {
        wb = rocksdb_writebatch_create();
        fill(s, wb, ctx);
        rc = store_commit(s, wb, false, err, errlen);
        rocksdb_writebatch_destroy(wb);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
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
