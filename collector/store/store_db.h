/* The store's handle, below the files that read and write it
 * (store_write.c, store_read.c, store_retention.c, store_seen.c,
 * store_alerts.c, store_traces.c, store_actions.c) and above store_kv.h: struct store, the
 * column families and their RocksDB options, opening the DB with its job
 * cache (and the received index of an older store), reopening it after a
 * failed write, how writers and readers enter (store_writer_ready,
 * store_commit, store_read_begin), range scans and the per-job aggregation
 * of the time and received indexes; the reserve (store_reserve.h) released
 * when a write or the open fails for space. It calls none of the files above it;
 * store.c opens and closes the whole store through it.
 *
 * Locking: s->lock serialises every writer (ingest, put_report, retention)
 * and guards the in-memory caches and stats. Readers take s->db_lock shared;
 * only a reopen (recovery after a write error) takes it exclusively, under
 * s->lock. Caches mirror what is committed: they change only after a
 * successful rocksdb_write, and a reopen reloads them.
 */
#ifndef ARGUS_COLLECTOR_STORE_DB_H
#define ARGUS_COLLECTOR_STORE_DB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "collector/store/store.h"
#include "collector/store/store_kv.h"
#include "collector/store/store_reserve.h"
#include "collector/store/store_seen.h"
#include "collector/store/store_stepform.h"
#include "collector/store/store_write.h"

/* Column families, in the order of s->cf (names in store_db.c). */
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
    CF_TRACES,  /* report id \0 rank (be32) -> packed TraceWindow (store_traces.c) */
    CF_ACTIONS, /* collector/actions/'s records and breaker (store_actions.c) */
    CF_OWNERS,  /* job \0 | rank (be32) -> its owner (store_owners.c, collector/ingest/owners.h) */
    CF_COUNT
};

/* The received index buckets receive time by this many seconds. */
#define STORE_RECEIVED_BUCKET_SEC 60

/* What the store knows about a job: JobInfo plus the sorted ranks with a
 * Resource, so ingest needs no reads. */
struct job_entry {
    char *job;
    uint64_t first_seen, last_seen, last_step, rank_steps;
    uint32_t world_size, ranks_seen;
    int state;        /* Argus__V1__JobState, from diagnosis (store_put_job_state) */
    uint32_t restart; /* the launcher's attempt */
    char reason[200];
    char blind[200]; /* diagnosis sheds work: what (store_put_job_blind), "" when not */
    uint32_t *ranks;
    size_t n_ranks, cap_ranks;
};

/* The handle: the DB and its options, the locks, the caches (jobs: job ->
 * struct job_entry; times, received: second | job -> step range; hwm:
 * agent | epoch -> seq), the writers' staging area and seen marks (kept
 * here so the per-record paths reach them without a pointer), the packing
 * buffers and the stats. */
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
    struct store_stepform form; /* the writers' step records in the compact form */
    bool broken, jobs_stale;
    uint64_t last_reopen_ns;
    struct store_reserve reserve;
    struct store_stats stats;
};

/* ---- open and close ---------------------------------------------------------- */

/* Create the RocksDB options from s->opts and open the DB in s->dir: every
 * column family (created when missing), the job cache loaded, and the
 * received index built from the time index when the store predates it.
 * The reserve is set up first; an open that fails for space releases it
 * and is tried once more.
 * s is calloc'd with opts, dir and both locks set up. Returns 0, -EBUSY
 * (another process holds the DB), or -EIO/-ENOMEM with err set; on failure
 * the DB is closed (store_db_close still frees the options). */
int store_db_open(struct store *s, char *err, size_t errlen);

/* Close the DB, empty the caches of this file (jobs, times, received, hwm)
 * and free the RocksDB options. Not the staging area, the seen marks, the
 * locks or s itself (store_close). */
void store_db_close(struct store *s);

/* ---- helpers --------------------------------------------------------------- */

/* snprintf into err (errlen bytes); err NULL or errlen 0: nothing. */
void store_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Take a RocksDB errptr: copy it into err with what, free it, return -EIO. */
int store_rocks_fail(char *rerr, char *err, size_t errlen, const char *what);

/* Grow s->buf, the writers' packing buffer, to n bytes. 0 or -ENOMEM. */
int store_buf_reserve(struct store *s, size_t n);

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
 * reopens it) and counts as a write error when ingest; one for space
 * releases the reserve. 0 or -EIO. */
int store_commit(struct store *s, rocksdb_writebatch_t *wb, bool ingest, char *err, size_t errlen);

/* Fills a new write batch; the family handles (s->cf) are valid while it runs. */
typedef void (*store_fill_fn)(struct store *s, rocksdb_writebatch_t *wb, const void *ctx);

/* Take s->lock, reopen when due (store_writer_ready), and write what fill
 * puts in a new batch. The batch is built under the lock because the family
 * handles are only valid there, with the store open: a reopen replaces them
 * and a closed store has none (a batch built before the lock named a handle
 * that a failed write's reopen had freed, or NULL: the collector crashed on a
 * full disk). 0, or -EIO with err set. */
int store_write_locked(struct store *s, store_fill_fn fill, const void *ctx, char *err,
                       size_t errlen);

/* Take the read lock; -EIO (lock released) when the DB is closed. */
int store_read_begin(struct store *s);

/* Release the read lock taken by store_read_begin. */
void store_read_end(struct store *s);

/* ---- reads --------------------------------------------------------------- */

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

/* Free what a holds (not a itself). */
void store_time_agg_free(struct time_agg *a);

/* Put one received-index entry in wb: key minute + the job of node j, value
 * the step range [min, max]. 0 or -ENOMEM. */
int store_received_put(struct store *s, rocksdb_writebatch_t *wb, uint64_t minute,
                       const struct kv_node *j, uint64_t min, uint64_t max);

#endif
