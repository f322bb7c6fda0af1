/* The agent's on-disk spool: segment files of checksummed records, a meta file
 * for identity and counters, an ack file for the watermark. spool.h
 * describes the format and the guarantees; this file keeps an index of every
 * valid record in memory (24 bytes per record: 1.5 MiB for 1 GiB of 16 KiB
 * batches) so replay, acks and drop counting never re-read the disk. */
#include "agent/delivery/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"

#define REC_MAGIC UINT32_C(0x31525341) /* "ASR1" */
#define REC_HDR 20                     /* magic u32, len u32, seq u64, crc u32 */
#define META_MAGIC UINT32_C(0x4d505341)
#define META_VERSION 1
#define ACK_MAGIC UINT32_C(0x4b505341)
#define ACK_SLOT 32
#define ACK_STRIDE 512 /* the two ack slots sit in different sectors */
#define SEQ_RESERVE 4096
#define SCAN_WINDOW (1u << 20)
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

/* Damage found at open, counted once the next valid seq is known. */
struct scan_state {
    uint64_t prev; /* last valid seq so far */
    uint64_t records, bytes;
    bool count; /* false for segments of another epoch */
};

/* A read window over one segment file. */
struct scan {
    int fd;
    uint64_t size, start;
    uint8_t *buf;
    size_t cap, len;
    int err; /* a failed read or allocation: not damage, never truncated */
};

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

/* An open segment this large that is fully acked is closed and deleted. */
#define SPOOL_ROTATE_ACKED_BYTES (256u << 10)
#define SPOOL_META_RETRY_NS (100 * NSEC_PER_MSEC) /* a failed meta write is retried this often */

static int neg_errno(void)
{
    return errno > 0 ? -errno : -EIO;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t seg_last(const struct segment *g)
{
    return g->n ? g->e[g->n - 1].seq : g->first_seq - 1;
}

static uint64_t spool_gone(const struct spool *s)
{
    return max64(s->m.acked, s->m.dropped_through);
}

/* First index in g with seq > after (g->n when none). */
static size_t entry_after(const struct segment *g, uint64_t after)
{
    size_t lo = 0, hi = g->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->e[mid].seq <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void seg_name(char *buf, const struct segment *g)
{
    snprintf(buf, SEG_NAME_LEN + 1, "seg-%016" PRIx64 "-%016" PRIx64 ".log", g->epoch,
             g->first_seq);
}

static bool parse_hex16(const char *p, uint64_t *v)
{
    uint64_t x = 0;

    for (int i = 0; i < 16; i++) {
        int c = p[i];
        if (c >= '0' && c <= '9')
            x = x << 4 | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            x = x << 4 | (uint64_t)(c - 'a' + 10);
        else
            return false;
    }
    *v = x;
    return true;
}

static bool seg_parse(const char *name, uint64_t *epoch, uint64_t *first)
{
    return strlen(name) == SEG_NAME_LEN && !memcmp(name, "seg-", 4) && name[20] == '-' &&
           !strcmp(name + 37, ".log") && parse_hex16(name + 4, epoch) &&
           parse_hex16(name + 21, first) && *first > 0;
}

/* Write all of iov at off, resuming after short writes. */
static int write_full_at(int fd, const struct iovec *iov_in, int cnt, uint64_t off)
{
    struct iovec iov[2];
    int i = 0;

    memcpy(iov, iov_in, (size_t)cnt * sizeof(*iov));
    while (i < cnt) {
        ssize_t w = pwritev(fd, iov + i, cnt - i, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? neg_errno() : -ENOSPC;
        off += (uint64_t)w;
        while (i < cnt && (size_t)w >= iov[i].iov_len)
            w -= (ssize_t)iov[i++].iov_len;
        if (i < cnt) {
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + w;
            iov[i].iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Read up to len bytes at off. Returns the bytes read (short at EOF) or -errno. */
static ssize_t read_full_at(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;

    while (got < len) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return neg_errno();
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int dir_sync(struct spool *s)
{
    int err = fsync(s->dirfd) ? neg_errno() : 0;

    s->fsyncs++;
    s->fsync_errors += err != 0;
    return err;
}

/* Replace meta atomically: write meta.tmp, fsync, rename, fsync the directory.
 * A failure leaves meta_dirty set so that spool_tick tries again. */
static int meta_write(struct spool *s)
{
    uint8_t buf[META_SIZE];
    uint32_t magic = META_MAGIC, version = META_VERSION, crc;
    struct iovec io = {buf, sizeof(buf)};
    int fd, err;

    memcpy(buf, &magic, 4);
    memcpy(buf + 4, &version, 4);
    memcpy(buf + 8, &s->m, sizeof(s->m));
    crc = crc32c(0, buf, META_SIZE - 4);
    memcpy(buf + META_SIZE - 4, &crc, 4);
    fd = openat(s->dirfd, "meta.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        err = neg_errno();
        goto out;
    }
    err = write_full_at(fd, &io, 1, 0);
    if (!err && fsync(fd))
        err = neg_errno();
    s->fsyncs++;
    if (close(fd) && !err)
        err = neg_errno();
    if (!err && renameat(s->dirfd, "meta.tmp", s->dirfd, "meta"))
        err = neg_errno();
    if (!err)
        err = dir_sync(s);
out:
    s->meta_dirty = err != 0;
    return err;
}

static int meta_read(struct spool *s)
{
    uint8_t buf[META_SIZE + 1];
    uint32_t magic, version, crc;
    int fd = openat(s->dirfd, "meta", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return neg_errno();
    n = read_full_at(fd, buf, sizeof(buf), 0);
    close(fd);
    if (n != (ssize_t)META_SIZE)
        return n < 0 ? (int)n : -EBADMSG;
    memcpy(&magic, buf, 4);
    memcpy(&version, buf + 4, 4);
    memcpy(&crc, buf + META_SIZE - 4, 4);
    if (magic != META_MAGIC || version != META_VERSION || crc != crc32c(0, buf, META_SIZE - 4))
        return -EBADMSG;
    memcpy(&s->m, buf + 8, sizeof(s->m));
    return s->m.epoch ? 0 : -EBADMSG;
}

/* Write the watermark into the older of the two ack slots; no fsync. */
static int ack_write(struct spool *s)
{
    uint8_t b[ACK_SLOT] = {0};
    uint32_t magic = ACK_MAGIC, crc;
    uint64_t v[3] = {++s->ack_gen, s->m.epoch, s->m.acked};
    struct iovec io = {b, sizeof(b)};

    memcpy(b, &magic, 4);
    memcpy(b + 8, v, sizeof(v));
    crc = crc32c(0, b + 8, sizeof(v));
    memcpy(b + 4, &crc, 4);
    return write_full_at(s->ackfd, &io, 1, (s->ack_gen & 1) * ACK_STRIDE);
}

/* The highest watermark of this epoch in a valid ack slot, 0 when none. */
static uint64_t ack_read(struct spool *s)
{
    uint64_t best = 0;

    for (int i = 0; i < 2; i++) {
        uint8_t b[ACK_SLOT];
        uint32_t magic, crc;
        uint64_t v[3];

        if (read_full_at(s->ackfd, b, sizeof(b), (uint64_t)i * ACK_STRIDE) != ACK_SLOT)
            continue;
        memcpy(&magic, b, 4);
        memcpy(&crc, b + 4, 4);
        memcpy(v, b + 8, sizeof(v));
        if (magic != ACK_MAGIC || crc != crc32c(0, b + 8, sizeof(v)))
            continue;
        s->ack_gen = max64(s->ack_gen, v[0]);
        if (v[1] == s->m.epoch)
            best = max64(best, v[2]);
    }
    return best;
}

static int seg_push(struct spool *s, uint64_t epoch, uint64_t first)
{
    if (s->nseg == s->segcap) {
        size_t cap = s->segcap ? s->segcap * 2 : 16;
        struct segment *tmp = realloc(s->seg, cap * sizeof(*tmp));
        if (!tmp)
            return -ENOMEM;
        s->seg = tmp;
        s->segcap = cap;
    }
    s->seg[s->nseg++] = (struct segment){.epoch = epoch, .first_seq = first};
    return 0;
}

/* Forget segment i (closing its fds) and delete its file. */
static void seg_remove(struct spool *s, size_t i)
{
    struct segment *g = &s->seg[i];
    char name[SEG_NAME_LEN + 1];

    if (s->rfd >= 0 && s->rfd_seq == g->first_seq) {
        close(s->rfd);
        s->rfd = -1;
    }
    if (i == s->nseg - 1 && s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
        s->unsynced = false;
    }
    seg_name(name, g);
    unlinkat(s->dirfd, name, 0);
    free(g->e);
    memmove(g, g + 1, (s->nseg - i - 1) * sizeof(*g));
    s->nseg--;
}

static int entry_reserve(struct segment *g)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        struct entry *tmp = realloc(g->e, cap * sizeof(*tmp));
        if (!tmp)
            return -ENOMEM;
        g->e = tmp;
        g->cap = cap;
    }
    return 0;
}

static uint32_t rec_crc(const uint8_t *hdr, const void *payload, uint32_t len)
{
    return crc32c(crc32c(0, hdr, 16), payload, len);
}

/* Pointer to n bytes of the file at off, or NULL past EOF or on a read error. */
static const uint8_t *scan_at(struct scan *sc, uint64_t off, size_t n)
{
    size_t want = n > SCAN_WINDOW ? n : SCAN_WINDOW;
    ssize_t r;

    if (off > sc->size || n > sc->size - off)
        return NULL;
    if (off >= sc->start && off + n <= sc->start + sc->len)
        return sc->buf + (off - sc->start);
    if (want > sc->size - off)
        want = (size_t)(sc->size - off);
    if (want > sc->cap) {
        uint8_t *tmp = realloc(sc->buf, want);
        if (!tmp) {
            sc->err = -ENOMEM;
            return NULL;
        }
        sc->buf = tmp;
        sc->cap = want;
    }
    r = read_full_at(sc->fd, sc->buf, want, off);
    sc->start = off;
    sc->len = r > 0 ? (size_t)r : 0;
    if (sc->len < n)
        sc->err = r < 0 ? (int)r : -EIO; /* the file shrank under us */
    return sc->len >= n ? sc->buf : NULL;
}

/* Is there a valid record at off with a seq above after? */
static bool rec_check(struct scan *sc, uint64_t off, uint64_t after, uint32_t max_len,
                      struct entry *out)
{
    const uint8_t *p = scan_at(sc, off, REC_HDR);
    uint32_t magic, len, crc;
    uint64_t seq;

    if (!p)
        return false;
    memcpy(&magic, p, 4);
    memcpy(&len, p + 4, 4);
    memcpy(&seq, p + 8, 8);
    memcpy(&crc, p + 16, 4);
    if (magic != REC_MAGIC || len > max_len || seq <= after || len > sc->size - off - REC_HDR)
        return false;
    p = scan_at(sc, off, REC_HDR + (size_t)len);
    if (!p || rec_crc(p, p + REC_HDR, len) != crc)
        return false;
    *out = (struct entry){.seq = seq, .off = off, .len = len};
    return true;
}

/* The offset of the next valid record after off (in *out), or the file size. */
static uint64_t rec_resync(struct scan *sc, uint64_t off, uint64_t after, uint32_t max_len,
                           struct entry *out)
{
    static const uint32_t magic = REC_MAGIC;
    uint64_t c = off + 1;

    while (c + REC_HDR <= sc->size) {
        size_t avail = sc->size - c < SCAN_WINDOW ? (size_t)(sc->size - c) : SCAN_WINDOW;
        const uint8_t *p = scan_at(sc, c, avail), *hit;

        if (!p)
            break;
        hit = memmem(p, avail, &magic, 4);
        if (!hit) {
            c += avail - 3; /* a magic may straddle the window's end */
            continue;
        }
        c += (uint64_t)(hit - p);
        if (rec_check(sc, c, after, max_len, out))
            return c;
        c++;
    }
    return sc->size;
}

/* Remember that the damage right before seq is counted; the lowest (oldest)
 * spot makes room. Returns false when it was remembered already. */
static bool damage_remember(struct spool *s, uint64_t seq)
{
    size_t low = 0;

    for (size_t i = 0; i < COUNTED; i++) {
        if (s->m.counted[i] == seq)
            return false;
        if (s->m.counted[i] < s->m.counted[low])
            low = i;
    }
    s->m.counted[low] = seq;
    return true;
}

/* Count the damage found right before seq at open, unless it lies among acked
 * records or an earlier open counted it. */
static void damage_attribute(struct spool *s, struct scan_state *st, uint64_t seq)
{
    if (st->count && (st->records || st->bytes) && seq > spool_gone(s) && damage_remember(s, seq)) {
        s->m.corrupt_records += st->records;
        s->m.corrupt_bytes += st->bytes;
    }
    st->records = st->bytes = 0;
}

/* Index the valid records of g. Damage is the seq gap to the next valid
 * record in the same segment, or 1 record when the segment ends in it.
 * *end is the end of the last valid record. */
static int seg_scan(struct spool *s, struct segment *g, struct scan *sc, struct scan_state *st,
                    uint64_t *end)
{
    uint64_t off = 0, base = max64(max64(st->prev, g->first_seq - 1), spool_gone(s));
    struct entry e;

    *end = 0;
    while (off < sc->size) {
        if (!rec_check(sc, off, st->prev, s->o.max_record_bytes, &e)) {
            uint64_t next = rec_resync(sc, off, st->prev, s->o.max_record_bytes, &e);
            st->bytes += next - off;
            if (sc->err == -ENOMEM)
                return sc->err;
            if (next == sc->size) {
                st->records++;
                break;
            }
        }
        if (sc->err == -ENOMEM)
            return sc->err;
        if (e.seq > base + 1)
            st->records += e.seq - base - 1;
        damage_attribute(s, st, e.seq);
        if (entry_reserve(g))
            return -ENOMEM;
        g->e[g->n++] = e;
        st->prev = e.seq;
        base = max64(e.seq, spool_gone(s));
        off = *end = e.off + REC_HDR + e.len;
    }
    return 0;
}

/* Scan segment i; truncate a damaged tail when it is the newest of the epoch. */
static int seg_load(struct spool *s, size_t i, bool newest, struct scan *sc, struct scan_state *st)
{
    struct segment *g = &s->seg[i];
    char name[SEG_NAME_LEN + 1];
    struct stat sb;
    uint64_t end = 0;
    int err;

    seg_name(name, g);
    sc->fd = openat(s->dirfd, name, O_RDWR | O_CLOEXEC);
    if (sc->fd < 0)
        return 0; /* unreadable: no records, deleted if we may */
    if (fstat(sc->fd, &sb)) {
        err = neg_errno();
    } else {
        sc->size = g->size = (uint64_t)sb.st_size;
        sc->start = sc->len = 0;
        sc->err = 0;
        err = seg_scan(s, g, sc, st, &end);
    }
    if (!err && !sc->err && newest && g->n && end < g->size && !ftruncate(sc->fd, (off_t)end))
        g->size = end;
    close(sc->fd);
    return err;
}

static int seg_cmp(const void *a, const void *b)
{
    const struct segment *x = a, *y = b;

    if (x->first_seq != y->first_seq)
        return x->first_seq < y->first_seq ? -1 : 1;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

/* Every segment file of the directory, sorted by first seq. */
static int seg_list(struct spool *s)
{
    int fd = dup(s->dirfd), err = 0;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;

    if (!d) {
        err = neg_errno();
        if (fd >= 0)
            close(fd);
        return err;
    }
    rewinddir(d);
    while (!err && (de = readdir(d))) {
        uint64_t epoch, first;
        struct stat sb;
        if (seg_parse(de->d_name, &epoch, &first) &&
            !fstatat(s->dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) && S_ISREG(sb.st_mode))
            err = seg_push(s, epoch, first);
    }
    closedir(d);
    if (s->nseg)
        qsort(s->seg, s->nseg, sizeof(*s->seg), seg_cmp);
    return err;
}

/* Scan every segment, then delete the ones of another epoch (counted as
 * dropped), without valid records, or fully acked or dropped. */
static int seg_load_all(struct spool *s, struct scan_state *st)
{
    struct scan sc = {0};
    size_t newest = SIZE_MAX;
    int err = 0;

    for (size_t i = 0; i < s->nseg; i++)
        if (s->seg[i].epoch == s->m.epoch)
            newest = i;
    for (size_t i = 0; i < s->nseg && !err; i++) {
        struct segment *g = &s->seg[i];
        struct scan_state other = {0};
        bool own = g->epoch == s->m.epoch;

        err = seg_load(s, i, i == newest, &sc, own ? st : &other);
        for (size_t k = 0; !own && k < g->n; k++) {
            s->m.dropped_records++;
            s->m.dropped_bytes += g->e[k].len;
        }
        g->dead = !own || !g->n || seg_last(g) <= spool_gone(s);
    }
    free(sc.buf);
    for (size_t i = s->nseg; !err && i-- > 0;)
        if (s->seg[i].dead)
            seg_remove(s, i);
    return err;
}

/* Meta, segments and acks: fix the identity, index the records. */
static int spool_recover(struct spool *s)
{
    struct scan_state st = {.count = true};
    int err;
    bool have_meta = meta_read(s) == 0;

    if (!have_meta)
        memset(&s->m, 0, sizeof(s->m));
    unlinkat(s->dirfd, "meta.tmp", 0);
    err = seg_list(s);
    if (err)
        return err;
    for (size_t i = 0; !have_meta && i < s->nseg; i++)
        s->m.epoch = max64(s->m.epoch, s->seg[i].epoch); /* meta lost: keep the records' */
    if (!s->m.epoch)
        s->m.epoch = max64(clock_real_ns(), 1);
    s->m.acked = max64(s->m.acked, ack_read(s));
    err = seg_load_all(s, &st);
    if (err)
        return err;
    s->next_seq = max64(max64(st.prev, s->m.seq_reserved), spool_gone(s)) + 1;
    damage_attribute(s, &st, s->next_seq); /* a torn tail: before the next seq */
    s->m.seq_reserved = s->next_seq + SEQ_RESERVE - 1;
    return meta_write(s);
}

static int mkdir_p(const char *dir)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(path))
        return n ? -ENAMETOOLONG : -EINVAL;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        char c = path[i];
        if (c != '/' && c != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0700) && errno != EEXIST)
            return neg_errno();
        path[i] = c;
    }
    return 0;
}

static int dir_open(struct spool *s, const char *dir)
{
    int err = mkdir_p(dir);

    if (err)
        return err;
    s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0)
        return neg_errno();
    s->lockfd = openat(s->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lockfd < 0)
        return neg_errno();
    if (flock(s->lockfd, LOCK_EX | LOCK_NB))
        return errno == EWOULDBLOCK ? -EBUSY : neg_errno();
    s->ackfd = openat(s->dirfd, "ack", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    return s->ackfd < 0 ? neg_errno() : 0;
}

static int options_apply(struct spool_options *o, const struct spool_options *in)
{
    if (in)
        *o = *in;
    if ((unsigned)o->fsync > SPOOL_FSYNC_ALWAYS)
        return -EINVAL;
    if (!o->cap_bytes)
        o->cap_bytes = SPOOL_DEFAULT_CAP;
    if (!o->segment_bytes)
        o->segment_bytes = SPOOL_DEFAULT_SEGMENT;
    if (o->segment_bytes > o->cap_bytes / 4)
        o->segment_bytes = max64(o->cap_bytes / 4, 1);
    if (!o->fsync_interval_ns)
        o->fsync_interval_ns = SPOOL_DEFAULT_FSYNC_INTERVAL_NS;
    if (!o->max_record_bytes)
        o->max_record_bytes = SPOOL_DEFAULT_MAX_RECORD;
    return 0;
}

static void spool_free(struct spool *s)
{
    int fds[] = {s->fd, s->rfd, s->ackfd, s->lockfd, s->dirfd};

    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    for (size_t i = 0; i < s->nseg; i++)
        free(s->seg[i].e);
    free(s->seg);
    free(s->buf);
    free(s);
}

/* Tell o.on_loss what the epoch's loss counters grew by since it was last
 * told (at open: everything counted so far in this epoch). */
static void spool_report_losses(struct spool *s)
{
    if (!s->o.on_loss)
        return;
    if (s->m.dropped_records > s->reported_cap)
        s->o.on_loss(s->o.on_loss_ctx, SPOOL_LOSS_CAP, s->m.dropped_records - s->reported_cap);
    if (s->m.corrupt_records > s->reported_corrupt)
        s->o.on_loss(s->o.on_loss_ctx, SPOOL_LOSS_CORRUPT,
                     s->m.corrupt_records - s->reported_corrupt);
    s->reported_cap = s->m.dropped_records;
    s->reported_corrupt = s->m.corrupt_records;
}

int spool_open(const char *dir, const struct spool_options *opts, struct spool **out)
{
    struct spool *s = calloc(1, sizeof(*s));
    int err;

    *out = NULL;
    if (!s)
        return -ENOMEM;
    s->dirfd = s->lockfd = s->ackfd = s->fd = s->rfd = -1;
    err = options_apply(&s->o, opts);
    if (!err)
        err = dir_open(s, dir);
    if (!err)
        err = spool_recover(s);
    if (err) {
        spool_free(s);
        return err;
    }
    s->ready = true;
    s->synced_ns = clock_mono_ns();
    spool_report_losses(s);
    *out = s;
    return 0;
}

static void seg_sync(struct spool *s)
{
    if (s->fd < 0 || !s->unsynced)
        return;
    s->fsyncs++;
    if (fdatasync(s->fd))
        s->fsync_errors++;
    s->unsynced = false;
    s->synced_ns = clock_mono_ns();
}

/* Close the open segment; delete it when everything in it is acked. */
static void seg_close(struct spool *s)
{
    if (s->fd < 0)
        return;
    seg_sync(s);
    close(s->fd);
    s->fd = -1;
    if (seg_last(&s->seg[s->nseg - 1]) <= s->m.acked)
        seg_remove(s, s->nseg - 1);
}

static int seg_create(struct spool *s)
{
    char name[SEG_NAME_LEN + 1];
    int err = seg_push(s, s->m.epoch, s->next_seq);

    if (err)
        return err;
    seg_name(name, &s->seg[s->nseg - 1]);
    s->fd = openat(s->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s->fd < 0 && errno == EEXIST && !unlinkat(s->dirfd, name, 0)) /* an unindexed leftover */
        s->fd = openat(s->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s->fd < 0) {
        err = neg_errno();
        s->nseg--;
        return err;
    }
    dir_sync(s); /* the file must outlive a crash along with its records */
    return 0;
}

void spool_close(struct spool *s)
{
    if (!s)
        return;
    if (s->ready) {
        seg_close(s);
        if (!s->fsync_errors) /* everything reached the disk: release the reservation */
            s->m.seq_reserved = s->next_seq - 1;
        meta_write(s);
    }
    spool_free(s);
}

uint64_t spool_epoch(const struct spool *s)
{
    return s->m.epoch;
}

uint64_t spool_next_seq(const struct spool *s)
{
    return s->next_seq;
}

uint64_t spool_acked_seq(const struct spool *s)
{
    return s->m.acked;
}

bool spool_has_unacked(const struct spool *s)
{
    /* seqs ascend across segments: the newest valid record decides */
    for (size_t i = s->nseg; i-- > 0;)
        if (s->seg[i].n)
            return seg_last(&s->seg[i]) > s->m.acked;
    return false;
}

static uint64_t spool_bytes(const struct spool *s)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < s->nseg; i++)
        bytes += s->seg[i].size;
    return bytes;
}

/* Delete whole oldest segments until need more bytes fit under the cap. The
 * counters reach meta before the file goes. */
static void cap_make_room(struct spool *s, uint64_t need)
{
    while (s->nseg && spool_bytes(s) + need > s->o.cap_bytes) {
        struct segment *g = &s->seg[0];
        for (size_t i = entry_after(g, spool_gone(s)); i < g->n; i++) {
            s->m.dropped_records++;
            s->m.dropped_bytes += g->e[i].len;
        }
        s->m.dropped_through = max64(s->m.dropped_through, seg_last(g));
        meta_write(s); /* on failure meta_dirty: spool_tick retries */
        seg_remove(s, 0);
    }
    spool_report_losses(s);
}

/* Write the record at the end of the open segment. On failure cut the file
 * back; when even that fails, close the segment (the next open counts the
 * torn record). */
static int rec_write(struct spool *s, struct segment *g, const void *data, size_t len)
{
    uint8_t h[REC_HDR];
    uint32_t magic = REC_MAGIC, len32 = (uint32_t)len, crc;
    struct iovec io[2] = {{h, REC_HDR}, {(void *)data, len}};
    struct stat sb;
    int err;

    memcpy(h, &magic, 4);
    memcpy(h + 4, &len32, 4);
    memcpy(h + 8, &s->next_seq, 8);
    crc = rec_crc(h, data, len32);
    memcpy(h + 16, &crc, 4);
    err = write_full_at(s->fd, io, 2, g->size);
    if (err && ftruncate(s->fd, (off_t)g->size)) {
        if (!fstat(s->fd, &sb))
            g->size = (uint64_t)sb.st_size;
        seg_close(s);
    }
    return err;
}

int spool_append(struct spool *s, const void *data, size_t len, uint64_t *seq)
{
    uint64_t need = REC_HDR + (uint64_t)len;
    struct segment *g;
    int err;

    if (len > s->o.max_record_bytes || need > s->o.cap_bytes)
        return -EMSGSIZE;
    cap_make_room(s, need);
    if (s->next_seq > s->m.seq_reserved) {
        uint64_t old = s->m.seq_reserved;
        s->m.seq_reserved = s->next_seq + SEQ_RESERVE - 1;
        err = meta_write(s);
        if (err) {
            s->m.seq_reserved = old;
            return err;
        }
    }
    if (s->fd < 0 && (err = seg_create(s)))
        return err;
    g = &s->seg[s->nseg - 1];
    err = entry_reserve(g);
    if (!err)
        err = rec_write(s, g, data, len);
    if (err)
        return err;
    g->e[g->n++] = (struct entry){.seq = s->next_seq, .off = g->size, .len = (uint32_t)len};
    g->size += need;
    if (seq)
        *seq = s->next_seq;
    s->next_seq++;
    s->appended++;
    s->unsynced = true;
    if (s->o.fsync == SPOOL_FSYNC_ALWAYS ||
        (s->o.fsync == SPOOL_FSYNC_INTERVAL &&
         clock_mono_ns() - s->synced_ns >= s->o.fsync_interval_ns))
        seg_sync(s);
    if (g->size >= s->o.segment_bytes)
        seg_close(s);
    return 0;
}

int spool_ack(struct spool *s, uint64_t seq)
{
    if (seq >= s->next_seq)
        return -ERANGE;
    if (seq <= s->m.acked)
        return 0;
    for (size_t i = 0; i < s->nseg && s->seg[i].first_seq <= seq; i++) {
        const struct segment *g = &s->seg[i];
        s->acked += entry_after(g, seq) - entry_after(g, s->m.acked);
    }
    s->m.acked = seq;
    while (s->nseg && !(s->fd >= 0 && s->nseg == 1) && seg_last(&s->seg[0]) <= seq)
        seg_remove(s, 0);
    /* A fully acked open segment of some size goes too (the next append opens
     * a new one), so an agent that keeps up holds ~nothing on disk. */
    if (s->fd >= 0 && s->nseg && seg_last(&s->seg[s->nseg - 1]) <= seq &&
        s->seg[s->nseg - 1].size >= SPOOL_ROTATE_ACKED_BYTES)
        seg_close(s);
    return ack_write(s);
}

static int seg_read_fd(struct spool *s, const struct segment *g)
{
    char name[SEG_NAME_LEN + 1];

    if (g == &s->seg[s->nseg - 1] && s->fd >= 0)
        return s->fd;
    if (s->rfd >= 0 && s->rfd_seq == g->first_seq)
        return s->rfd;
    if (s->rfd >= 0)
        close(s->rfd);
    seg_name(name, g);
    s->rfd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
    s->rfd_seq = g->first_seq;
    return s->rfd >= 0 ? s->rfd : neg_errno();
}

/* Records [ei, end) of segment gi were valid at open and no longer are:
 * count them, remember the spot (the next valid seq) so the next open does
 * not count them again, forget them. meta follows at the next spool_tick. */
static void rec_damaged(struct spool *s, size_t gi, size_t ei, size_t end)
{
    struct segment *g = &s->seg[gi];
    uint64_t next = s->next_seq;

    if (end < g->n)
        next = g->e[end].seq;
    else
        for (size_t i = gi + 1; i < s->nseg && next == s->next_seq; i++)
            if (s->seg[i].n)
                next = s->seg[i].e[0].seq;
    for (size_t i = ei; i < end; i++) {
        s->m.corrupt_records++;
        s->m.corrupt_bytes += REC_HDR + g->e[i].len;
    }
    damage_remember(s, next);
    memmove(g->e + ei, g->e + end, (g->n - end) * sizeof(*g->e));
    g->n -= end - ei;
    s->meta_dirty = true;
    spool_report_losses(s);
}

/* Read and check record ei of segment gi into s->buf. Returns 0, -EBADMSG
 * when it is damaged (counted and forgotten), or -errno. */
static int rec_load(struct spool *s, size_t gi, size_t ei)
{
    const struct segment *g = &s->seg[gi];
    struct entry e = g->e[ei];
    size_t n = REC_HDR + (size_t)e.len;
    uint32_t magic, len, crc;
    uint64_t seq;
    int fd = seg_read_fd(s, g);
    ssize_t r;

    if (n > s->bufcap) {
        uint8_t *tmp = realloc(s->buf, n);
        if (!tmp)
            return -ENOMEM;
        s->buf = tmp;
        s->bufcap = n;
    }
    if (fd == -ENOENT) { /* the file is gone: so is the rest of it */
        rec_damaged(s, gi, ei, g->n);
        return -EBADMSG;
    }
    r = fd >= 0 ? read_full_at(fd, s->buf, n, e.off) : fd;
    if (r < 0 && r != -EIO)
        return (int)r;
    if (r == (ssize_t)n) {
        memcpy(&magic, s->buf, 4);
        memcpy(&len, s->buf + 4, 4);
        memcpy(&seq, s->buf + 8, 8);
        memcpy(&crc, s->buf + 16, 4);
        if (magic == REC_MAGIC && len == e.len && seq == e.seq &&
            crc == rec_crc(s->buf, s->buf + REC_HDR, len))
            return 0;
    }
    rec_damaged(s, gi, ei, ei + 1);
    return -EBADMSG;
}

int spool_read(struct spool *s, uint64_t after_seq, uint64_t *seq, const void **data, size_t *len)
{
    uint64_t after = max64(after_seq, s->m.acked);

    for (;;) {
        size_t gi = 0, ei;
        int err;

        while (gi < s->nseg && seg_last(&s->seg[gi]) <= after)
            gi++;
        if (gi == s->nseg)
            return 0;
        ei = entry_after(&s->seg[gi], after);
        err = rec_load(s, gi, ei);
        if (err == -EBADMSG)
            continue;
        if (err)
            return err;
        *seq = s->seg[gi].e[ei].seq;
        *data = s->buf + REC_HDR;
        *len = s->seg[gi].e[ei].len;
        return 1;
    }
}

int spool_tick(struct spool *s, uint64_t now_ns)
{
    if (s->o.fsync == SPOOL_FSYNC_INTERVAL && s->unsynced &&
        now_ns - s->synced_ns >= s->o.fsync_interval_ns)
        seg_sync(s);
    return s->meta_dirty ? meta_write(s) : 0;
}

uint64_t spool_next_ns(const struct spool *s, uint64_t now_ns)
{
    uint64_t next = UINT64_MAX;

    if (s->o.fsync == SPOOL_FSYNC_INTERVAL && s->unsynced && s->fd >= 0)
        next = s->synced_ns + s->o.fsync_interval_ns;
    if (s->meta_dirty && now_ns + SPOOL_META_RETRY_NS < next)
        next = now_ns + SPOOL_META_RETRY_NS;
    return next;
}

void spool_stats(const struct spool *s, struct spool_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->epoch = s->m.epoch;
    st->next_seq = s->next_seq;
    st->acked_seq = s->m.acked;
    st->bytes = spool_bytes(s);
    st->segments = s->nseg;
    for (size_t i = 0; i < s->nseg; i++)
        st->records += s->seg[i].n - entry_after(&s->seg[i], s->m.acked);
    st->dropped_records = s->m.dropped_records;
    st->dropped_bytes = s->m.dropped_bytes;
    st->corrupt_records = s->m.corrupt_records;
    st->corrupt_bytes = s->m.corrupt_bytes;
    st->appended = s->appended;
    st->acked = s->acked;
    st->fsyncs = s->fsyncs;
    st->fsync_errors = s->fsync_errors;
}
