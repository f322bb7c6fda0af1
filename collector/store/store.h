/* collector/store/: the collector's time-indexed store on RocksDB (docs/design.md
 * section 6). It takes in the validated batches the collector's ingest
 * (collector/ingest/ingest.c) hands it, each step record kept as the agent packed
 * it, with the (agent, epoch, seq) high-water mark that makes a redelivered
 * batch a no-op, and the reports diagnosis writes back; it gives out packed
 * protobuf bytes through scans (jobs, steps by window and rank, ranks,
 * reports, names, the time index) to the query API and diagnosis, plus
 * stats for /metrics, and applies retention. Files, each calling only the
 * ones below it: store.h (this API) and store.c (open, close, stats) on
 * top; store_write.c (ingest, high-water marks, reports put), store_read.c
 * (scans, get_report, get_name, the time index), store_retention.c
 * (retention, compaction), store_alerts.c and store_traces.c (their
 * families), with store_seen.c (distinct step records) under the writers;
 * store_db.h (the handle: struct store, column families, open and reopen,
 * writer and reader entry, range scans, the index aggregation); and
 * store_kv.h (keyed sets, big-endian keys) and store_reserve.h (the
 * headroom file for a full disk) at the bottom.
 *
 * Column families, keys big-endian so they sort by (job, step, rank) or time:
 *   steps   job \0 | step u64 | rank u32     -> packed argus.v1.StepRecord
 *   ranks   job \0 | rank u32                -> packed argus.v1.Resource
 *   jobs    job                              -> packed argus.v1.JobInfo
 *   time    unix second u64 | job            -> step range (min u64, max u64)
 *   received  unix minute start u64 | job   -> step range (min u64, max u64)
 *   reports job \0 | created ns u64 | id     -> packed argus.v1.Report
 *   alerts  the alert module's records (collector/alerts/: queue, states),
 *           keys and values its own (store_alerts.c)
 *   names   job \0 | name id u64             -> name string
 *           job \0 | set id u64 | "kset"     -> a kernel identity set
 *           (store_ksets.c)
 *   dedup   agent \0 | epoch u64             -> highest stored seq u64
 *   report_ids  id                            -> the report's key in reports
 *   traces  report id \0 | rank u32         -> packed argus.v1.TraceWindow
 *           (store_traces.c: the drill-down windows)
 *   actions "a:" id -> packed argus.v1.Action, "b" -> packed
 *           argus.v1.ActionBreaker (collector/actions/, store_actions.c)
 *   owners  job \0 | rank u32             -> attempt u32 | last seen u64 | owner
 *           (collector/ingest/owners.h, store_owners.c: who may write a rank)
 * LZ4 on hot levels, ZSTD at the bottom. Retention by age per family.
 *
 * Two clocks. `time` is the agents' clock: the second a step started on its
 * node (StepRecord.start_unix_ns), for "what ran between T1 and T2"
 * (store_scan_time). `received` is the collector's clock: the minute a batch
 * was received, which retention goes by, so a node whose clock is days off
 * loses nothing early. JobInfo first/last seen are receive times too. A store
 * written before `received` existed gets it built from `time` at open.
 * JobInfo.rank_steps counts distinct (step, rank) records: a record stored
 * again (a replay under new sequence numbers) is written under its same key
 * and not counted (store_seen.c).
 * Values in time and dedup are big-endian u64s too. Job ids must not contain
 * NUL (the ingest layer checks); strings a batch leaves NULL count as "".
 *
 * All RocksDB handles, errptr strings and options stay inside collector/store/.
 * The store is thread-safe: ingest is serialised by an internal lock (dedup
 * check and write are one critical section), reads run concurrently.
 *
 * JobInfo is kept in memory (loaded at open) so ingest does no reads but the
 * dedup and time-index cache misses. After a failed write the next writer
 * call closes and reopens the DB (at most once a second; the 7.8 C API has no
 * rocksdb_resume and a DB that hit ENOSPC refuses writes until then), so
 * ingest resumes by itself once space returns. A write or an open that fails
 * for space releases the store's reserve (store_reserve.h: a preallocated
 * file in dir) so that the reopen, RocksDB's recovery and queries find room;
 * until it is taken back (store_tick), ingest is refused with -EIO while
 * less than the reserve's size is free. RocksDB's info LOG is kept
 * silent (HEADER level): Debian's build asserts when it appends to a LOG that
 * already failed with ENOSPC.
 *
 * Scan callbacks run with the store's read lock held (except store_scan_time's,
 * which run after it): they may call other read functions, but not
 * store_ingest, store_put_report or store_apply_retention.
 */
#ifndef ARGUS_COLLECTOR_STORE_H
#define ARGUS_COLLECTOR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

struct store;

struct store_options {
    const char *dir;             /* created when missing */
    bool sync;                   /* fsync the WAL on every ingest write (else WAL, no fsync) */
    uint64_t steps_retention_ns; /* 0 = keep forever; applies to steps, time, ranks */
    uint64_t reports_retention_ns;
    uint64_t block_cache_bytes; /* 0 = RocksDB default */
    uint64_t reserve_bytes;     /* headroom file in dir (store_reserve.h); 0 = none */
    uint64_t memtable_bytes;    /* the steps family's write buffer; 0 = 32 MiB */
    bool wal_zstd; /* the WAL compressed (ZSTD, RocksDB 7.8's only choice; not safe on a disk that
                      fills up: store_db.c) */
};

/* Open (or create) the store. Returns 0 and *out, or -errno with a sentence in
 * err (errlen bytes): -EBUSY when the directory is locked by another
 * collector, -EIO for other RocksDB errors. The reserve (reserve_bytes) is
 * taken first when there is room; an open that fails for space releases it
 * and tries once more. */
int store_open(const struct store_options *opts, struct store **out, char *err, size_t errlen);

/* Close and free. NULL is fine. */
void store_close(struct store *s);

enum store_ingest_result {
    STORE_INGEST_WRITTEN = 0,   /* batch written durably */
    STORE_INGEST_DUPLICATE = 1, /* seq <= stored high-water mark: nothing written */
};

/* Store a validated batch atomically: every step record, resource and name it
 * carries, the job and time index updates, and the (agent_id, epoch) -> seq
 * high-water mark, in one WriteBatch committed with the WAL. Returns
 * STORE_INGEST_WRITTEN, STORE_INGEST_DUPLICATE, or -EIO (disk full or any
 * RocksDB error; err says which) in which case nothing was written and the
 * batch must not be acked. The batch stays owned by the caller. */
int store_ingest(struct store *s, const Argus__V1__Batch *batch, char *err, size_t errlen);

/* Bytes of one packed message inside a larger buffer. */
struct store_slice {
    const char *data;
    size_t len;
};

/* store_ingest with the packed bytes of each step record already at hand
 * (raw[i] is batch->steps[i] as it was on the wire; raw NULL: packed again)
 * and the time the collector received the batch (recv_unix_ns, its own
 * clock; 0: now). store_ingest is (raw NULL, recv now). */
int store_ingest_raw(struct store *s, const Argus__V1__Batch *batch, const struct store_slice *raw,
                     uint64_t recv_unix_ns, char *err, size_t errlen);

/* Highest stored seq for (agent_id, epoch), 0 when none. */
int store_high_water(struct store *s, const char *agent_id, uint64_t epoch, uint64_t *seq);

/* Put a diagnosis report (reports family). */
int store_put_report(struct store *s, const Argus__V1__Report *report, char *err, size_t errlen);

/* Record what diagnosis knows of job: its state (Argus__V1__JobState), a
 * one-line reason (copied, cut at 200 bytes) and the launcher's attempt;
 * they go into its JobInfo (jobs family) from now on. A job the store has
 * no JobInfo of (nothing ingested) is left alone: 0. Returns 0, or
 * -EIO/-ENOMEM with err set. */
int store_put_job_state(struct store *s, const char *job, int state, const char *reason,
                        uint32_t restart, char *err, size_t errlen);

/* Set job's JobInfo.blind (what its diagnosis sheds, "" once it is whole
 * again). 0 (also for a job the store does not know) or -errno. */
int store_put_job_blind(struct store *s, const char *job, const char *blind, char *err,
                        size_t errlen);

/* Callbacks of the scans below get packed protobuf bytes, valid only during
 * the call. Return 0 to go on, 1 to stop, negative to abort the scan with
 * that error. */
typedef int (*store_scan_fn)(void *ctx, const void *value, size_t len);

/* Every job (packed JobInfo), in job id order. */
int store_scan_jobs(struct store *s, store_scan_fn fn, void *ctx);

/* The JobInfo of job (packed) through fn. 0 (or what fn returned when
 * negative), -ENOENT when the store has no such job, -EIO. */
int store_get_job(struct store *s, const char *job, store_scan_fn fn, void *ctx);

/* Step records of job with from_step <= step <= to_step (to_step 0 = no
 * bound), ordered by (step, rank); rank < 0 means all ranks. */
int store_scan_steps(struct store *s, const char *job, int64_t rank, uint64_t from_step,
                     uint64_t to_step, store_scan_fn fn, void *ctx);

/* Drill-down windows (store_traces.c): the packed TraceWindow of a report's
 * rank, replacing an older one. 0, or -EIO/-ENOMEM with err set. */
int store_put_trace(struct store *s, const char *report_id, uint32_t rank, const void *packed,
                    size_t len, char *err, size_t errlen);

/* The packed TraceWindows of report_id, by rank (rank < 0: all). 0, -EIO or
 * what fn returned when negative (the scan stops). */
int store_scan_traces(struct store *s, const char *report_id, int64_t rank, store_scan_fn fn,
                      void *ctx);

/* Resources of job (packed Resource), by rank. */
int store_scan_ranks(struct store *s, const char *job, store_scan_fn fn, void *ctx);

/* Reports of job created in [from_ns, to_ns] (to_ns 0 = no bound), oldest
 * first. */
int store_scan_reports(struct store *s, const char *job, uint64_t from_ns, uint64_t to_ns,
                       store_scan_fn fn, void *ctx);

/* Reports of every job created at or after from_ns, job by job, oldest
 * first within a job; jobs whose steps retention already removed included.
 * It walks every key of the reports family (the time filter is on the key,
 * values outside it are not read): a fleet-wide question, not one for a
 * hot path. 0, -EIO or what fn returned when negative. */
int store_scan_reports_since(struct store *s, uint64_t from_ns, store_scan_fn fn, void *ctx);

/* The report with this id (packed Report) through fn. Returns 0, or -ENOENT. */
int store_get_report(struct store *s, const char *id, store_scan_fn fn, void *ctx);

/* Look up a name. Returns a malloc'd string (caller frees) or NULL. */
char *store_get_name(struct store *s, const char *job, uint64_t id);

/* Jobs whose steps started in [from_ns, to_ns] (time index, whole seconds;
 * to_ns 0 = no bound), each once in job id order, with its step range, through
 * fn(ctx, job, min_step, max_step); job is valid during the call. */
int store_scan_time(struct store *s, uint64_t from_ns, uint64_t to_ns,
                    int (*fn)(void *ctx, const char *job, uint64_t min_step, uint64_t max_step),
                    void *ctx);

/* Delete what is older than the retention settings (now_ns is the current
 * UNIX time on the collector's clock). Steps go by when they were received
 * (the received index): per job, one delete-range of the steps received in
 * minutes that ended before the cutoff, capped by the lowest step any record
 * received later has (a step is never cut in half, and a replayed old step
 * keeps what follows it until it ages out too); the received index below the
 * cutoff; the time index (agents' clocks) below the same cutoff on its own
 * clock (it only indexes: a step it forgets early is still stored); a job
 * with no step left loses its ranks, names and JobInfo. Reports go by their
 * created time. JobInfo.rank_steps keeps counting what was ingested. Returns
 * the number of keys or ranges removed, or -EIO. */
int64_t store_apply_retention(struct store *s, uint64_t now_ns);

/* Flush and compact every column family, blocking until done (maintenance,
 * benchmarks). Returns 0, or -EIO when the store is closed after an error. */
int store_compact(struct store *s);

/* The alerts family (store_alerts.c): keys and values are the caller's
 * bytes. Put and delete are one durable write each (the WAL, like ingest);
 * 0 or -EIO with err set. */
int store_put_alert(struct store *s, const void *key, size_t klen, const void *val, size_t vlen,
                    char *err, size_t errlen);
int store_delete_alert(struct store *s, const void *key, size_t klen, char *err, size_t errlen);

/* Every alerts key that starts with prefix (plen 0: all), in key order,
 * through fn (bytes valid during the call; 0 go on, 1 stop, negative
 * abort). Runs under the read lock: fn must not put or delete. Returns 0,
 * fn's negative value, -ENOMEM or -EIO. */
typedef int (*store_alert_fn)(void *ctx, const void *key, size_t klen, const void *val,
                              size_t vlen);
int store_scan_alerts(struct store *s, const void *prefix, size_t plen, store_alert_fn fn,
                      void *ctx);

/* The actions family (store_actions.c): collector/actions/'s records, keys
 * and values its own bytes, kept until deleted (no retention: actions are
 * few, the breaker bounds them). Put writes pairs (keys[i], vals[i]) as one
 * durable write (the WAL); 0 or -EIO with err set. Scan calls fn for every
 * key that starts with prefix (plen 0: all) in key order, under the read
 * lock (fn must not write; 0 go on, 1 stop, negative abort); 0, fn's
 * negative value, -ENOMEM or -EIO. */
int store_put_actions(struct store *s, size_t n, const char *const *keys, const void *const *vals,
                      const size_t *vlens, char *err, size_t errlen);
int store_scan_actions(struct store *s, const void *prefix, size_t plen, store_alert_fn fn,
                       void *ctx);

/* A key and its value, the caller's bytes. */
struct store_pair {
    const void *key;
    size_t klen;
    const void *val;
    size_t vlen;
};

/* The owners family (store_owners.c): collector/ingest/owners.c's entries,
 * keys job \0 | rank. Put writes the n pairs as one durable write (the WAL);
 * delete removes every key of job (a range delete). Both 0, or -EIO/-ENOMEM
 * with err set. Scan calls fn for every entry in key order under the read
 * lock (fn must not write; 0 go on, 1 stop, negative abort); 0, fn's
 * negative value or -EIO. Retention leaves the family alone: owners.c
 * forgets its jobs itself. */
int store_put_owners(struct store *s, const struct store_pair *kv, size_t n, char *err,
                     size_t errlen);
int store_delete_owners(struct store *s, const char *job, char *err, size_t errlen);
int store_scan_owners(struct store *s, store_alert_fn fn, void *ctx);

/* Kernel identity sets (common/kernel_code.h) of a job, in the names family
 * under job \0 | set u64 | "kset" (a name's key has no such tail), so that
 * retention removes them with the job's names; the value is n x (name id
 * u64, stream u32, work id u32), little-endian. Put writes the n sets as
 * one durable write (the WAL): 0, or -EIO/-ENOMEM with err set. Get gives
 * set's identities (*ids malloc'd, the caller frees): 0, -ENOENT, -EIO
 * (the store is closed or a read failed), -ENOMEM. */
struct kernel_code_ident;
struct store_kernel_set {
    const char *job;
    uint64_t set;
    const struct kernel_code_ident *ids;
    size_t n;
};
int store_put_kernel_sets(struct store *s, const struct store_kernel_set *sets, size_t n, char *err,
                          size_t errlen);
int store_get_kernel_set(struct store *s, const char *job, uint64_t set,
                         struct kernel_code_ident **ids, size_t *n);

/* Numbers for /metrics. */
struct store_stats {
    uint64_t write_batches;  /* successful ingest writes */
    uint64_t write_errors;   /* failed ingest writes */
    uint64_t write_ns_total; /* time in rocksdb_write */
    uint64_t write_ns_max;
    uint64_t duplicates;        /* batches at or below the high-water mark */
    uint64_t duplicate_records; /* step records stored again, not counted again */
    uint64_t live_sst_bytes;    /* rocksdb.live-sst-files-size over all families */
    bool failing;               /* the last ingest write failed (or the DB is closed) */
    char last_error[160];       /* the first error of the failing streak */
    uint64_t reserve_bytes;     /* bytes the reserve holds now (0: released or none) */
    uint64_t reserve_want;      /* its configured size */
    uint64_t reserve_released;  /* times it was released for a full disk */
    uint64_t disk_free_bytes;   /* free bytes of the store's filesystem (statvfs) */
    uint64_t disk_total_bytes;
};
void store_get_stats(struct store *s, struct store_stats *out);

/* Periodic upkeep (the collector's main loop, about once a second, now_ns
 * monotonic): takes the reserve back once space has returned. Returns 1
 * when it was taken back now, else 0. */
int store_tick(struct store *s, uint64_t now_ns);

#endif
