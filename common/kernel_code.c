/* The compact coding of a step record's kernel groups: see kernel_code.h. */
#include "common/kernel_code.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cluster_code.h"
#include "common/mix.h"
#include "common/varint.h"
#include "common/wire_steps.h"

#define KERNEL_SAME_NAME 1u
#define KERNEL_WORK_ID 2u
#define KERNEL_SAME_STREAM 4u
#define KERNEL_SAME_HEADER 8u
#define KERNEL_IDENT_FLAGS (KERNEL_SAME_NAME | KERNEL_WORK_ID | KERNEL_SAME_STREAM)
#define KERNEL_FLAG_BITS 4
#define KERNEL_HEAD_MAX (10 + 8 + 5 + 4 + 2) /* bytes of a group before its clusters */
#define KERNEL_NO_HEADER (CLUSTER_CODE_HEADER_MAX + 1)

/* What a group is coded against: the group before it. */
struct kernel_prev {
    uint64_t name_id;
    uint32_t stream;
    unsigned header; /* of the last group with clusters; KERNEL_NO_HEADER: none */
    bool first;
};

#define KERNEL_PREV_INIT                                                                           \
    {                                                                                              \
        0, 0, KERNEL_NO_HEADER, true                                                               \
    }

/* What coded groups take their identities from: a record's groups, or a
 * set's identities; neither (both NULL): the bytes hold them. */
struct kernel_as {
    const Argus__V1__StepRecord *rec;
    const struct kernel_code_ident *ids;
    size_t n;
};

/* --- encoding ------------------------------------------------------------- */

size_t kernel_code_bound(const Argus__V1__StepRecord *r)
{
    size_t n = 0;

    for (size_t i = 0; i < r->n_kernels; i++)
        n += KERNEL_HEAD_MAX + cluster_code_bound(r->kernels[i]->n_clusters);
    return n;
}

static uint8_t *kernel_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int b = 0; b < bytes; b++)
        *p++ = (uint8_t)(v >> (8 * b));
    return p;
}

/* The flags of g against prev: all of them, or when clusters_only (g coded
 * against an identity known to the reader) only KERNEL_SAME_HEADER, and
 * KERNEL_WORK_ID when base is not NULL and g's work id is not base's. Its
 * clusters' header in *header. */
static unsigned kernel_flags(const Argus__V1__KernelGroup *g, const struct kernel_prev *prev,
                             bool clusters_only, const struct kernel_code_ident *base,
                             unsigned *header)
{
    unsigned f = g->work_id ? KERNEL_WORK_ID : 0;

    *header = g->n_clusters ? cluster_code_header(g->clusters, g->n_clusters) : KERNEL_NO_HEADER;
    if (clusters_only) {
        f = base && g->work_id != base->work_id ? KERNEL_WORK_ID : 0;
        return f | (g->n_clusters && *header == prev->header ? KERNEL_SAME_HEADER : 0);
    }
    if (!prev->first && g->name_id == prev->name_id)
        f |= KERNEL_SAME_NAME;
    if (g->stream == prev->stream)
        f |= KERNEL_SAME_STREAM;
    if (g->n_clusters && *header == prev->header)
        f |= KERNEL_SAME_HEADER;
    return f;
}

/* Code r's groups at out: whole, or only their clusters (clusters_only),
 * with the work ids that differ from base[i] (base not NULL). Returns the
 * bytes. */
static size_t kernel_encode(const Argus__V1__StepRecord *r, bool clusters_only,
                            const struct kernel_code_ident *base, uint8_t *out)
{
    struct kernel_prev prev = KERNEL_PREV_INIT;
    uint8_t *p = out;

    for (size_t i = 0; i < r->n_kernels; i++) {
        const Argus__V1__KernelGroup *g = r->kernels[i];
        unsigned header, f = kernel_flags(g, &prev, clusters_only, base ? &base[i] : NULL, &header);

        p = varint_put(p, (uint64_t)g->n_clusters << KERNEL_FLAG_BITS | f);
        if (!clusters_only && !(f & KERNEL_SAME_NAME))
            p = kernel_put_le(p, g->name_id, 8);
        if (!clusters_only && !(f & KERNEL_SAME_STREAM))
            p = varint_put(p, g->stream);
        if (f & KERNEL_WORK_ID)
            p = kernel_put_le(p, g->work_id, 4);
        if (g->n_clusters && !(f & KERNEL_SAME_HEADER))
            p = varint_put(p, header);
        p += cluster_code_encode(g->clusters, g->n_clusters, header, p);
        prev.name_id = g->name_id;
        prev.stream = g->stream;
        prev.header = g->n_clusters ? header : prev.header;
        prev.first = false;
    }
    return (size_t)(p - out);
}

size_t kernel_code_encode(const Argus__V1__StepRecord *r, bool as_previous, uint8_t *out)
{
    return kernel_encode(r, as_previous, NULL, out);
}

/* --- decoding ------------------------------------------------------------- */

static bool kernel_get_le(const uint8_t **p, const uint8_t *end, int bytes, uint64_t *v)
{
    if (end - *p < bytes)
        return false;
    *v = 0;
    for (int b = 0; b < bytes; b++)
        *v |= (uint64_t)(*(*p)++) << (8 * b);
    return true;
}

/* The clusters' header of a group of flags h with clusters: read, or the
 * last one. false when malformed. */
static bool kernel_read_header(const uint8_t **p, const uint8_t *end, uint64_t h,
                               struct kernel_prev *prev)
{
    uint64_t v;

    if (h & KERNEL_SAME_HEADER)
        return prev->header != KERNEL_NO_HEADER;
    if (!varint_get(p, end, &v) || v > CLUSTER_CODE_HEADER_MAX)
        return false;
    prev->header = (unsigned)v;
    return true;
}

/* The name id, stream and work id of a group of flags h into g, against
 * prev. false when malformed. */
static bool kernel_read_ident(const uint8_t **p, const uint8_t *end, uint64_t h,
                              const struct kernel_prev *prev, Argus__V1__KernelGroup *g)
{
    uint64_t v = prev->stream;

    g->name_id = prev->name_id;
    if ((h & KERNEL_SAME_NAME) ? prev->first : !kernel_get_le(p, end, 8, &g->name_id))
        return false;
    if ((!(h & KERNEL_SAME_STREAM) && !varint_get(p, end, &v)) || v > UINT32_MAX)
        return false;
    g->stream = (uint32_t)v;
    if ((h & KERNEL_WORK_ID) && !kernel_get_le(p, end, 4, &v))
        return false;
    g->work_id = (h & KERNEL_WORK_ID) ? (uint32_t)v : 0;
    return true;
}

/* The next group's fields before its clusters into g, against *prev (which
 * becomes g's: prev->header is then the header of g's clusters) or, when
 * as is not NULL, with that identity; its cluster count into *n. 0,
 * -EBADMSG or -EMSGSIZE (over max clusters). */
static int kernel_read_head(const uint8_t **p, const uint8_t *end, size_t max,
                            struct kernel_prev *prev, const struct kernel_code_ident *as,
                            Argus__V1__KernelGroup *g, size_t *n)
{
    uint64_t h;

    if (!varint_get(p, end, &h))
        return -EBADMSG;
    if ((h >> KERNEL_FLAG_BITS) > max)
        return -EMSGSIZE;
    *n = (size_t)(h >> KERNEL_FLAG_BITS);
    if (as && (h & (KERNEL_SAME_NAME | KERNEL_SAME_STREAM)))
        return -EBADMSG;
    if (as) {
        uint64_t w = as->work_id;

        g->name_id = as->name_id;
        g->stream = as->stream;
        if ((h & KERNEL_WORK_ID) && !kernel_get_le(p, end, 4, &w))
            return -EBADMSG;
        g->work_id = (uint32_t)w;
    } else if (!kernel_read_ident(p, end, h, prev, g)) {
        return -EBADMSG;
    }
    if (*n && !kernel_read_header(p, end, h, prev))
        return -EBADMSG;
    prev->name_id = g->name_id;
    prev->stream = g->stream;
    prev->first = false;
    return 0;
}

/* How many groups as gives identities to (SIZE_MAX: as is empty, the bytes
 * hold them). */
static size_t kernel_as_count(const struct kernel_as *as)
{
    return as->rec ? as->rec->n_kernels : as->ids ? as->n : SIZE_MAX;
}

/* The identity of the i-th coded group from as into *id; NULL when the
 * bytes hold it. */
static const struct kernel_code_ident *kernel_as(const struct kernel_as *as, size_t i,
                                                 struct kernel_code_ident *id)
{
    if (as->rec) {
        const Argus__V1__KernelGroup *g = as->rec->kernels[i];

        *id = (struct kernel_code_ident){g->name_id, g->stream, g->work_id};
        return id;
    }
    return as->ids ? &as->ids[i] : NULL;
}

/* Count the groups of [p, end), checking all of them (and that there are
 * as many as as has). */
static int kernel_count(const uint8_t *p, const uint8_t *end, const struct kernel_as *as,
                        size_t max_groups, size_t max_clusters, size_t *groups)
{
    struct kernel_prev prev = KERNEL_PREV_INIT;
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT;
    struct kernel_code_ident id;
    size_t n, want = kernel_as_count(as);
    int rc;

    for (*groups = 0; p < end; (*groups)++) {
        if (*groups == max_groups)
            return -EMSGSIZE;
        if (*groups == want)
            return -EBADMSG;
        if ((rc = kernel_read_head(&p, end, max_clusters, &prev, kernel_as(as, *groups, &id), &g,
                                   &n)) < 0 ||
            (n && (rc = cluster_code_skip(&p, end, prev.header, n)) < 0))
            return rc;
    }
    return want != SIZE_MAX && *groups != want ? -EBADMSG : 0;
}

static void *kernel_alloc(ProtobufCAllocator *a, size_t n)
{
    return a ? a->alloc(a->allocator_data, n) : malloc(n);
}

/* Free groups g[0..n) and g. */
static void kernel_free_groups(ProtobufCAllocator *a, Argus__V1__KernelGroup **g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        argus__v1__kernel_group__free_unpacked(g[i], a);
    if (a)
        a->free(a->allocator_data, g);
    else
        free(g);
}

/* Decode the next group (checked by kernel_count) into a new *g, against
 * *prev or with the identity as. 0 or -ENOMEM. */
static int kernel_read_group(const uint8_t **p, const uint8_t *end, struct kernel_prev *prev,
                             const struct kernel_code_ident *as, ProtobufCAllocator *a,
                             Argus__V1__KernelGroup **g)
{
    size_t n;

    if (!(*g = kernel_alloc(a, sizeof(**g))))
        return -ENOMEM;
    argus__v1__kernel_group__init(*g);
    kernel_read_head(p, end, SIZE_MAX, prev, as, *g, &n);
    (*g)->n_clusters = n;
    return n ? cluster_code_decode(p, end, prev->header, n, a, &(*g)->clusters) : 0;
}

/* kernel_code_decode, the identities from as. */
static int kernel_decode_as(const uint8_t *p, size_t len, const struct kernel_as *as,
                            size_t max_groups, size_t max_clusters, ProtobufCAllocator *a,
                            Argus__V1__KernelGroup ***out, size_t *n)
{
    struct kernel_prev prev = KERNEL_PREV_INIT;
    const uint8_t *end = p + len;
    struct kernel_code_ident id;
    Argus__V1__KernelGroup **g;
    size_t k;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = kernel_count(p, end, as, max_groups, max_clusters, &k)) < 0 || k == 0)
        return rc;
    if (!(g = kernel_alloc(a, k * sizeof(*g))))
        return -ENOMEM;
    for (size_t i = 0; i < k; i++)
        if ((rc = kernel_read_group(&p, end, &prev, kernel_as(as, i, &id), a, &g[i])) < 0) {
            if (g[i]) /* its clusters failed: a group of none */
                g[i]->n_clusters = 0;
            kernel_free_groups(a, g, i + (g[i] != NULL));
            return rc;
        }
    *out = g;
    *n = k;
    return 0;
}

int kernel_code_decode(const uint8_t *p, size_t len, const Argus__V1__StepRecord *as,
                       size_t max_groups, size_t max_clusters, ProtobufCAllocator *a,
                       Argus__V1__KernelGroup ***out, size_t *n)
{
    struct kernel_as from = {.rec = as};

    return kernel_decode_as(p, len, &from, max_groups, max_clusters, a, out, n);
}

static const char *kernel_job(const Argus__V1__StepRecord *r)
{
    return r->job ? r->job : "";
}

/* The record step i of b is coded against as its previous: NULL when it is
 * not; b itself (not a record) when it should be and cannot. */
static const void *kernel_as_of(const Argus__V1__Batch *b, size_t i)
{
    const Argus__V1__StepRecord *r = b->steps[i], *prev = i ? b->steps[i - 1] : NULL;

    if (!r->packed_kernels_as_previous)
        return NULL;
    if (!prev || prev->packed_kernels.len || strcmp(kernel_job(prev), kernel_job(r)) != 0)
        return b;
    return prev;
}

/* Decode r's packed_kernels with the identities of its set (sets: NULL,
 * none known). 0, -ENOENT (a set not known), or kernel_code_decode's errors. */
static int kernel_expand_set(Argus__V1__StepRecord *r, size_t max_groups, size_t max_clusters,
                             ProtobufCAllocator *a, const struct kernel_code_sets *sets)
{
    struct kernel_as as = {0};
    struct kernel_code_ident *ids = NULL;
    int rc;

    if (r->packed_kernels_as_previous || !r->packed_kernels_set)
        return -EBADMSG;
    rc =
        sets ? sets->lookup(sets->ctx, kernel_job(r), r->packed_kernels_set, &ids, &as.n) : -ENOENT;
    if (rc < 0)
        return rc;
    as.ids = ids;
    rc = as.n ? kernel_decode_as(r->packed_kernels.data, r->packed_kernels.len, &as, max_groups,
                                 max_clusters, a, &r->kernels, &r->n_kernels)
              : -EBADMSG;
    free(ids);
    return rc;
}

/* r's kernels could not be had (a set not known): none, said in *unknown. */
static void kernel_unknown(Argus__V1__StepRecord *r, size_t *unknown)
{
    r->n_kernels = 0;
    r->kernels = NULL;
    (*unknown)++;
}

long kernel_code_expand_batch_sets(Argus__V1__Batch *b, size_t max_groups, size_t max_clusters,
                                   ProtobufCAllocator *a, const struct kernel_code_sets *sets,
                                   struct kernel_code_set_counts *counts)
{
    bool prev_unknown = false;
    long expanded = 0;

    *counts = (struct kernel_code_set_counts){0, 0};
    for (size_t i = 0; i < b->n_steps; i++) {
        Argus__V1__StepRecord *r = b->steps[i];
        bool after_unknown = prev_unknown;
        const void *as;
        int rc;

        prev_unknown = false;
        if (!r->packed_kernels.len)
            continue;
        if (r->n_kernels)
            return -EBADMSG;
        if (r->packed_kernels_as_set) {
            rc = kernel_expand_set(r, max_groups, max_clusters, a, sets);
        } else if (r->packed_kernels_as_previous && after_unknown) {
            rc = -ENOENT; /* against a record whose groups are not known */
        } else if ((as = kernel_as_of(b, i)) == b) {
            rc = -EBADMSG;
        } else {
            rc = kernel_code_decode(r->packed_kernels.data, r->packed_kernels.len, as, max_groups,
                                    max_clusters, a, &r->kernels, &r->n_kernels);
        }
        if (rc == -ENOENT) {
            kernel_unknown(r, &counts->unknown);
            prev_unknown = true;
        } else if (rc < 0) {
            return rc;
        } else {
            counts->referred += r->packed_kernels_as_set;
        }
        if (r->packed_kernels_as_set) /* a reference, not a definition */
            r->packed_kernels_set = 0;
        r->packed_kernels.len = 0; /* data stays for free_unpacked */
        r->packed_kernels_as_previous = r->packed_kernels_as_set = false;
        expanded++;
    }
    return expanded;
}

long kernel_code_expand_batch(Argus__V1__Batch *b, size_t max_groups, size_t max_clusters,
                              ProtobufCAllocator *a)
{
    struct kernel_code_set_counts counts;
    long n = kernel_code_expand_batch_sets(b, max_groups, max_clusters, a, NULL, &counts);

    for (size_t i = 0; n >= 0 && i < b->n_steps; i++)
        b->steps[i]->packed_kernels_set = 0;
    return n;
}

/* --- set ids -------------------------------------------------------------- */

void kernel_code_idents(const Argus__V1__StepRecord *r, struct kernel_code_ident *ids)
{
    for (size_t i = 0; i < r->n_kernels; i++)
        ids[i] = (struct kernel_code_ident){r->kernels[i]->name_id, r->kernels[i]->stream,
                                            r->kernels[i]->work_id};
}

static uint64_t kernel_set_step(uint64_t h, uint64_t name_id, uint32_t stream, uint32_t work_id)
{
    h = mix64(h ^ name_id);
    return mix64(h ^ ((uint64_t)stream << 32 | work_id));
}

uint64_t kernel_code_set_id(const struct kernel_code_ident *ids, size_t n)
{
    uint64_t h = mix64(n + 0x9e3779b97f4a7c15ULL);

    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++)
        h = kernel_set_step(h, ids[i].name_id, ids[i].stream, ids[i].work_id);
    return h ? h : 1;
}

uint64_t kernel_code_record_set(const Argus__V1__StepRecord *r)
{
    uint64_t h = mix64(r->n_kernels + 0x9e3779b97f4a7c15ULL);

    if (!r->n_kernels)
        return 0;
    for (size_t i = 0; i < r->n_kernels; i++)
        h = kernel_set_step(h, r->kernels[i]->name_id, r->kernels[i]->stream,
                            r->kernels[i]->work_id);
    return h ? h : 1;
}

/* --- the batcher's copy --------------------------------------------------- */

/* True when prev holds in's job and group identities. */
static bool kernel_same_as(const struct kernel_code_prev *prev, const Argus__V1__StepRecord *in)
{
    if (!prev || !prev->valid || prev->n != in->n_kernels || strcmp(prev->job, kernel_job(in)))
        return false;
    for (size_t i = 0; i < in->n_kernels; i++) {
        const Argus__V1__KernelGroup *g = in->kernels[i];

        if (g->name_id != prev->ids[i].name_id || g->stream != prev->ids[i].stream ||
            g->work_id != prev->ids[i].work_id)
            return false;
    }
    return true;
}

bool kernel_code_codable(const Argus__V1__StepRecord *in)
{
    return in->n_kernels && !in->packed_kernels.len && wire_steps_kernels_plain(in);
}

int kernel_code_compact(struct kernel_code_buf *buf, const Argus__V1__StepRecord *in,
                        const struct kernel_code_prev *prev, Argus__V1__StepRecord *out)
{
    return kernel_code_compact_as(buf, in, prev, NULL, out);
}

/* Whether in's groups have the names and streams of set's, in order. */
static bool kernel_fits(const Argus__V1__StepRecord *in, const struct kernel_code_set *set)
{
    if (!set || !set->id || !set->ids || set->n != in->n_kernels)
        return false;
    for (size_t i = 0; i < in->n_kernels; i++)
        if (in->kernels[i]->name_id != set->ids[i].name_id ||
            in->kernels[i]->stream != set->ids[i].stream)
            return false;
    return true;
}

int kernel_code_compact_as(struct kernel_code_buf *buf, const Argus__V1__StepRecord *in,
                           const struct kernel_code_prev *prev, const struct kernel_code_set *as,
                           Argus__V1__StepRecord *out)
{
    size_t need = kernel_code_bound(in);
    bool previous;

    *out = *in;
    if (!kernel_code_codable(in))
        return 0;
    if (need > buf->cap) {
        uint8_t *p = realloc(buf->bytes, need);

        if (!p)
            return -ENOMEM;
        buf->bytes = p;
        buf->cap = need;
    }
    previous = kernel_same_as(prev, in);
    out->packed_kernels_as_previous = previous;
    out->packed_kernels_as_set = !previous && kernel_fits(in, as);
    out->packed_kernels_set = out->packed_kernels_as_set ? as->id : 0;
    out->packed_kernels.data = buf->bytes;
    out->packed_kernels.len =
        kernel_encode(in, previous || out->packed_kernels_as_set,
                      out->packed_kernels_as_set ? as->ids : NULL, buf->bytes);
    out->n_kernels = 0;
    out->kernels = NULL;
    return 0;
}

void kernel_code_buf_free(struct kernel_code_buf *buf)
{
    free(buf->bytes);
    memset(buf, 0, sizeof(*buf));
}

int kernel_code_prev_set(struct kernel_code_prev *prev, const Argus__V1__StepRecord *r)
{
    char *job = strdup(kernel_job(r));

    prev->valid = false;
    if (!job)
        return -ENOMEM;
    free(prev->job);
    prev->job = job;
    if (r->n_kernels > prev->cap) {
        struct kernel_code_ident *ids = realloc(prev->ids, r->n_kernels * sizeof(*ids));

        if (!ids)
            return -ENOMEM;
        prev->ids = ids;
        prev->cap = r->n_kernels;
    }
    kernel_code_idents(r, prev->ids);
    prev->n = r->n_kernels;
    prev->valid = !r->packed_kernels.len; /* a record coded already: its groups are unknown */
    return 0;
}

void kernel_code_prev_clear(struct kernel_code_prev *prev)
{
    prev->valid = false;
}

void kernel_code_prev_free(struct kernel_code_prev *prev)
{
    free(prev->job);
    free(prev->ids);
    memset(prev, 0, sizeof(*prev));
}
