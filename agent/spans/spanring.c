#include "agent/spans/spanring.h"

#include <errno.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/varint.h"

struct spanring_chunk {
    struct spanring_chunk *next;
    uint64_t first_ns, end_ns; /* earliest start, latest start + duration */
    uint32_t nspans, crc;
    uint32_t coded; /* bytes of the coded columns, before LZ4 */
    size_t len;     /* compressed bytes in data */
    uint8_t data[];
};

/* A chunk's spans coded before LZ4, column after column: start (zigzag delta
 * from the span before), duration, value, kind, stream, tid, correlation
 * (zigzag delta) as varints, then name_id as 8 fixed bytes (a hash: a varint
 * would only grow it). Columns give LZ4 runs of like values (a kernel's
 * stream, tid and kind repeat; its name id comes back every step) that
 * 48-byte rows interleave; the deltas make times small. At most
 * SPANRING_CODED_MAX bytes a span. */
#define SPANRING_CODED_MAX (5 * 10 + 3 * 5 + 8)

/* Scratch of every ring (rings are single-threaded, all on the agent's main
 * thread): the coded columns of the chunk being sealed or read, and the LZ4
 * of a chunk being sealed, allocated once. */
static uint8_t ring_coded[SPANRING_CHUNK_SPANS * SPANRING_CODED_MAX];
static uint8_t *ring_packed;

static size_t spanring_code(const struct spanring_span *sp, size_t n, uint8_t *out)
{
    uint8_t *p = out;
    uint64_t prev = 0;
    uint32_t prev_corr = 0;

    for (size_t i = 0; i < n; prev = sp[i++].start_ns)
        p = varint_put(p, varint_zigzag(sp[i].start_ns - prev));
    for (size_t i = 0; i < n; i++)
        p = varint_put(p, sp[i].duration_ns);
    for (size_t i = 0; i < n; i++)
        p = varint_put(p, sp[i].value);
    for (size_t i = 0; i < n; i++)
        p = varint_put(p, sp[i].kind);
    for (size_t i = 0; i < n; i++)
        p = varint_put(p, sp[i].stream);
    for (size_t i = 0; i < n; i++)
        p = varint_put(p, sp[i].tid);
    for (size_t i = 0; i < n; prev_corr = sp[i++].correlation)
        p = varint_put(p,
                       varint_zigzag((uint64_t)(int64_t)(int32_t)(sp[i].correlation - prev_corr)));
    for (size_t i = 0; i < n; i++, p += 8)
        memcpy(p, &sp[i].name_id, 8);
    return (size_t)(p - out);
}

/* The inverse of spanring_code; -EBADMSG unless [in, in + len) holds exactly
 * n spans. */
static int spanring_decode(const uint8_t *in, size_t len, size_t n, struct spanring_span *sp)
{
    const uint8_t *p = in, *end = in + len;
    uint64_t v, prev = 0;
    uint32_t prev_corr = 0;
    bool ok = true;

    for (size_t i = 0; ok && i < n; i++)
        if ((ok = varint_get(&p, end, &v)))
            prev = sp[i].start_ns = prev + varint_unzigzag(v);
    for (size_t i = 0; ok && i < n; i++)
        ok = varint_get(&p, end, &sp[i].duration_ns);
    for (size_t i = 0; ok && i < n; i++)
        ok = varint_get(&p, end, &sp[i].value);
    for (size_t i = 0; ok && i < n; i++)
        if ((ok = varint_get(&p, end, &v) && v <= UINT32_MAX))
            sp[i].kind = (uint32_t)v;
    for (size_t i = 0; ok && i < n; i++)
        if ((ok = varint_get(&p, end, &v) && v <= UINT32_MAX))
            sp[i].stream = (uint32_t)v;
    for (size_t i = 0; ok && i < n; i++)
        if ((ok = varint_get(&p, end, &v) && v <= UINT32_MAX))
            sp[i].tid = (uint32_t)v;
    for (size_t i = 0; ok && i < n; i++)
        if ((ok = varint_get(&p, end, &v)))
            prev_corr = sp[i].correlation = prev_corr + (uint32_t)varint_unzigzag(v);
    if (!ok || (size_t)(end - p) != n * 8)
        return -EBADMSG;
    for (size_t i = 0; i < n; i++, p += 8)
        memcpy(&sp[i].name_id, p, 8);
    return 0;
}

struct spanring {
    struct spanring_options o;
    struct spanring_chunk *head, *tail; /* sealed, oldest first */
    struct spanring_span open[SPANRING_CHUNK_SPANS];
    size_t nopen;
    uint64_t open_first_ns, open_end_ns, newest_ns;
    struct spanring_stats stats;
};

struct spanring *spanring_new(const struct spanring_options *o)
{
    struct spanring *r = calloc(1, sizeof(*r));

    if (r)
        r->o = *o;
    return r;
}

void spanring_free(struct spanring *r)
{
    if (!r)
        return;
    while (r->head) {
        struct spanring_chunk *c = r->head;
        r->head = c->next;
        free(c);
    }
    free(r);
}

/* The chunk's own bytes, which the cap counts: what malloc was asked for. */
static size_t chunk_bytes(const struct spanring_chunk *c)
{
    return sizeof(*c) + c->len;
}

static void spanring_unlink_head(struct spanring *r, uint64_t *counter)
{
    struct spanring_chunk *c = r->head;

    r->head = c->next;
    if (!r->head)
        r->tail = NULL;
    *counter += c->nspans;
    r->stats.chunks--;
    r->stats.bytes -= chunk_bytes(c);
    free(c);
}

/* Seal: code the open spans, LZ4 them into the ring's scratch, and keep a
 * chunk of exactly the compressed size (a chunk allocated at LZ4's bound
 * held the raw size while the cap counted the compressed one). */
int spanring_seal(struct spanring *r)
{
    int coded, bound, n;
    struct spanring_chunk *c;

    if (!r->nopen)
        return 0;
    coded = (int)spanring_code(r->open, r->nopen, ring_coded);
    bound = LZ4_compressBound(coded);
    if (!ring_packed && !(ring_packed = malloc((size_t)LZ4_compressBound(sizeof(ring_coded)))))
        return -ENOMEM;
    n = LZ4_compress_default((const char *)ring_coded, (char *)ring_packed, coded, bound);
    if (n <= 0 || !(c = malloc(sizeof(*c) + (size_t)n)))
        return -ENOMEM;
    *c = (struct spanring_chunk){.first_ns = r->open_first_ns,
                                 .end_ns = r->open_end_ns,
                                 .nspans = (uint32_t)r->nopen,
                                 .coded = (uint32_t)coded,
                                 .len = (size_t)n};
    memcpy(c->data, ring_packed, (size_t)n);
    c->crc = crc32c(0, c->data, c->len);
    if (r->tail)
        r->tail->next = c;
    else
        r->head = c;
    r->tail = c;
    r->stats.chunks++;
    r->stats.bytes += chunk_bytes(c);
    r->nopen = 0;
    return 0;
}

/* Drop sealed chunks that ended more than keep_ns before now_ns. */
static void spanring_age(struct spanring *r, uint64_t now_ns)
{
    while (r->head && r->head->end_ns + r->o.keep_ns < now_ns)
        spanring_unlink_head(r, &r->stats.dropped_age);
}

int spanring_add(struct spanring *r, const struct spanring_span *s)
{
    uint64_t end = s->start_ns + s->duration_ns;

    if (r->nopen == SPANRING_CHUNK_SPANS && spanring_seal(r) < 0) {
        r->stats.dropped_cap++;
        return -ENOMEM;
    }
    if (!r->nopen) {
        r->open_first_ns = s->start_ns;
        r->open_end_ns = end;
    }
    if (s->start_ns < r->open_first_ns)
        r->open_first_ns = s->start_ns;
    if (end > r->open_end_ns)
        r->open_end_ns = end;
    if (end > r->newest_ns)
        r->newest_ns = end;
    r->open[r->nopen++] = *s;
    r->stats.spans++;
    spanring_tick(r, r->newest_ns);
    return 0;
}

void spanring_tick(struct spanring *r, uint64_t now_ns)
{
    if (r->nopen && (r->nopen == SPANRING_CHUNK_SPANS || r->open_first_ns + r->o.chunk_ns < now_ns))
        (void)spanring_seal(r); /* on -ENOMEM the chunk stays open and fills */
    spanring_age(r, now_ns);
}

size_t spanring_drop_oldest(struct spanring *r)
{
    size_t len;

    if (!r->head)
        return 0;
    len = chunk_bytes(r->head);
    spanring_unlink_head(r, &r->stats.dropped_cap);
    return len;
}

uint64_t spanring_oldest_chunk_ns(const struct spanring *r)
{
    return r->head ? r->head->first_ns : UINT64_MAX;
}

/* Call fn for each span of spans[0..n) overlapping [from, to]. 1 when fn
 * asked to stop. */
static int spanring_emit(const struct spanring_span *spans, size_t n, uint64_t from, uint64_t to,
                         spanring_span_fn fn, void *ctx)
{
    for (size_t i = 0; i < n; i++)
        if (spans[i].start_ns <= to && spans[i].start_ns + spans[i].duration_ns >= from &&
            fn(ctx, &spans[i]))
            return 1;
    return 0;
}

/* Decompress c into buf (SPANRING_CHUNK_SPANS spans) through the
 * scratch. -EBADMSG when its bytes fail the checksum or do not decode to
 * exactly nspans spans. */
static int spanring_unpack(const struct spanring_chunk *c, struct spanring_span *buf)
{
    int want = (int)c->coded;

    if (c->nspans > SPANRING_CHUNK_SPANS || c->coded > sizeof(ring_coded) ||
        crc32c(0, c->data, c->len) != c->crc)
        return -EBADMSG;
    if (LZ4_decompress_safe((const char *)c->data, (char *)ring_coded, (int)c->len, want) != want)
        return -EBADMSG;
    return spanring_decode(ring_coded, c->coded, c->nspans, buf);
}

int spanring_window(struct spanring *r, uint64_t from_ns, uint64_t to_ns, spanring_span_fn fn,
                    void *ctx)
{
    struct spanring_span *buf = NULL;
    int corrupt = 0;

    for (struct spanring_chunk *c = r->head; c; c = c->next) {
        if (c->end_ns < from_ns || c->first_ns > to_ns)
            continue;
        if (!buf && !(buf = malloc(SPANRING_CHUNK_SPANS * sizeof(*buf))))
            return -ENOMEM;
        if (spanring_unpack(c, buf) < 0) {
            corrupt++;
            r->stats.corrupt_chunks++;
            continue;
        }
        if (spanring_emit(buf, c->nspans, from_ns, to_ns, fn, ctx))
            goto out;
    }
    spanring_emit(r->open, r->nopen, from_ns, to_ns, fn, ctx);
out:
    free(buf);
    return corrupt;
}

void spanring_get_stats(const struct spanring *r, struct spanring_stats *out)
{
    *out = r->stats;
    out->bytes += r->nopen * sizeof(r->open[0]);
    out->oldest_ns = r->head ? r->head->first_ns : r->nopen ? r->open_first_ns : 0;
}

uint8_t *spanring_chunk_bytes(struct spanring *r, size_t index, size_t *len)
{
    struct spanring_chunk *c = r->head;

    while (c && index--)
        c = c->next;
    if (!c)
        return NULL;
    *len = c->len;
    return c->data;
}
