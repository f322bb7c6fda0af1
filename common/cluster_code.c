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

    if (c < 2 * half) {
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
    int64_t d = (int64_t)(a - b);

    return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static uint64_t code_unzigzag(uint64_t base, uint64_t z)
{
    return base + ((z >> 1) ^ (0 - (z & 1)));
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
    return 1 + n * CODE_VALUES_MAX * 10;
}

size_t cluster_code_encode(Argus__V1__Cluster *const *c, size_t n, uint8_t *out)
{
    unsigned flags, b = n ? code_group_bits(c, n, &flags) : 0;
    uint64_t prev = 0;
    uint8_t *p = out;

    if (!n || b > CLUSTER_CODE_MAX_BITS)
        return 0;
    p = varint_put(p, (b - 1) | flags << 5);
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

/* Read the header, then count the clusters after it (r is not moved past
 * them). 0, -EBADMSG or -EMSGSIZE. */
static int code_count(struct code_reader *r, size_t max, size_t *n)
{
    struct code_reader walk;
    Argus__V1__Cluster scratch;
    uint64_t h, prev = 0;

    if (!varint_get(&r->p, r->end, &h) || h >> 7)
        return -EBADMSG;
    r->bits = (unsigned)(h & 31) + 1;
    r->flags = (unsigned)(h >> 5);
    walk = *r;
    for (*n = 0; walk.p < walk.end; (*n)++) {
        if (*n == max)
            return -EMSGSIZE;
        if (!code_read_cluster(&walk, &prev, &scratch))
            return -EBADMSG;
    }
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

int cluster_code_decode(const uint8_t *p, size_t len, size_t max, ProtobufCAllocator *a,
                        Argus__V1__Cluster ***out, size_t *n)
{
    struct code_reader r = {p, p + len, 1, 0};
    Argus__V1__Cluster **arr;
    uint64_t prev = 0;
    size_t k;
    int rc;

    *out = NULL;
    *n = 0;
    if (!len)
        return 0;
    if ((rc = code_count(&r, max, &k)) < 0 || k == 0)
        return rc;
    if (!(arr = code_alloc(a, k * sizeof(*arr))))
        return -ENOMEM;
    for (size_t i = 0; i < k; i++) {
        if (!(arr[i] = code_alloc(a, sizeof(**arr)))) {
            while (i--)
                code_free(a, arr[i]);
            code_free(a, arr);
            return -ENOMEM;
        }
        argus__v1__cluster__init(arr[i]);
        code_read_cluster(&r, &prev, arr[i]); /* code_count read it already */
    }
    *out = arr;
    *n = k;
    return 0;
}

/* Expand g's packed_clusters into its clusters: 1 when it had some, 0 when
 * not, or the error of cluster_code_decode (-EBADMSG too when g has both). */
static int code_expand_group(Argus__V1__KernelGroup *g, size_t max, ProtobufCAllocator *a)
{
    Argus__V1__Cluster **c;
    size_t n;
    int rc;

    if (!g->packed_clusters.len)
        return 0;
    if (g->n_clusters)
        return -EBADMSG;
    rc = cluster_code_decode(g->packed_clusters.data, g->packed_clusters.len, max, a, &c, &n);
    if (rc < 0)
        return rc;
    g->clusters = c;
    g->n_clusters = n;
    g->packed_clusters.len = 0; /* data stays for free_unpacked */
    return 1;
}

long cluster_code_expand_batch(Argus__V1__Batch *b, size_t max, ProtobufCAllocator *a)
{
    long expanded = 0;

    for (size_t i = 0; i < b->n_steps; i++)
        for (size_t k = 0; k < b->steps[i]->n_kernels; k++) {
            int rc = code_expand_group(b->steps[i]->kernels[k], max, a);

            if (rc < 0)
                return rc;
            expanded += rc;
        }
    return expanded;
}

/* --- the batcher's copy --------------------------------------------------- */

static int code_reserve(struct cluster_code_buf *buf, size_t groups, size_t bytes)
{
    if (groups > buf->cap_groups) {
        Argus__V1__KernelGroup *g = realloc(buf->groups, groups * sizeof(*g));
        Argus__V1__KernelGroup **p;

        if (!g)
            return -ENOMEM;
        buf->groups = g;
        if (!(p = realloc(buf->ptrs, groups * sizeof(*p))))
            return -ENOMEM;
        buf->ptrs = p;
        buf->cap_groups = groups;
    }
    if (bytes > buf->cap_bytes) {
        uint8_t *p = realloc(buf->bytes, bytes);

        if (!p)
            return -ENOMEM;
        buf->bytes = p;
        buf->cap_bytes = bytes;
    }
    return 0;
}

int cluster_code_compact(struct cluster_code_buf *buf, const Argus__V1__StepRecord *in,
                         Argus__V1__StepRecord *out)
{
    size_t bytes = 0;
    uint8_t *p;

    *out = *in;
    for (size_t i = 0; i < in->n_kernels; i++)
        bytes += cluster_code_bound(in->kernels[i]->n_clusters);
    if (!in->n_kernels || code_reserve(buf, in->n_kernels, bytes) < 0)
        return in->n_kernels ? -ENOMEM : 0;
    p = buf->bytes;
    for (size_t i = 0; i < in->n_kernels; i++) {
        Argus__V1__KernelGroup *g = &buf->groups[i];
        size_t len;

        *g = *in->kernels[i];
        buf->ptrs[i] = g;
        len = g->packed_clusters.len ? 0 : cluster_code_encode(g->clusters, g->n_clusters, p);
        if (len) {
            g->n_clusters = 0;
            g->clusters = NULL;
            g->packed_clusters.data = p;
            g->packed_clusters.len = len;
            p += len;
        }
    }
    out->kernels = buf->ptrs;
    return 0;
}

void cluster_code_buf_free(struct cluster_code_buf *buf)
{
    free(buf->groups);
    free(buf->ptrs);
    free(buf->bytes);
    memset(buf, 0, sizeof(*buf));
}
