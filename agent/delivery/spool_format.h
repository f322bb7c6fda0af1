/* The spool's files and its in-memory index, below both spool.c (open,
 * append, ack, read, cap) and spool_recover.c (what spool_open finds on
 * disk). spool.h describes the format; this module holds its constants, the
 * meta file's encoding, the record checksum, segment names and the index of
 * valid records (segments, oldest first, each with its records by seq). It
 * calls neither of its users. */
#ifndef ARGUS_AGENT_SPOOL_FORMAT_H
#define ARGUS_AGENT_SPOOL_FORMAT_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

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

struct spool_entry { /* one valid record */
    uint64_t seq;
    uint64_t off;
    uint32_t len;
};

struct spool_segment {
    uint64_t epoch, first_seq; /* from the file name */
    uint64_t size;             /* bytes on disk */
    struct spool_entry *e;     /* valid records, ascending seq */
    size_t n, cap;
    bool dead; /* to be deleted (spool_recover) */
};

/* Every segment of the spool, oldest (lowest first seq) first. */
struct spool_index {
    struct spool_segment *seg;
    size_t nseg, segcap;
};

/* The meta file's payload, host byte order. */
struct spool_meta {
    uint64_t epoch;
    uint64_t seq_reserved;    /* no seq above it was ever handed out */
    uint64_t acked;           /* ack watermark (live in memory) */
    uint64_t dropped_through; /* records <= it were dropped by the cap */
    uint64_t dropped_records, dropped_bytes;
    uint64_t corrupt_records, corrupt_bytes;
    uint64_t counted[COUNTED]; /* damage right before these seqs is counted */
};
#define META_SIZE (8 + sizeof(struct spool_meta) + 4)

/* errno as a negative error; -EIO when a failed call left none. */
static inline int spool_neg_errno(void)
{
    return errno > 0 ? -errno : -EIO;
}

static inline uint64_t spool_max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The last seq of g (first_seq - 1 when it holds no valid record). */
static inline uint64_t spool_segment_last(const struct spool_segment *g)
{
    return g->n ? g->e[g->n - 1].seq : g->first_seq - 1;
}

/* Every seq up to this one is acked or dropped by the cap. */
static inline uint64_t spool_meta_gone(const struct spool_meta *m)
{
    return m->acked > m->dropped_through ? m->acked : m->dropped_through;
}

/* The file name of g into buf (SEG_NAME_LEN + 1 bytes). */
static inline void spool_segment_name(char *buf, const struct spool_segment *g)
{
    snprintf(buf, SEG_NAME_LEN + 1, "seg-%016" PRIx64 "-%016" PRIx64 ".log", g->epoch,
             g->first_seq);
}

/* A record's checksum: its header's first 16 bytes, then the payload. */
static inline uint32_t spool_record_crc(const uint8_t *hdr, const void *payload, uint32_t len)
{
    return crc32c(crc32c(0, hdr, 16), payload, len);
}

/* Read up to len bytes at off, resuming after EINTR and short reads.
 * Returns the bytes read (short at EOF) or -errno. */
ssize_t spool_format_pread(int fd, void *buf, size_t len, uint64_t off);

/* Read the meta file of the directory dirfd into *m. Returns 0, -EBADMSG
 * when it is short, of another version, fails its checksum or has no epoch
 * (*m is then unspecified), or -errno. */
int spool_format_meta_read(int dirfd, struct spool_meta *m);

/* Replace the meta file of dirfd with m atomically (meta.tmp, fsync,
 * rename, fsync the directory), counting the fsyncs and their failures.
 * Returns 0 or -errno. */
int spool_format_meta_write(int dirfd, const struct spool_meta *m, uint64_t *fsyncs,
                            uint64_t *fsync_errors);

/* Remember in m that the damage right before seq is counted; the lowest
 * (oldest) spot makes room. Returns false when it was remembered already. */
bool spool_format_damage_remember(struct spool_meta *m, uint64_t seq);

/* Append an empty segment (epoch, first) to ix. Returns 0 or -ENOMEM. */
int spool_index_push(struct spool_index *ix, uint64_t epoch, uint64_t first);

/* Room for one more entry in g. Returns 0 or -ENOMEM. */
int spool_index_reserve(struct spool_segment *g);

/* Forget segment i of ix and delete its file from dirfd. The caller closes
 * any fd it holds on that file first. */
void spool_index_delete(struct spool_index *ix, int dirfd, size_t i);

/* Free every segment's entries and the list; ix is left empty. */
void spool_index_free(struct spool_index *ix);

#endif
