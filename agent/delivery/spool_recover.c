/* What spool_open finds on disk (spool.h: Identity, Corruption): the meta
 * file and the ack slots, every segment file scanned record by record, a
 * resync past damage to the next valid record, the damage attributed to the
 * seq after it (once, remembered in meta), segments of another epoch
 * counted as dropped, and the index of every valid record that spool.c
 * serves replay from. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/delivery/spool_impl.h"
#include "common/clock.h"

#define SCAN_WINDOW (1u << 20)

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

static int meta_read(struct spool *s)
{
    uint8_t buf[META_SIZE + 1];
    uint32_t magic, version, crc;
    int fd = openat(s->dirfd, "meta", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return neg_errno();
    n = spool_pread(fd, buf, sizeof(buf), 0);
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

/* The highest watermark of this epoch in a valid ack slot, 0 when none. */
static uint64_t ack_read(struct spool *s)
{
    uint64_t best = 0;

    for (int i = 0; i < 2; i++) {
        uint8_t b[ACK_SLOT];
        uint32_t magic, crc;
        uint64_t v[3];

        if (spool_pread(s->ackfd, b, sizeof(b), (uint64_t)i * ACK_STRIDE) != ACK_SLOT)
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
    r = spool_pread(sc->fd, sc->buf, want, off);
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

bool spool_damage_remember(struct spool *s, uint64_t seq)
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
    if (st->count && (st->records || st->bytes) && seq > spool_gone(s) &&
        spool_damage_remember(s, seq)) {
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
        if (spool_entry_reserve(g))
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
            err = spool_seg_push(s, epoch, first);
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
            spool_seg_remove(s, i);
    return err;
}

int spool_recover(struct spool *s)
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
    return spool_meta_write(s);
}
