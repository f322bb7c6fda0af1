/* The compact coding of a kernel group's clusters: see cluster_code.h. */
#include "common/cluster_code.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/varint.h"

#define CODE_FLAG_SUM 1u
#define CODE_FLAG_MIN_MAX 2u
#define CODE_VALUES_MAX 6u /* varints a cluster takes at most */

/* --- values and their codes --------------------------------------------- */

static unsigned code_bitlen(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0;
}

/* Significant bits of v: its length less its trailing zeros (1 for 0). */
static unsigned code_sigbits(uint64_t v)
{
    return v ? code_bitlen(v) - (unsigned)__builtin_ctzll(v) : 1;
}

/* v cut to its b leading bits. */
static uint64_t code_cut(uint64_t v, unsigned b)
{
    unsigned l = code_bitlen(v);

    return l <= b ? v : v >> (l - b) << (l - b);
}

/* The code of v, which has at most b significant bits (cluster_code.h). */
static uint64_t code_of(uint64_t v, unsigned b)
{
    unsigned l = code_bitlen(v);

    if (l <= b)
        return v;
    return ((uint64_t)(l - b) << (b - 1)) + (v >> (l - b));
}

/* The value of code c into *v; false when it lies past 64 bits. */
static bool code_value(uint64_t c, unsigned b, uint64_t *v)
{
    uint64_t half = 1ULL << (b - 1), e;

    if (b == 64 || c < 2 * half) {
        *v = c;
        return true;
    }
    e = c / half - 1;
    if (e > 64 - b)
        return false;
    *v = (half + c % half) << e;
    return true;
}

/* What the sum of count kernels of median p50 is guessed to be, cut to b
 * bits (the largest 64-bit value when the product overflows). */
static uint64_t code_sum_guess(uint64_t count, uint64_t p50, unsigned b)
{
    uint64_t s;

    if (__builtin_mul_overflow(count, p50, &s))
        s = UINT64_MAX;
    return code_of(code_cut(s, b), b);
}

/* zigzag(a - b), modulo 2^64. */
static uint64_t code_zigzag(uint64_t a, uint64_t b)
{
    return varint_zigzag(a - b);
}

static uint64_t code_unzigzag(uint64_t base, uint64_t z)
{
    return base + varint_unzigzag(z);
}

/* --- encoding ------------------------------------------------------------- */

/* The significant bits the n clusters need, and the flags of what they hold. */
static unsigned code_group_bits(Argus__V1__Cluster *const *c, size_t n, unsigned *flags)
{
    unsigned b = 1;

    *flags = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t v[] = {c[i]->p50_ns, c[i]->p99_ns, c[i]->sum_ns, c[i]->min_ns, c[i]->max_ns};

        for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
            if (code_sigbits(v[k]) > b)
                b = code_sigbits(v[k]);
        if (c[i]->sum_ns)
            *flags |= CODE_FLAG_SUM;
        if (c[i]->min_ns || c[i]->max_ns)
            *flags |= CODE_FLAG_MIN_MAX;
    }
    return b;
}

size_t cluster_code_bound(size_t n)
{
    return n * CODE_VALUES_MAX * 10;
}

unsigned cluster_code_header(Argus__V1__Cluster *const *c, size_t n)
{
    unsigned flags, b = code_group_bits(c, n, &flags);

    return flags | (b - 1) << 2;
}

size_t cluster_code_encode(Argus__V1__Cluster *const *c, size_t n, unsigned header, uint8_t *out)
{
    unsigned flags = header & 3, b = (header >> 2) + 1;
    uint64_t prev = 0;
    uint8_t *p = out;

    for (size_t i = 0; i < n; i++) {
        const Argus__V1__Cluster *x = c[i];
        uint64_t p50 = code_of(x->p50_ns, b), p99 = code_of(x->p99_ns, b);

        p = varint_put(p, x->count);
        p = varint_put(p, code_zigzag(p50, prev));
        p = varint_put(p, code_zigzag(p99, p50));
        if (flags & CODE_FLAG_SUM)
            p = varint_put(
                p, code_zigzag(code_of(x->sum_ns, b), code_sum_guess(x->count, x->p50_ns, b)));
        if (flags & CODE_FLAG_MIN_MAX) {
            p = varint_put(p, code_zigzag(code_of(x->min_ns, b), p50));
            p = varint_put(p, code_zigzag(code_of(x->max_ns, b), p99));
        }
        prev = p99;
    }
    return (size_t)(p - out);
}

/* --- decoding ------------------------------------------------------------- */

struct code_reader {
    const uint8_t *p, *end;
    unsigned bits, flags;
};

/* The next value, coded against the code base: its code into *code, the
 * value into *v. false when malformed. */
static bool code_read_value(struct code_reader *r, uint64_t base, uint64_t *code, uint64_t *v)
{
    uint64_t z;

    if (!varint_get(&r->p, r->end, &z))
        return false;
    *code = code_unzigzag(base, z);
    return code_value(*code, r->bits, v);
}

/* The next cluster into x; *prev is the previous cluster's p99 code, then
 * this one's. false when malformed. */
static bool code_read_cluster(struct code_reader *r, uint64_t *prev, Argus__V1__Cluster *x)
{
    uint64_t count, c50, c99, c;

    if (!varint_get(&r->p, r->end, &count) || count > UINT32_MAX)
        return false;
    x->count = (uint32_t)count;
    if (!code_read_value(r, *prev, &c50, &x->p50_ns) || !code_read_value(r, c50, &c99, &x->p99_ns))
        return false;
    if ((r->flags & CODE_FLAG_SUM) &&
        !code_read_value(r, code_sum_guess(count, x->p50_ns, r->bits), &c, &x->sum_ns))
        return false;
    if ((r->flags & CODE_FLAG_MIN_MAX) &&
        (!code_read_value(r, c50, &c, &x->min_ns) || !code_read_value(r, c99, &c, &x->max_ns)))
        return false;
    *prev = c99;
    return true;
}

/* A reader of [p, end) under header h. false when h is not a header. */
static bool code_reader_init(struct code_reader *r, const uint8_t *p, const uint8_t *end,
                             unsigned h)
{
    r->p = p;
    r->end = end;
    r->flags = h & 3;
    r->bits = (h >> 2) + 1;
    return h <= CLUSTER_CODE_HEADER_MAX;
}

int cluster_code_skip(const uint8_t **p, const uint8_t *end, unsigned header, size_t n)
{
    struct code_reader r;
    Argus__V1__Cluster scratch;
    uint64_t prev = 0;

    if (!code_reader_init(&r, *p, end, header))
        return -EBADMSG;
    for (size_t i = 0; i < n; i++)
        if (!code_read_cluster(&r, &prev, &scratch))
            return -EBADMSG;
    *p = r.p;
    return 0;
}

static void *code_alloc(ProtobufCAllocator *a, size_t n)
{
    return a ? a->alloc(a->allocator_data, n) : malloc(n);
}

static void code_free(ProtobufCAllocator *a, void *p)
{
    if (a)
        a->free(a->allocator_data, p);
    else
        free(p);
}

/* Free arr[0..n) and arr. */
static void code_free_clusters(ProtobufCAllocator *a, Argus__V1__Cluster **arr, size_t n)
{
    for (size_t i = 0; i < n; i++)
        code_free(a, arr[i]);
    code_free(a, arr);
}

int cluster_code_decode(const uint8_t **p, const uint8_t *end, unsigned header, size_t n,
                        ProtobufCAllocator *a, Argus__V1__Cluster ***out)
{
    struct code_reader r;
    Argus__V1__Cluster **arr;
    uint64_t prev = 0;

    *out = NULL;
    if (!code_reader_init(&r, *p, end, header))
        return -EBADMSG;
    if (!n)
        return 0;
    if (!(arr = code_alloc(a, n * sizeof(*arr))))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int rc = (arr[i] = code_alloc(a, sizeof(**arr))) ? 0 : -ENOMEM;

        if (rc == 0) {
            argus__v1__cluster__init(arr[i]);
            rc = code_read_cluster(&r, &prev, arr[i]) ? 0 : -EBADMSG;
            i += rc < 0; /* arr[i] is freed too */
        }
        if (rc < 0) {
            code_free_clusters(a, arr, i);
            return rc;
        }
    }
    *out = arr;
    *p = r.p;
    return 0;
}
