/* The agent's on-disk spool: segment files of checksummed records, a meta file
 * for identity and counters, an ack file for the watermark. spool.h
 * describes the format and the guarantees; this file keeps an index of every
 * valid record in memory (24 bytes per record: 1.5 MiB for 1 GiB of 16 KiB
 * batches) so replay, acks and drop counting never re-read the disk. Here:
 * open, append, cap, ack, read and the files they write. spool_recover.c
 * builds the index from what spool_open finds on disk, and spool_format.c
 * holds the format and the index both work on. */
#include "agent/delivery/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/delivery/spool_format.h"
#include "agent/delivery/spool_recover.h"
#include "common/clock.h"
#include "common/daemon.h"

/* An open segment this large that is fully acked is closed and deleted. */
#define SPOOL_ROTATE_ACKED_BYTES (256u << 10)
#define SPOOL_META_RETRY_NS (100 * NSEC_PER_MSEC) /* a failed meta write is retried this often */

struct spool {
    struct spool_options o;
    struct spool_meta m;
    uint64_t next_seq;
    int dirfd, lockfd, ackfd;
    int fd;  /* the open segment (always the last one), or -1 */
    int rfd; /* cached read fd of the segment starting at rfd_seq */
    uint64_t rfd_seq;
    struct spool_index ix; /* every segment, oldest first */
    uint64_t ack_gen, synced_ns;
    bool ready, unsynced, meta_dirty;
    uint8_t *buf; /* spool_read's record buffer */
    size_t bufcap;
    uint64_t appended, acked, fsyncs, fsync_errors;
    uint64_t reported_cap, reported_corrupt;  /* losses told to o.on_loss */
    uint64_t delivered;                       /* spool_set_delivered's watermark */
    uint64_t behind_records, reported_behind; /* cap deletions at or below it */
};

/* First index in g with seq > after (g->n when none). */
static size_t entry_after(const struct spool_segment *g, uint64_t after)
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
            return w < 0 ? spool_neg_errno() : -ENOSPC;
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

static int dir_sync(struct spool *s)
{
    int err = fsync(s->dirfd) ? spool_neg_errno() : 0;

    s->fsyncs++;
    s->fsync_errors += err != 0;
    return err;
}

/* Replace meta with s->m (spool_format_meta_write). A failure leaves
 * meta_dirty set so that spool_tick tries again. Returns 0 or -errno. */
static int spool_meta_write(struct spool *s)
{
    int err = spool_format_meta_write(s->dirfd, &s->m, &s->fsyncs, &s->fsync_errors);

    s->meta_dirty = err != 0;
    return err;
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

/* Forget segment i (closing the fds on it) and delete its file. */
static void spool_seg_remove(struct spool *s, size_t i)
{
    const struct spool_segment *g = &s->ix.seg[i];

    if (s->rfd >= 0 && s->rfd_seq == g->first_seq) {
        close(s->rfd);
        s->rfd = -1;
    }
    if (i == s->ix.nseg - 1 && s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
        s->unsynced = false;
    }
    spool_index_delete(&s->ix, s->dirfd, i);
}

static int dir_open(struct spool *s, const char *dir)
{
    int err = daemon_mkdir_p(dir, 0700);

    if (err)
        return err;
    s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0)
        return spool_neg_errno();
    s->lockfd = openat(s->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lockfd < 0)
        return spool_neg_errno();
    if (flock(s->lockfd, LOCK_EX | LOCK_NB))
        return errno == EWOULDBLOCK ? -EBUSY : spool_neg_errno();
    s->ackfd = openat(s->dirfd, "ack", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    return s->ackfd < 0 ? spool_neg_errno() : 0;
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
        o->segment_bytes = spool_max64(o->cap_bytes / 4, 1);
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
    spool_index_free(&s->ix);
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
    if (s->behind_records > s->reported_behind)
        s->o.on_loss(s->o.on_loss_ctx, SPOOL_LOSS_BEHIND, s->behind_records - s->reported_behind);
    s->reported_behind = s->behind_records;
    s->reported_cap = s->m.dropped_records;
    s->reported_corrupt = s->m.corrupt_records;
}

/* Take what spool_recover finds in the directory, then write meta. */
static int spool_open_recover(struct spool *s)
{
    struct spool_found found = {0};
    int err = spool_recover(s->dirfd, s->ackfd, s->o.max_record_bytes, &found);

    s->m = found.meta;
    s->ix = found.index;
    s->ack_gen = found.ack_gen;
    s->next_seq = found.next_seq;
    return err ? err : spool_meta_write(s);
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
        err = spool_open_recover(s);
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
    if (spool_segment_last(&s->ix.seg[s->ix.nseg - 1]) <= s->m.acked)
        spool_seg_remove(s, s->ix.nseg - 1);
}

static int seg_create(struct spool *s)
{
    char name[SEG_NAME_LEN + 1];
    int err = spool_index_push(&s->ix, s->m.epoch, s->next_seq);

    if (err)
        return err;
    spool_segment_name(name, &s->ix.seg[s->ix.nseg - 1]);
    s->fd = openat(s->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s->fd < 0 && errno == EEXIST && !unlinkat(s->dirfd, name, 0)) /* an unindexed leftover */
        s->fd = openat(s->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s->fd < 0) {
        err = spool_neg_errno();
        s->ix.nseg--;
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
        spool_meta_write(s);
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

void spool_set_delivered(struct spool *s, uint64_t seq)
{
    s->delivered = seq;
}

int spool_peek(const struct spool *s, uint64_t after_seq, uint64_t *seq)
{
    uint64_t after = spool_max64(after_seq, s->m.acked);

    for (size_t i = 0; i < s->ix.nseg; i++) {
        const struct spool_segment *g = &s->ix.seg[i];
        size_t e;

        if (!g->n || spool_segment_last(g) <= after)
            continue;
        e = entry_after(g, after);
        *seq = g->e[e].seq;
        return 1;
    }
    return 0;
}

uint64_t spool_count(const struct spool *s, uint64_t after_seq, uint64_t below_seq)
{
    uint64_t after = spool_max64(after_seq, s->m.acked), n = 0;

    for (size_t i = 0; i < s->ix.nseg; i++) {
        const struct spool_segment *g = &s->ix.seg[i];
        size_t lo, hi;

        if (!g->n || spool_segment_last(g) <= after || g->e[0].seq >= below_seq)
            continue;
        lo = entry_after(g, after);
        hi = below_seq ? entry_after(g, below_seq - 1) : 0;
        n += hi > lo ? hi - lo : 0;
    }
    return n;
}

bool spool_has_unacked(const struct spool *s)
{
    /* seqs ascend across segments: the newest valid record decides */
    for (size_t i = s->ix.nseg; i-- > 0;)
        if (s->ix.seg[i].n)
            return spool_segment_last(&s->ix.seg[i]) > s->m.acked;
    return false;
}

static uint64_t spool_bytes(const struct spool *s)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < s->ix.nseg; i++)
        bytes += s->ix.seg[i].size;
    return bytes;
}

/* Delete whole oldest segments until need more bytes fit under the cap. The
 * counters reach meta before the file goes. */
static void cap_make_room(struct spool *s, uint64_t need)
{
    while (s->ix.nseg && spool_bytes(s) + need > s->o.cap_bytes) {
        struct spool_segment *g = &s->ix.seg[0];
        for (size_t i = entry_after(g, spool_meta_gone(&s->m)); i < g->n; i++) {
            if (g->e[i].seq <= s->delivered) { /* a collector has it: no loss */
                s->behind_records++;
                continue;
            }
            s->m.dropped_records++;
            s->m.dropped_bytes += g->e[i].len;
        }
        s->m.dropped_through = spool_max64(s->m.dropped_through, spool_segment_last(g));
        spool_meta_write(s); /* on failure meta_dirty: spool_tick retries */
        spool_seg_remove(s, 0);
    }
    spool_report_losses(s);
}

/* Write the record at the end of the open segment. On failure cut the file
 * back; when even that fails, close the segment (the next open counts the
 * torn record). */
static int rec_write(struct spool *s, struct spool_segment *g, const void *data, size_t len)
{
    uint8_t h[REC_HDR];
    uint32_t magic = REC_MAGIC, len32 = (uint32_t)len, crc;
    struct iovec io[2] = {{h, REC_HDR}, {(void *)data, len}};
    struct stat sb;
    int err;

    memcpy(h, &magic, 4);
    memcpy(h + 4, &len32, 4);
    memcpy(h + 8, &s->next_seq, 8);
    crc = spool_record_crc(h, data, len32);
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
    struct spool_segment *g;
    int err;

    if (len > s->o.max_record_bytes || need > s->o.cap_bytes)
        return -EMSGSIZE;
    cap_make_room(s, need);
    if (s->next_seq > s->m.seq_reserved) {
        uint64_t old = s->m.seq_reserved;
        s->m.seq_reserved = s->next_seq + SEQ_RESERVE - 1;
        err = spool_meta_write(s);
        if (err) {
            s->m.seq_reserved = old;
            return err;
        }
    }
    if (s->fd < 0 && (err = seg_create(s)))
        return err;
    g = &s->ix.seg[s->ix.nseg - 1];
    err = spool_index_reserve(g);
    if (!err)
        err = rec_write(s, g, data, len);
    if (err)
        return err;
    g->e[g->n++] = (struct spool_entry){.seq = s->next_seq, .off = g->size, .len = (uint32_t)len};
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
    for (size_t i = 0; i < s->ix.nseg && s->ix.seg[i].first_seq <= seq; i++) {
        const struct spool_segment *g = &s->ix.seg[i];
        s->acked += entry_after(g, seq) - entry_after(g, s->m.acked);
    }
    s->m.acked = seq;
    while (s->ix.nseg && !(s->fd >= 0 && s->ix.nseg == 1) &&
           spool_segment_last(&s->ix.seg[0]) <= seq)
        spool_seg_remove(s, 0);
    /* A fully acked open segment of some size goes too (the next append opens
     * a new one), so an agent that keeps up holds ~nothing on disk. */
    if (s->fd >= 0 && s->ix.nseg && spool_segment_last(&s->ix.seg[s->ix.nseg - 1]) <= seq &&
        s->ix.seg[s->ix.nseg - 1].size >= SPOOL_ROTATE_ACKED_BYTES)
        seg_close(s);
    return ack_write(s);
}

static int seg_read_fd(struct spool *s, const struct spool_segment *g)
{
    char name[SEG_NAME_LEN + 1];

    if (g == &s->ix.seg[s->ix.nseg - 1] && s->fd >= 0)
        return s->fd;
    if (s->rfd >= 0 && s->rfd_seq == g->first_seq)
        return s->rfd;
    if (s->rfd >= 0)
        close(s->rfd);
    spool_segment_name(name, g);
    s->rfd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
    s->rfd_seq = g->first_seq;
    return s->rfd >= 0 ? s->rfd : spool_neg_errno();
}

/* Records [ei, end) of segment gi were valid at open and no longer are:
 * count them, remember the spot (the next valid seq) so the next open does
 * not count them again, forget them. meta follows at the next spool_tick. */
static void rec_damaged(struct spool *s, size_t gi, size_t ei, size_t end)
{
    struct spool_segment *g = &s->ix.seg[gi];
    uint64_t next = s->next_seq;

    if (end < g->n)
        next = g->e[end].seq;
    else
        for (size_t i = gi + 1; i < s->ix.nseg && next == s->next_seq; i++)
            if (s->ix.seg[i].n)
                next = s->ix.seg[i].e[0].seq;
    for (size_t i = ei; i < end; i++) {
        s->m.corrupt_records++;
        s->m.corrupt_bytes += REC_HDR + g->e[i].len;
    }
    spool_format_damage_remember(&s->m, next);
    memmove(g->e + ei, g->e + end, (g->n - end) * sizeof(*g->e));
    g->n -= end - ei;
    s->meta_dirty = true;
    spool_report_losses(s);
}

/* Read and check record ei of segment gi into s->buf. Returns 0, -EBADMSG
 * when it is damaged (counted and forgotten), or -errno. */
static int rec_load(struct spool *s, size_t gi, size_t ei)
{
    const struct spool_segment *g = &s->ix.seg[gi];
    struct spool_entry e = g->e[ei];
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
    r = fd >= 0 ? spool_format_pread(fd, s->buf, n, e.off) : fd;
    if (r < 0 && r != -EIO)
        return (int)r;
    if (r == (ssize_t)n) {
        memcpy(&magic, s->buf, 4);
        memcpy(&len, s->buf + 4, 4);
        memcpy(&seq, s->buf + 8, 8);
        memcpy(&crc, s->buf + 16, 4);
        if (magic == REC_MAGIC && len == e.len && seq == e.seq &&
            crc == spool_record_crc(s->buf, s->buf + REC_HDR, len))
            return 0;
    }
    rec_damaged(s, gi, ei, ei + 1);
    return -EBADMSG;
}

int spool_read(struct spool *s, uint64_t after_seq, uint64_t *seq, const void **data, size_t *len)
{
    uint64_t after = spool_max64(after_seq, s->m.acked);

    for (;;) {
        size_t gi = 0, ei;
        int err;

        while (gi < s->ix.nseg && spool_segment_last(&s->ix.seg[gi]) <= after)
            gi++;
        if (gi == s->ix.nseg)
            return 0;
        ei = entry_after(&s->ix.seg[gi], after);
        err = rec_load(s, gi, ei);
        if (err == -EBADMSG)
            continue;
        if (err)
            return err;
        *seq = s->ix.seg[gi].e[ei].seq;
        *data = s->buf + REC_HDR;
        *len = s->ix.seg[gi].e[ei].len;
        return 1;
    }
}

int spool_tick(struct spool *s, uint64_t now_ns)
{
    if (s->o.fsync == SPOOL_FSYNC_INTERVAL && s->unsynced &&
        now_ns - s->synced_ns >= s->o.fsync_interval_ns)
        seg_sync(s);
    return s->meta_dirty ? spool_meta_write(s) : 0;
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
    st->segments = s->ix.nseg;
    for (size_t i = 0; i < s->ix.nseg; i++)
        st->records += s->ix.seg[i].n - entry_after(&s->ix.seg[i], s->m.acked);
    st->dropped_records = s->m.dropped_records;
    st->dropped_bytes = s->m.dropped_bytes;
    st->corrupt_records = s->m.corrupt_records;
    st->corrupt_bytes = s->m.corrupt_bytes;
    st->behind_records = s->behind_records;
    st->appended = s->appended;
    st->acked = s->acked;
    st->fsyncs = s->fsyncs;
    st->fsync_errors = s->fsync_errors;
}
