/* The spool's insides, shared by spool.c (open, append, ack, read, cap) and
 * spool_recover.c (what spool_open finds on disk: meta, acks, segments,
 * damage). Not for other modules: spool.h is the interface. */
#ifndef ARGUS_AGENT_SPOOL_IMPL_H
#define ARGUS_AGENT_SPOOL_IMPL_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "agent/delivery/spool.h"
#include "common/crc32c.h"

#define REC_MAGIC UINT32_C(0x31525341) /* "ASR1" */
#define REC_HDR 20                     /* magic u32, len u32, seq u64, crc u32 */
#define META_MAGIC UINT32_C(0x4d505341)
#define META_VERSION 1
#define ACK_MAGIC UINT32_C(0x4b505341)
#define ACK_SLOT 32
#define ACK_STRIDE 512 /* the two ack slots sit in different sectors */
#define SEQ_RESERVE 4096
#define SEG_NAME_LEN 41 /* seg-<16 hex>-<16 hex>.log */
#define COUNTED 16      /* damaged spots remembered so a restart does not count them again */

struct entry { /* one valid record */
    uint64_t seq;
    uint64_t off;
    uint32_t len;
};

struct segment {
    uint64_t epoch, first_seq; /* from the file name */
    uint64_t size;             /* bytes on disk */
    struct entry *e;           /* valid records, ascending seq */
    size_t n, cap;
    bool dead; /* to be deleted (spool_open) */
};

/* The meta file's payload, host byte order. */
struct meta {
    uint64_t epoch;
    uint64_t seq_reserved;    /* no seq above it was ever handed out */
    uint64_t acked;           /* ack watermark (live in memory) */
    uint64_t dropped_through; /* records <= it were dropped by the cap */
    uint64_t dropped_records, dropped_bytes;
    uint64_t corrupt_records, corrupt_bytes;
    uint64_t counted[COUNTED]; /* damage right before these seqs is counted */
};
#define META_SIZE (8 + sizeof(struct meta) + 4)

struct spool {
    struct spool_options o;
    struct meta m;
    uint64_t next_seq;
    int dirfd, lockfd, ackfd;
    int fd;  /* the open segment (always the last one), or -1 */
    int rfd; /* cached read fd of the segment starting at rfd_seq */
    uint64_t rfd_seq;
    struct segment *seg; /* oldest first */
    size_t nseg, segcap;
    uint64_t ack_gen, synced_ns;
    bool ready, unsynced, meta_dirty;
    uint8_t *buf; /* spool_read's record buffer */
    size_t bufcap;
    uint64_t appended, acked, fsyncs, fsync_errors;
    uint64_t reported_cap, reported_corrupt; /* losses told to o.on_loss */
};

static inline int neg_errno(void)
{
    return errno > 0 ? -errno : -EIO;
}

static inline uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static inline uint64_t seg_last(const struct segment *g)
{
    return g->n ? g->e[g->n - 1].seq : g->first_seq - 1;
}

/* Every seq up to this one is acked or dropped by the cap. */
static inline uint64_t spool_gone(const struct spool *s)
{
    return max64(s->m.acked, s->m.dropped_through);
}

static inline void seg_name(char *buf, const struct segment *g)
{
    snprintf(buf, SEG_NAME_LEN + 1, "seg-%016" PRIx64 "-%016" PRIx64 ".log", g->epoch,
             g->first_seq);
}

static inline uint32_t rec_crc(const uint8_t *hdr, const void *payload, uint32_t len)
{
    return crc32c(crc32c(0, hdr, 16), payload, len);
}

/* spool.c */

/* Read up to len bytes at off. Returns the bytes read (short at EOF) or -errno. */
ssize_t spool_pread(int fd, void *buf, size_t len, uint64_t off);

/* Append a segment (epoch, first) to the list. 0 or -ENOMEM. */
int spool_seg_push(struct spool *s, uint64_t epoch, uint64_t first);

/* Forget segment i (closing its fds) and delete its file. */
void spool_seg_remove(struct spool *s, size_t i);

/* Room for one more entry in g. 0 or -ENOMEM. */
int spool_entry_reserve(struct segment *g);

/* Replace meta atomically (write meta.tmp, fsync, rename, fsync the
 * directory; the fsyncs are counted). A failure leaves meta_dirty set so
 * that spool_tick tries again. Returns 0 or -errno. */
int spool_meta_write(struct spool *s);

/* spool_recover.c */

/* Meta, segments and acks: fix the identity, index the records, count what
 * is damaged or of another epoch, write meta. Returns 0 or -errno. */
int spool_recover(struct spool *s);

/* Remember that the damage right before seq is counted; the lowest (oldest)
 * spot makes room. Returns false when it was remembered already. */
bool spool_damage_remember(struct spool *s, uint64_t seq);

#endif
