/* The compact coding of a step record's kernel groups: see kernel_code.h. */
#include "common/kernel_code.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cluster_code.h"
#include "common/varint.h"

#define KERNEL_SAME_NAME 1u
#define KERNEL_WORK_ID 2u
#define KERNEL_HEAD_MAX (10 + 8 + 5 + 4) /* bytes of a group before its clusters */

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

size_t kernel_code_encode(const Argus__V1__StepRecord *r, uint8_t *out)
{
    uint8_t *p = out;

    for (size_t i = 0; i < r->n_kernels; i++) {
        const Argus__V1__KernelGroup *g = r->kernels[i];
        bool same = i && g->name_id == r->kernels[i - 1]->name_id;

        p = varint_put(p, (uint64_t)g->n_clusters << 2 | (g->work_id ? KERNEL_WORK_ID : 0) |
                              (same ? KERNEL_SAME_NAME : 0));
        if (!same)
            p = kernel_put_le(p, g->name_id, 8);
        p = varint_put(p, g->stream);
        if (g->work_id)
            p = kernel_put_le(p, g->work_id, 4);
        p += cluster_code_encode(g->clusters, g->n_clusters, p);
    }
    return (size_t)(p - out);
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

/* The next group's fields before its clusters into g (name_id kept from the
 * previous group when it says so), its cluster count into *n. 0, -EBADMSG
 * or -EMSGSIZE (more than max clusters). */
static int kernel_read_head(const uint8_t **p, const uint8_t *end, size_t max,
                            Argus__V1__KernelGroup *g, size_t *n)
{
    uint64_t h, v;

    if (!varint_get(p, end, &h))
        return -EBADMSG;
    if ((h >> 2) > max)
        return -EMSGSIZE;
    *n = (size_t)(h >> 2);
    if (!(h & KERNEL_SAME_NAME) && !kernel_get_le(p, end, 8, &g->name_id))
        return -EBADMSG;
    if (!varint_get(p, end, &v) || v > UINT32_MAX)
        return -EBADMSG;
    g->stream = (uint32_t)v;
    if ((h & KERNEL_WORK_ID) && !kernel_get_le(p, end, 4, &v))
        return -EBADMSG;
    g->work_id = (h & KERNEL_WORK_ID) ? (uint32_t)v : 0;
    return 0;
}

/* Count the groups of [p, end), checking all of them. */
static int kernel_count(const uint8_t *p, const uint8_t *end, size_t max_groups,
                        size_t max_clusters, size_t *groups)
{
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT;
    size_t n;
    int rc;

    for (*groups = 0; p < end; (*groups)++) {
        if (*groups == max_groups)
            return -EMSGSIZE;
        if ((rc = kernel_read_head(&p, end, max_clusters, &g, &n)) < 0 ||
            (rc = cluster_code_skip(&p, end, n)) < 0)
            return rc;
    }
    return 0;
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

/* Decode the next group (checked by kernel_count) into a new *g; prev is
 * the previous group (NULL for the first). 0 or -ENOMEM. */
static int kernel_read_group(const uint8_t **p, const uint8_t *end,
                             const Argus__V1__KernelGroup *prev, ProtobufCAllocator *a,
                             Argus__V1__KernelGroup **g)
{
    size_t n;

    if (!(*g = kernel_alloc(a, sizeof(**g))))
        return -ENOMEM;
    argus__v1__kernel_group__init(*g);
    (*g)->name_id = prev ? prev->name_id : 0;
    kernel_read_head(p, end, SIZE_MAX, *g, &n);
    (*g)->n_clusters = n;
    return cluster_code_decode(p, end, n, a, &(*g)->clusters);
}

int kernel_code_decode(const uint8_t *p, size_t len, size_t max_groups, size_t max_clusters,
                       ProtobufCAllocator *a, Argus__V1__KernelGroup ***out, size_t *n)
{
    const uint8_t *end = p + len;
    Argus__V1__KernelGroup **g;
    size_t k;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = kernel_count(p, end, max_groups, max_clusters, &k)) < 0 || k == 0)
        return rc;
    if (!(g = kernel_alloc(a, k * sizeof(*g))))
        return -ENOMEM;
    for (size_t i = 0; i < k; i++)
        if ((rc = kernel_read_group(&p, end, i ? g[i - 1] : NULL, a, &g[i])) < 0) {
            if (g[i]) /* its clusters failed: a group of none */
                g[i]->n_clusters = 0;
            kernel_free_groups(a, g, i + (g[i] != NULL));
            return rc;
        }
    *out = g;
    *n = k;
    return 0;
}

long kernel_code_expand_batch(Argus__V1__Batch *b, size_t max_groups, size_t max_clusters,
                              ProtobufCAllocator *a)
{
    long expanded = 0;

    for (size_t i = 0; i < b->n_steps; i++) {
        Argus__V1__StepRecord *r = b->steps[i];
        int rc;

        if (!r->packed_kernels.len)
            continue;
        if (r->n_kernels)
            return -EBADMSG;
        rc = kernel_code_decode(r->packed_kernels.data, r->packed_kernels.len, max_groups,
                                max_clusters, a, &r->kernels, &r->n_kernels);
        if (rc < 0)
            return rc;
        r->packed_kernels.len = 0; /* data stays for free_unpacked */
        expanded++;
    }
    return expanded;
}

/* --- the batcher's copy --------------------------------------------------- */

/* True when the groups of r carry fields this coding does not know. */
static bool kernel_unknown_fields(const Argus__V1__StepRecord *r)
{
    for (size_t i = 0; i < r->n_kernels; i++) {
        const Argus__V1__KernelGroup *g = r->kernels[i];

        if (g->base.n_unknown_fields)
            return true;
        for (size_t k = 0; k < g->n_clusters; k++)
            if (g->clusters[k]->base.n_unknown_fields)
                return true;
    }
    return false;
}

int kernel_code_compact(struct kernel_code_buf *buf, const Argus__V1__StepRecord *in,
                        Argus__V1__StepRecord *out)
{
    size_t need = kernel_code_bound(in);

    *out = *in;
    if (!in->n_kernels || in->packed_kernels.len || kernel_unknown_fields(in))
        return 0;
    if (need > buf->cap) {
        uint8_t *p = realloc(buf->bytes, need);

        if (!p)
            return -ENOMEM;
        buf->bytes = p;
        buf->cap = need;
    }
    out->packed_kernels.data = buf->bytes;
    out->packed_kernels.len = kernel_code_encode(in, buf->bytes);
    out->n_kernels = 0;
    out->kernels = NULL;
    return 0;
}

void kernel_code_buf_free(struct kernel_code_buf *buf)
{
    free(buf->bytes);
    memset(buf, 0, sizeof(*buf));
}
