/* Private to collector/store/: what store.c, store_write.c, store_read.c and
 * store_retention.c share. Nothing outside this folder includes it; callers
 * use store.h.
 *
 * Locking: s->lock serialises every writer (ingest, put_report, retention)
 * and guards the in-memory caches and stats. Readers take s->db_lock shared;
 * only a reopen (recovery after a write error) takes it exclusively, under
 * s->lock. Caches mirror what is committed: they change only after a
 * successful rocksdb_write, and a reopen reloads them.
 */
#ifndef ARGUS_COLLECTOR_STORE_IMPL_H
#define ARGUS_COLLECTOR_STORE_IMPL_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store.h"

/* Column families, in the order of s->cf (names in store.c). */
enum {
    CF_DEFAULT,
    CF_STEPS,
    CF_RANKS,
    CF_JOBS,
    CF_TIME,
    CF_REPORTS,
    CF_ALERTS,
    CF_NAMES,
    CF_DEDUP,
    CF_REPORT_IDS,
    CF_RECEIVED,
    CF_TRACES, /* report id \0 rank (be32) -> packed TraceWindow (store_traces.c) */
    CF_COUNT
};

/* The received index buckets receive time by this many seconds. */
#define STORE_RECEIVED_BUCKET_SEC 60

/* A byte-string keyed node of a tsearch tree (caches and per-batch staging). */
struct kv_node {
    union {
        uint64_t seq;
        struct {
            uint64_t min, max;
        } range;
        struct job_entry *job;
        struct seen_job *seen;
        size_t index;
    } v;
    size_t klen;
    uint8_t key[];
};

struct kvset {
    void *root;
    size_t count;
};

/* What the store knows about a job: JobInfo plus the sorted ranks with a
 * Resource, so ingest needs no reads. */
struct job_entry {
    char *job;
    uint64_t first_seen, last_seen, last_step, rank_steps;
    uint32_t world_size, ranks_seen;
    uint32_t *ranks;
    size_t n_ranks, cap_ranks;
};

/* The staged entries of one index family (time or received): second | job
 * -> step range, in index (lookup) and items (insertion order). */
struct stage_index {
    struct kvset index;
    struct kv_node **items;
    size_t n, cap;
};

/* Per-batch staging: changes computed before the write, applied after. */
struct stage {
    struct kvset jobs_index;
    struct stage_index time, received;
    struct job_entry *jobs; /* copies; ranks holds only the new ranks */
    struct job_entry **cached;
    size_t n_jobs, cap_jobs, cap_cached;
    uint64_t recv_ns;       /* the batch's receive time (collector clock) */
    uint64_t fresh_records; /* step records of the batch not stored before */
};

/* What store_seen.c keeps: which (step, rank) records a job has stored. */
struct seen {
    struct kvset jobs;      /* job -> struct seen_job (v.seen) */
    struct seen_job *last;  /* the job of the previous record (most batches hold one) */
    struct seen_mark *undo; /* marks of the batch being staged */
    size_t n_undo, cap_undo;
    struct kvset batch_keys; /* step keys of this batch checked against the DB */
};

struct store {
    struct store_options opts;
    char *dir;
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf[CF_COUNT];
    rocksdb_options_t *db_opts, *cf_opts[CF_COUNT];
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    pthread_mutex_t lock;
    pthread_rwlock_t db_lock;
    struct kvset jobs, times, received, hwm;
    struct stage stage;
    struct seen seen;
    uint8_t *buf;
    size_t buf_cap;
    bool broken, jobs_stale;
    uint64_t last_reopen_ns;
    struct store_stats stats;
};

/* ---- key layout: big-endian integers ------------------------------------- */

static inline void store_put_be64(uint8_t *p, uint64_t v)
{
    v = htobe64(v);
    memcpy(p, &v, 8);
}

static inline void store_put_be32(uint8_t *p, uint32_t v)
{
    v = htobe32(v);
    memcpy(p, &v, 4);
}

static inline uint64_t store_get_be64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return be64toh(v);
}

static inline uint32_t store_get_be32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return be32toh(v);
}

/* ---- store.c: helpers, keys, kvset, job cache, locking -------------------- */

/* snprintf into err (errlen bytes); err NULL or errlen 0: nothing. */
void store_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Take a RocksDB errptr: copy it into err with what, free it, return -EIO. */
int store_rocks_fail(char *rerr, char *err, size_t errlen, const char *what);

/* A malloc'd key (caller frees; NULL on ENOMEM): job \0 | a (8 bytes, unless
 * alen 0) | b (4 bytes, unless blen 0); *len its length. tail_end replaces
 * the \0 by \1: the exclusive end of job's keys. */
uint8_t *store_job_key(const char *job, uint64_t a, int alen, uint32_t b, int blen, bool tail_end,
                       size_t *len);

/* Grow s->buf, the writers' packing buffer, to n bytes. 0 or -ENOMEM. */
int store_buf_reserve(struct store *s, size_t n);

/* kvset: keys compared as byte strings, shorter first on a tie. */
int store_kv_cmp(const void *a, const void *b);

/* The node with this key, or NULL (absent, or ENOMEM). */
struct kv_node *store_kv_find(struct kvset *set, const void *key, size_t klen);

/* Find or insert (v zeroed); *created says which. NULL on ENOMEM. */
struct kv_node *store_kv_get(struct kvset *set, const void *key, size_t klen, bool *created);

/* Remove n from set and free it (not what its v points to). */
void store_kv_remove(struct kvset *set, struct kv_node *n);

/* Free every node with free_fn and empty the set. */
void store_kv_clear(struct kvset *set, void (*free_fn)(void *));

/* Free a job entry with its strings. NULL is fine. */
void store_job_entry_free(struct job_entry *j);

/* free_fn of the job cache: the node and its job entry. */
void store_job_node_free(void *p);

/* Append n ranks to j->ranks (sorted again when sort). 0 or -ENOMEM. */
int store_ranks_add(struct job_entry *j, const uint32_t *add, size_t n, bool sort);

/* Fill the job cache (s->jobs, empty) from the jobs and ranks families.
 * 0, or -EIO/-ENOMEM with err set. */
int store_jobs_load(struct store *s, char *err, size_t errlen);

/* Called by writers under s->lock: reopen when the last write failed (at most
 * once a second) or when the DB is closed. 0, or -EIO with err set. */
int store_writer_ready(struct store *s, char *err, size_t errlen);

/* Write wb under s->lock. A failure marks the store broken (the next writer
 * reopens it) and counts as a write error when ingest. 0 or -EIO. */
int store_commit(struct store *s, rocksdb_writebatch_t *wb, bool ingest, char *err, size_t errlen);

/* Take the read lock; -EIO (lock released) when the DB is closed. */
int store_read_begin(struct store *s);

/* Release the read lock taken by store_read_begin. */
void store_read_end(struct store *s);

/* ---- store_write.c ---------------------------------------------------------- */

/* Free what the staging area holds (store_close). */
void store_stage_free(struct stage *st);

/* ---- store_retention.c -------------------------------------------------------- */

/* Build the received index from the time index (a store written before the
 * received family existed; the agents' clock is all it had). 0, or -EIO /
 * -ENOMEM with err set. */
int store_received_build(struct store *s, char *err, size_t errlen);

/* ---- store_seen.c: distinct step records ------------------------------------- */

/* Mark the record (job, step, rank) whose steps key is key/klen as staged in
 * the batch being written. Returns 1 when the store does not hold it yet (and
 * no earlier record of this batch had it), 0 when it does, -ENOMEM or -EIO
 * (err set). Recent steps of each rank are answered from memory; older ones,
 * and steps that may predate this process (at or below the job's last step
 * when the store was opened or the job first seen), by a DB read. Called
 * under s->lock. */
int store_seen_mark(struct store *s, const char *job, uint64_t step, uint32_t rank,
                    const uint8_t *key, size_t klen, char *err, size_t errlen);

/* The batch was committed (keep the marks) or not (undo them). */
void store_seen_end_batch(struct store *s, bool committed);

/* Forget a job whose steps retention removed. */
void store_seen_forget(struct store *s, const char *job);

/* Free everything (store_close). */
void store_seen_free(struct store *s);

/* ---- store_read.c ----------------------------------------------------------- */

typedef int (*store_kv_scan_fn)(void *ctx, const uint8_t *key, size_t klen, const void *val,
                                size_t vlen);

/* Every key of cf in [lo, hi) (lolen 0: from the start; hi NULL: to the end)
 * through fn, which returns 0 to go on, 1 to stop, negative to abort. Read
 * lock (or s->lock) held. 0, fn's negative value, or -EIO. */
int store_scan_range(struct store *s, int cf, const void *lo, size_t lolen, const void *hi,
                     size_t hilen, store_kv_scan_fn fn, void *ctx);

/* Per-job aggregation of time index entries: items (n of them, sorted by job)
 * point into jobs, whose keys are job ids and values step ranges; keys counts
 * the index entries read. Zero-initialise; free with store_time_agg_free. */
struct time_agg {
    struct kvset jobs;
    struct kv_node **items;
    size_t n, cap, keys;
};

/* Collect the index cf (CF_TIME or CF_RECEIVED) of seconds [lo_sec, hi_sec)
 * (hi_sec 0: no bound) into a. Lock held as for store_scan_range. 0,
 * -ENOMEM or -EIO. */
int store_time_aggregate(struct store *s, int cf, uint64_t lo_sec, uint64_t hi_sec,
                         struct time_agg *a);

void store_time_agg_free(struct time_agg *a);

/* store_kv_scan_fn that adds one index entry (ctx: struct time_agg). */
int store_time_collect(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen);

#endif
