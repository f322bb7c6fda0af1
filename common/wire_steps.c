/* The wire format of Batch.steps: see wire_steps.h. */
#include "common/wire_steps.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/varint.h"

#define TAG_STEPS WIRE_TAG(WIRE_BATCH_STEPS_FIELD, WIRE_TYPE_LEN)
#define TAG_KERNELS WIRE_TAG(WIRE_STEP_RECORD_KERNELS_FIELD, WIRE_TYPE_LEN)
#define TAG_NAME_ID WIRE_TAG(WIRE_KERNEL_GROUP_NAME_ID_FIELD, WIRE_TYPE_FIXED64)
#define TAG_STREAM WIRE_TAG(WIRE_KERNEL_GROUP_STREAM_FIELD, WIRE_TYPE_VARINT)
#define TAG_CLUSTERS WIRE_TAG(WIRE_KERNEL_GROUP_CLUSTERS_FIELD, WIRE_TYPE_LEN)
#define TAG_WORK_ID WIRE_TAG(WIRE_KERNEL_GROUP_WORK_ID_FIELD, WIRE_TYPE_FIXED32)
#define TAG_CLUSTER(field) WIRE_TAG(WIRE_CLUSTER_##field##_FIELD, WIRE_TYPE_VARINT)

/* --- encoding ------------------------------------------------------------- */

/* A proto3 scalar: sent only when not 0. */
static size_t scalar_size(uint64_t v)
{
    return v ? 1 + varint_size(v) : 0;
}

static uint8_t *scalar_put(uint8_t *p, uint8_t tag, uint64_t v)
{
    if (!v)
        return p;
    *p++ = tag;
    return varint_put(p, v);
}

static size_t cluster_size(const Argus__V1__Cluster *c)
{
    return scalar_size(c->count) + scalar_size(c->sum_ns) + scalar_size(c->p50_ns) +
           scalar_size(c->p99_ns) + scalar_size(c->min_ns) + scalar_size(c->max_ns);
}

static size_t group_size(const Argus__V1__KernelGroup *g)
{
    size_t n = (g->name_id ? 9 : 0) + scalar_size(g->stream) + (g->work_id ? 5 : 0);

    for (size_t i = 0; i < g->n_clusters; i++) {
        size_t c = cluster_size(g->clusters[i]);

        n += 1 + varint_size(c) + c;
    }
    return n;
}

static uint8_t *group_put(uint8_t *p, const Argus__V1__KernelGroup *g)
{
    if (g->name_id) {
        *p++ = TAG_NAME_ID;
        for (int b = 0; b < 8; b++)
            *p++ = (uint8_t)(g->name_id >> (8 * b));
    }
    p = scalar_put(p, TAG_STREAM, g->stream);
    for (size_t i = 0; i < g->n_clusters; i++) {
        const Argus__V1__Cluster *c = g->clusters[i];

        *p++ = TAG_CLUSTERS;
        p = varint_put(p, cluster_size(c));
        p = scalar_put(p, TAG_CLUSTER(COUNT), c->count);
        p = scalar_put(p, TAG_CLUSTER(SUM_NS), c->sum_ns);
        p = scalar_put(p, TAG_CLUSTER(P50_NS), c->p50_ns);
        p = scalar_put(p, TAG_CLUSTER(P99_NS), c->p99_ns);
        p = scalar_put(p, TAG_CLUSTER(MIN_NS), c->min_ns);
        p = scalar_put(p, TAG_CLUSTER(MAX_NS), c->max_ns);
    }
    if (g->work_id) { /* field 4, after the clusters: protobuf-c packs by number */
        *p++ = TAG_WORK_ID;
        for (int b = 0; b < 4; b++)
            *p++ = (uint8_t)(g->work_id >> (8 * b));
    }
    return p;
}

bool wire_steps_kernels_plain(const Argus__V1__StepRecord *s)
{
    for (size_t i = 0; i < s->n_kernels; i++) {
        const Argus__V1__KernelGroup *g = s->kernels[i];

        if (g->base.n_unknown_fields)
            return false;
        for (size_t k = 0; k < g->n_clusters; k++)
            if (g->clusters[k]->base.n_unknown_fields)
                return false;
    }
    return true;
}

/* The record split around the kernels (field 7): head has fields 1-6, tail
 * the rest (8 and up, and the record's unknown fields, which protobuf-c
 * writes last). */
static void split(const Argus__V1__StepRecord *s, Argus__V1__StepRecord *head,
                  Argus__V1__StepRecord *tail)
{
    argus__v1__step_record__init(head);
    head->job = s->job;
    head->rank = s->rank;
    head->step = s->step;
    head->start_unix_ns = s->start_unix_ns;
    head->duration_ns = s->duration_ns;
    head->n_phases = s->n_phases;
    head->phases = s->phases;
    *tail = *s;
    tail->job = NULL;
    tail->rank = 0;
    tail->step = tail->start_unix_ns = tail->duration_ns = 0;
    tail->n_phases = 0;
    tail->phases = NULL;
    tail->n_kernels = 0;
    tail->kernels = NULL;
}

size_t wire_steps_record_size(const Argus__V1__StepRecord *s)
{
    Argus__V1__StepRecord head, tail;
    size_t n;

    if (!wire_steps_kernels_plain(s))
        return argus__v1__step_record__get_packed_size(s);
    split(s, &head, &tail);
    n = argus__v1__step_record__get_packed_size(&head) +
        argus__v1__step_record__get_packed_size(&tail);
    for (size_t i = 0; i < s->n_kernels; i++) {
        size_t g = group_size(s->kernels[i]);

        n += 1 + varint_size(g) + g;
    }
    return n;
}

size_t wire_steps_record_pack(const Argus__V1__StepRecord *s, uint8_t *out)
{
    Argus__V1__StepRecord head, tail;
    uint8_t *p = out;

    if (!wire_steps_kernels_plain(s))
        return argus__v1__step_record__pack(s, out);
    split(s, &head, &tail);
    p += argus__v1__step_record__pack(&head, p);
    for (size_t i = 0; i < s->n_kernels; i++) {
        *p++ = TAG_KERNELS;
        p = varint_put(p, group_size(s->kernels[i]));
        p = group_put(p, s->kernels[i]);
    }
    p += argus__v1__step_record__pack(&tail, p);
    return (size_t)(p - out);
}

size_t wire_steps_entry_put(uint8_t *out, const Argus__V1__StepRecord *s, size_t record_size)
{
    uint8_t *p = out;

    *p++ = TAG_STEPS;
    p = varint_put(p, record_size);
    p += wire_steps_record_pack(s, p);
    return (size_t)(p - out);
}

/* --- decoding ------------------------------------------------------------- */

void wire_steps_reader_init(struct wire_steps_reader *r, const void *batch, size_t len)
{
    r->p = batch;
    r->end = r->p + len;
}

/* Skip the value of a varint or fixed-size field at r->p; false when it runs
 * past the end or the wire type is none of those. */
static bool skip_scalar(struct wire_steps_reader *r, uint64_t tag)
{
    uint64_t v;
    size_t n;

    switch (tag & 7) {
    case WIRE_TYPE_VARINT:
        return varint_get(&r->p, r->end, &v);
    case WIRE_TYPE_FIXED64:
        n = 8;
        break;
    case WIRE_TYPE_FIXED32:
        n = 4;
        break;
    default:
        return false;
    }
    if (n > (size_t)(r->end - r->p))
        return false;
    r->p += n;
    return true;
}

int wire_steps_next(struct wire_steps_reader *r, const uint8_t **record, size_t *len)
{
    uint64_t tag, n;

    while (r->p < r->end) {
        if (!varint_get(&r->p, r->end, &tag))
            return -EBADMSG;
        if ((tag & 7) != WIRE_TYPE_LEN) {
            if (!skip_scalar(r, tag))
                return -EBADMSG;
            continue;
        }
        if (!varint_get(&r->p, r->end, &n) || n > (uint64_t)(r->end - r->p))
            return -EBADMSG;
        r->p += n;
        if (tag == TAG_STEPS) {
            *record = r->p - n;
            *len = (size_t)n;
            return 1;
        }
    }
    return 0;
}
