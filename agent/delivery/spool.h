/* The agent's on-disk spool of sealed batches (docs/design.md section 5).
 *
 * Every sealed batch (opaque bytes: a packed argus.v1.Frame) is appended
 * before it is sent and stays until the collector acks it. The spool owns the
 * delivery identity (epoch, seq): the batcher stamps a batch with
 * spool_epoch() and spool_next_seq(), then spool_append() stores it under
 * exactly that seq. A seq is never reused within an epoch.
 *
 * On disk, in one directory (created with mode 0700 when missing):
 *   seg-<epoch>-<first seq>.log  segments (16 hex digits each), records
 *                                {magic, len u32, seq u64, crc32c of header
 *                                and payload} + payload, host byte order
 *   meta                         epoch, seq reservation, drop and corruption
 *                                counters; replaced atomically (write, fsync,
 *                                rename, fsync the directory)
 *   ack                          ack watermark: two checksummed slots written
 *                                in turn with one pwrite, never fsynced
 *   lock                         flock: one spool per directory
 * Other files are left alone.
 *
 * Identity. The epoch is kept as long as the meta file or any record
 * survives; it changes (realtime ns) only when both are gone. Within an
 * epoch the seq continues after the highest seq ever handed out, also when
 * every record was acked. Seqs are reserved in blocks recorded (fsynced) in
 * meta before use, so a crash that loses unsynced records cannot lead to a
 * seq being handed out twice; after such a crash seqs skip ahead to the end
 * of the reservation (a gap, never a reuse). A clean spool_close() releases
 * the unused part of the reservation, so a clean restart has no gap. The
 * drop and corruption counters belong to the epoch (DropCounter.total is
 * "since the start of this epoch"): they reset only with a new epoch.
 * Segments of another epoch (left behind when meta was lost) are deleted at
 * open and counted as dropped.
 *
 * Acks. The ack watermark is written on every spool_ack without fsync: after
 * a crash the spool may replay a few records the collector already acked
 * (the collector de-duplicates by (agent, epoch, seq)). Closed segments are
 * deleted once all their records are acked; the open segment when it closes,
 * or as soon as it is fully acked and holds 256 KiB or more.
 *
 * Cap. Segment files never exceed cap_bytes in total: an append that would go
 * over it first deletes whole oldest segments; their unacked records are
 * counted (dropped_records, dropped_bytes = payload bytes), persisted in
 * meta before the files go, so the counters are exact across restarts.
 *
 * Delivered. With more than one collector (agent/delivery/fanout.h) a
 * record may be acked by one collector and still wait for another. The
 * owner tells the spool the seq below which every record reached every
 * collector that is still reachable (spool_set_delivered): when the cap
 * deletes a record at or below it, the data is not lost (a collector has
 * it), only a lagging collector is behind: the record is counted in
 * behind_records and told as SPOOL_LOSS_BEHIND, not SPOOL_LOSS_CAP. The
 * ack watermark (what deletes segments) stays the owner's business: it is
 * the lowest seq every collector has. behind_records counts since open
 * (not kept in meta: the agent's drop table carries it across restarts).
 *
 * Corruption. spool_open reads every segment and checks every record. A bad
 * header or checksum, or a torn record at the tail, is counted
 * (corrupt_records: the seq gap when the next good record tells it, else 1;
 * corrupt_bytes: the bytes skipped) and skipped by scanning forward for the
 * next valid record (magic, plausible length and seq, checksum), so later
 * records stay readable. A torn tail of the newest segment is truncated
 * away. A record found bad at replay time is counted and skipped the same
 * way. The spot of counted damage (the seq of the next valid record; the
 * last 16 spots) is remembered in meta, so a restart does not count the same
 * damage again. Damage among acked records is not counted. Files named like
 * segments but holding no valid record are counted and deleted; directories
 * and other names are left alone. A failed read or allocation during the
 * scan is not damage: it never truncates anything.
 *
 * Losses. The spool reports what it loses itself to the optional on_loss
 * callback, as it counts it: records dropped by the cap or with a segment
 * of another epoch (SPOOL_LOSS_CAP, dropped_records) and records lost to
 * corruption (SPOOL_LOSS_CORRUPT, corrupt_records), and, not a loss but
 * told the same way, records only a lagging collector missed
 * (SPOOL_LOSS_BEHIND, behind_records). spool_open reports the
 * totals the epoch had already (from meta, plus what the scan found), later
 * calls report what was added, so the counts told add up to the epoch's
 * totals in spool_stats. The agent adds them to its drop table
 * (agent/delivery/drops.h); nothing needs to poll spool_stats for them.
 *
 * Errors are negative errno; nothing here exits or logs (the caller does).
 * Not thread-safe: one thread (the agent main loop) uses a spool.
 */
#ifndef ARGUS_AGENT_SPOOL_H
#define ARGUS_AGENT_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spool;

#define SPOOL_DEFAULT_CAP (UINT64_C(1) << 30)
#define SPOOL_DEFAULT_SEGMENT (UINT64_C(16) << 20)
#define SPOOL_DEFAULT_FSYNC_INTERVAL_NS UINT64_C(1000000000)
#define SPOOL_DEFAULT_MAX_RECORD (UINT32_C(64) << 20)

enum spool_fsync {
    SPOOL_FSYNC_INTERVAL = 0, /* fdatasync at most every fsync_interval_ns (default) */
    SPOOL_FSYNC_SEGMENT,      /* fsync only when a segment closes and at spool_close */
    SPOOL_FSYNC_ALWAYS,       /* fdatasync after every append */
};

/* The reasons on_loss reports, as drop counters name them. */
#define SPOOL_LOSS_CAP "spool_cap"         /* unacked records deleted by the cap */
#define SPOOL_LOSS_CORRUPT "spool_corrupt" /* records lost to corruption */
#define SPOOL_LOSS_BEHIND "standby_behind" /* deleted by the cap, at or below delivered */

/* count more records lost for reason (a SPOOL_LOSS_* string), called from
 * inside spool_open, spool_append or spool_read. It must not call into the
 * spool. */
typedef void (*spool_loss_fn)(void *ctx, const char *reason, uint64_t count);

/* Zero-initialised options mean the defaults. */
struct spool_options {
    uint64_t cap_bytes;         /* 0 = SPOOL_DEFAULT_CAP */
    uint64_t segment_bytes;     /* 0 = SPOOL_DEFAULT_SEGMENT; at most cap_bytes / 4 */
    enum spool_fsync fsync;     /* SPOOL_FSYNC_INTERVAL by default */
    uint64_t fsync_interval_ns; /* 0 = SPOOL_DEFAULT_FSYNC_INTERVAL_NS */
    uint32_t max_record_bytes;  /* 0 = SPOOL_DEFAULT_MAX_RECORD; larger appends fail */
    spool_loss_fn on_loss;      /* NULL: losses are only counted in spool_stats */
    void *on_loss_ctx;
};

struct spool_stats {
    uint64_t epoch;           /* the delivery epoch */
    uint64_t next_seq;        /* seq the next append gets */
    uint64_t acked_seq;       /* ack watermark: every seq <= it is acked */
    uint64_t bytes;           /* bytes of all segment files (what cap_bytes bounds) */
    uint64_t records;         /* valid unacked records */
    uint64_t segments;        /* segment files */
    uint64_t dropped_records; /* unacked records deleted by the cap, this epoch */
    uint64_t dropped_bytes;   /* their payload bytes */
    uint64_t corrupt_records; /* records lost to corruption, this epoch */
    uint64_t corrupt_bytes;   /* bytes skipped as corrupt */
    uint64_t behind_records;  /* records the cap deleted at or below delivered, since open */
    uint64_t appended;        /* appends since open */
    uint64_t acked;           /* records acked since open */
    uint64_t fsyncs;          /* fsync/fdatasync calls since open */
    uint64_t fsync_errors;    /* failed ones (data may be lost on a crash) */
};

/* Open the spool in dir (created, with parents, when missing), scan and
 * check every segment, and fix the identity as described above. opts may be
 * NULL (defaults); it is copied. Returns 0 and *out, or -errno: -EBUSY when
 * another process holds the directory, -ENOMEM, or the error of a failed
 * directory or meta operation. */
int spool_open(const char *dir, const struct spool_options *opts, struct spool **out);

/* fsync the open segment, release the unused seq reservation, write meta and
 * free everything. NULL is fine. Records stay on disk for the next open. */
void spool_close(struct spool *s);

/* The delivery epoch and the seq the next successful spool_append returns.
 * A failed append does not consume the seq. */
uint64_t spool_epoch(const struct spool *s);
uint64_t spool_next_seq(const struct spool *s);

/* The ack watermark (spool_stats' acked_seq). */
uint64_t spool_acked_seq(const struct spool *s);

/* True when a valid record is not acked yet (spool_stats' records > 0).
 * Cheap, unlike spool_stats, which walks every segment: for the exporter's
 * hot path. */
bool spool_has_unacked(const struct spool *s);

/* The seq of the first record with seq > after_seq and above the ack
 * watermark, from the index alone (no read: a record found corrupt later
 * by spool_read is skipped there). Returns 1 with *seq, or 0 when none. */
int spool_peek(const struct spool *s, uint64_t after_seq, uint64_t *seq);

/* How many records have after_seq < seq < below_seq and are above the ack
 * watermark, from the index alone. */
uint64_t spool_count(const struct spool *s, uint64_t after_seq, uint64_t below_seq);

/* Every record with seq <= seq reached every collector still reachable
 * (see Delivered above): the cap deleting one of them counts it as
 * behind_records, not as a loss. Any value; 0 (the default) for one
 * collector. */
void spool_set_delivered(struct spool *s, uint64_t seq);

/* Append len bytes (copied) as the record with seq spool_next_seq(); on
 * success sets *seq (may be NULL) and returns 0. May first delete the oldest
 * segments to stay under the cap (counted as dropped). Returns -EMSGSIZE
 * when len exceeds max_record_bytes or the record alone exceeds the cap,
 * -ENOSPC (or the write's errno) when the disk is full: then nothing was
 * stored and the caller counts the batch as dropped. A failed fdatasync is
 * counted in fsync_errors, not returned: the record is stored either way. */
int spool_append(struct spool *s, const void *data, size_t len, uint64_t *seq);

/* Mark every record with seq <= seq as acked (the caller checks the ack's
 * epoch against spool_epoch). Lower or equal watermarks are ignored (0).
 * Returns -ERANGE, acking nothing, when seq was never handed out. Deletes
 * fully acked closed segments, then persists the watermark without fsync;
 * a failed write is returned, but the ack is applied in memory. */
int spool_ack(struct spool *s, uint64_t seq);

/* Find the first unacked record with seq > after_seq. Returns 1 with *seq,
 * *data and *len set, 0 when there is none, or -errno on a read error other
 * than corruption (bad records are counted and skipped). *data points into
 * the spool's buffer: valid until the next call on this spool. */
int spool_read(struct spool *s, uint64_t after_seq, uint64_t *seq, const void **data, size_t *len);

/* Periodic work for the main loop: under SPOOL_FSYNC_INTERVAL fdatasync the
 * open segment when it has unsynced data and the last fdatasync is at least
 * fsync_interval_ns old (spool_append checks the same); retry a
 * meta write that failed earlier. now_ns is clock_mono_ns(). Returns 0 or
 * the -errno of a failed meta write. */
int spool_tick(struct spool *s, uint64_t now_ns);

/* The monotonic time at which spool_tick next has work: the interval
 * fdatasync of unsynced data, or a meta write to retry (UINT64_MAX: none). */
uint64_t spool_next_ns(const struct spool *s, uint64_t now_ns);

/* Fill *st (a walk over every segment: for /metrics and logs, not for a hot
 * path). */
void spool_stats(const struct spool *s, struct spool_stats *st);

#endif
