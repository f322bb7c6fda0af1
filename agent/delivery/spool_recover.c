/* What spool_open finds on disk (spool.h: Identity, Corruption): the meta
 * file and the ack slots, every segment file scanned record by record, a
 * resync past damage to the next valid record, the damage attributed to the
 * seq after it (once, remembered in meta), segments of another epoch
 * counted as dropped, and the index of every valid record that spool.c
 * serves replay from. */
#include "agent/delivery/spool_recover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/delivery/spool_format.h"
#include "common/clock.h"

#define SCAN_WINDOW (1u << 20)

/* The spool being recovered: its directory, its ack file, and what is found. */
struct recover {
    int dirfd, ackfd;
    uint32_t max_record_bytes;
    struct spool_found *f;
};

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

/* The highest watermark of this epoch in a valid ack slot, 0 when none. */
static uint64_t ack_read(struct recover *s)
{
    uint64_t best = 0;

    for (int i = 0; i < 2; i++) {
        uint8_t b[ACK_SLOT];
        uint32_t magic, crc;
        uint64_t v[3];

        if (spool_format_pread(s->ackfd, b, sizeof(b), (uint64_t)i * ACK_STRIDE) != ACK_SLOT)
            continue;
        memcpy(&magic, b, 4);
        memcpy(&crc, b + 4, 4);
        memcpy(v, b + 8, sizeof(v));
        if (magic != ACK_MAGIC || crc != crc32c(0, b + 8, sizeof(v)))
            continue;
        s->f->ack_gen = spool_max64(s->f->ack_gen, v[0]);
        if (v[1] == s->f->meta.epoch)
            best = spool_max64(best, v[2]);
    }
    return best;
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
    r = spool_format_pread(sc->fd, sc->buf, want, off);
    sc->start = off;
    sc->len = r > 0 ? (size_t)r : 0;
    if (sc->len < n)
        sc->err = r < 0 ? (int)r : -EIO; /* the file shrank under us */
    return sc->len >= n ? sc->buf : NULL;
}

/* Is there a valid record at off with a seq above after? */
static bool rec_check(struct scan *sc, uint64_t off, uint64_t after, uint32_t max_len,
                      struct spool_entry *out)
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
    if (!p || spool_record_crc(p, p + REC_HDR, len) != crc)
        return false;
    *out = (struct spool_entry){.seq = seq, .off = off, .len = len};
    return true;
}

/* The offset of the next valid record after off (in *out), or the file size. */
static uint64_t rec_resync(struct scan *sc, uint64_t off, uint64_t after, uint32_t max_len,
                           struct spool_entry *out)
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

/* Count the damage found right before seq at open, unless it lies among acked
 * records or an earlier open counted it. */
static void damage_attribute(struct recover *s, struct scan_state *st, uint64_t seq)
{
    if (st->count && (st->records || st->bytes) && seq > spool_meta_gone(&s->f->meta) &&
        spool_format_damage_remember(&s->f->meta, seq)) {
        s->f->meta.corrupt_records += st->records;
        s->f->meta.corrupt_bytes += st->bytes;
    }
    st->records = st->bytes = 0;
}

/* Index the valid records of g. Damage is the seq gap to the next valid
 * record in the same segment, or 1 record when the segment ends in it.
 * *end is the end of the last valid record. */
static int seg_scan(struct recover *s, struct spool_segment *g, struct scan *sc,
                    struct scan_state *st, uint64_t *end)
{
    uint64_t off = 0, base = spool_max64(spool_max64(st->prev, g->first_seq - 1),
                                         spool_meta_gone(&s->f->meta));
    struct spool_entry e;

    *end = 0;
    while (off < sc->size) {
        if (!rec_check(sc, off, st->prev, s->max_record_bytes, &e)) {
            uint64_t next = rec_resync(sc, off, st->prev, s->max_record_bytes, &e);
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
        if (spool_index_reserve(g))
            return -ENOMEM;
        g->e[g->n++] = e;
        st->prev = e.seq;
        base = spool_max64(e.seq, spool_meta_gone(&s->f->meta));
        off = *end = e.off + REC_HDR + e.len;
    }
    return 0;
}

/* Scan segment i; truncate a damaged tail when it is the newest of the epoch. */
static int seg_load(struct recover *s, size_t i, bool newest, struct scan *sc,
                    struct scan_state *st)
{
    struct spool_segment *g = &s->f->index.seg[i];
    char name[SEG_NAME_LEN + 1];
    struct stat sb;
    uint64_t end = 0;
    int err;

    spool_segment_name(name, g);
    sc->fd = openat(s->dirfd, name, O_RDWR | O_CLOEXEC);
    if (sc->fd < 0)
        return 0; /* unreadable: no records, deleted if we may */
    if (fstat(sc->fd, &sb)) {
        err = spool_neg_errno();
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
    const struct spool_segment *x = a, *y = b;

    if (x->first_seq != y->first_seq)
        return x->first_seq < y->first_seq ? -1 : 1;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

/* Every segment file of the directory, sorted by first seq. */
static int seg_list(struct recover *s)
{
    int fd = dup(s->dirfd), err = 0;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;

    if (!d) {
        err = spool_neg_errno();
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
            err = spool_index_push(&s->f->index, epoch, first);
    }
    closedir(d);
    if (s->f->index.nseg)
        qsort(s->f->index.seg, s->f->index.nseg, sizeof(*s->f->index.seg), seg_cmp);
    return err;
}

/* Scan every segment, then delete the ones of another epoch (counted as
 * dropped), without valid records, or fully acked or dropped. */
static int seg_load_all(struct recover *s, struct scan_state *st)
{
    struct scan sc = {0};
    size_t newest = SIZE_MAX;
    int err = 0;

    for (size_t i = 0; i < s->f->index.nseg; i++)
        if (s->f->index.seg[i].epoch == s->f->meta.epoch)
            newest = i;
    for (size_t i = 0; i < s->f->index.nseg && !err; i++) {
        struct spool_segment *g = &s->f->index.seg[i];
        struct scan_state other = {0};
        bool own = g->epoch == s->f->meta.epoch;

        err = seg_load(s, i, i == newest, &sc, own ? st : &other);
        for (size_t k = 0; !own && k < g->n; k++) {
            s->f->meta.dropped_records++;
            s->f->meta.dropped_bytes += g->e[k].len;
        }
        g->dead = !own || !g->n || spool_segment_last(g) <= spool_meta_gone(&s->f->meta);
    }
    free(sc.buf);
    for (size_t i = s->f->index.nseg; !err && i-- > 0;)
        if (s->f->index.seg[i].dead)
            spool_index_delete(&s->f->index, s->dirfd, i);
    return err;
}

int spool_recover(int dirfd, int ackfd, uint32_t max_record_bytes, struct spool_found *out)
{
    struct recover rec = {
        .dirfd = dirfd, .ackfd = ackfd, .max_record_bytes = max_record_bytes, .f = out};
    struct recover *s = &rec;
    struct scan_state st = {.count = true};
    int err;
    bool have_meta = spool_format_meta_read(dirfd, &out->meta) == 0;

    if (!have_meta)
        memset(&out->meta, 0, sizeof(out->meta));
    unlinkat(dirfd, "meta.tmp", 0);
    err = seg_list(s);
    if (err)
        return err;
    for (size_t i = 0; !have_meta && i < out->index.nseg; i++)
        out->meta.epoch = spool_max64(out->meta.epoch,
                                      out->index.seg[i].epoch); /* meta lost: keep the records' */
    if (!out->meta.epoch)
        out->meta.epoch = spool_max64(clock_real_ns(), 1);
    out->meta.acked = spool_max64(out->meta.acked, ack_read(s));
    err = seg_load_all(s, &st);
    if (err)
        return err;
    out->next_seq =
        spool_max64(spool_max64(st.prev, out->meta.seq_reserved), spool_meta_gone(&out->meta)) + 1;
    damage_attribute(s, &st, out->next_seq); /* a torn tail: before the next seq */
    out->meta.seq_reserved = out->next_seq + SEQ_RESERVE - 1;
    return 0;
}
