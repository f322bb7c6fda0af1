/* The store's headroom on its disk (docs/operations.md, "A full disk"). It
 * takes in the store's directory and a size, and gives out a preallocated
 * file, DIR/reserve, of that size, which the store releases (unlinks) when a
 * write or an open fails for space: RocksDB's recovery (the WAL written out
 * as a table, a new MANIFEST and WAL) and a reopen then find room, so the
 * collector opens and answers queries on a full disk. While the reserve is
 * not held (released, or no room for it at the start: the rule survives a
 * restart), ingest is refused (store_reserve_short), so the freed headroom
 * stays for recovery and queries instead of being spent on batches (a
 * compressed WAL takes minutes of them to fill it). Once the free space
 * stays above twice the size for STORE_RESERVE_SETTLE_NS, the file is made
 * again (store_reserve_tick) and ingest resumes.
 * Releases log at warn, taking it back at info.
 *
 * Not thread-safe: the store calls it under its writer lock (s->lock).
 * It sits below store_db.c and calls nothing of the store.
 */
#ifndef ARGUS_COLLECTOR_STORE_RESERVE_H
#define ARGUS_COLLECTOR_STORE_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

/* How long the free space must stay above twice the reserve before the
 * reserve is taken back (a disk hovering at the edge does not flap). */
#define STORE_RESERVE_SETTLE_NS (5ull * 1000000000ull)

struct store_reserve {
    char *path;           /* DIR/reserve */
    char *dir;            /* the store's directory, for statvfs */
    uint64_t want;        /* configured size; 0: no reserve, no refusal */
    uint64_t held;        /* bytes the file holds now (0: released or never made) */
    uint64_t released;    /* times it was released since start */
    uint64_t roomy_since; /* monotonic ns since the free space is above 2 x want (0: not) */
};

/* Set r up for dir with a reserve of want bytes (0: off) and take it when
 * there is room: an existing file is kept (grown to want), a missing one
 * made when at least 2 x want is free (else a warning, and it is taken
 * later). Returns 0 or -ENOMEM; not finding room is no error. */
int store_reserve_init(struct store_reserve *r, const char *dir, uint64_t want);

/* Free r's strings (the file stays on disk for the next start). */
void store_reserve_fini(struct store_reserve *r);

/* Release the reserve after a failure for space (why: what failed, for the
 * log). Returns true when bytes were freed (the caller may retry), false
 * when none were held. */
bool store_reserve_release(struct store_reserve *r, const char *why);

/* Periodic: take the reserve back once the free space has stayed above
 * 2 x want for STORE_RESERVE_SETTLE_NS (now_ns: monotonic). Returns 1 when
 * it was taken back now, else 0. */
int store_reserve_tick(struct store_reserve *r, uint64_t now_ns);

/* True when ingest must be refused: a reserve is configured and not held. */
bool store_reserve_short(const struct store_reserve *r);

/* Free and total bytes of the filesystem holding dir; free as this
 * process may use them (root: the filesystem's reserved blocks too).
 * 0 or -errno. */
int store_disk_usage(const char *dir, uint64_t *free_bytes, uint64_t *total_bytes);

/* True when a RocksDB error message says the disk is full. msg may be NULL. */
bool store_is_nospace(const char *msg);

#endif
