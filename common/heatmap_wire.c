/* Reading a cell from packed bytes: see heatmap_wire.h. */
#include "common/heatmap_wire.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/heatmap.h"
#include "common/varint.h"

/* StepRecord and Collective field numbers (proto/argus.proto). */
enum {
    WIRE_STEP_RANK = 2,
    WIRE_STEP_STEP = 3,
    WIRE_STEP_START = 4,
    WIRE_STEP_DURATION = 5,
    WIRE_STEP_COLLECTIVES = 9,
    WIRE_COLL_HOST_ARRIVAL = 4,
    WIRE_COLL_GPU_START = 5,
    WIRE_COLL_GPU_END = 6,
    WIRE_COLL_HOST_RETURN = 9,
};

/* One field at *p: its number and wire type, a varint's value, or a
 * length-delimited field's bytes [*sub, *sub + *sublen). Fixed fields are
 * skipped. False when malformed. */
static bool wire_field(const uint8_t **p, const uint8_t *end, uint32_t *field, uint64_t *v,
                       const uint8_t **sub, size_t *sublen)
{
    uint64_t key;

    *sub = NULL;
    if (!varint_get(p, end, &key) || key >> 32)
        return false;
    *field = (uint32_t)(key >> 3);
    switch (key & 7) {
    case 0:
        return varint_get(p, end, v);
    case 1:
        *p += 8;
        return *p <= end;
    case 5:
        *p += 4;
        return *p <= end;
    case 2:
        if (!varint_get(p, end, v) || *v > (uint64_t)(end - *p))
            return false;
        *sub = *p;
        *sublen = (size_t)*v;
        *p += *v;
        return true;
    default:
        return false;
    }
}

/* A collective's interval; false when malformed, *timed when it has one. */
static bool wire_collective(const uint8_t *p, size_t len, struct heatmap_span *sp, bool *timed)
{
    const uint8_t *end = p + len, *sub;
    uint64_t t[10] = {0}, v = 0;
    uint32_t field;
    size_t sublen;

    while (p < end) {
        if (!wire_field(&p, end, &field, &v, &sub, &sublen))
            return false;
        if (!sub && field < 10)
            t[field] = v;
    }
    *timed = heatmap_coll_span(t[WIRE_COLL_GPU_START], t[WIRE_COLL_GPU_END],
                               t[WIRE_COLL_HOST_ARRIVAL], t[WIRE_COLL_HOST_RETURN], sp);
    return true;
}

/* Append a span to the growing array *sp (stack first, then heap). */
static int wire_push(struct heatmap_span **sp, size_t *n, size_t *cap, struct heatmap_span *stack,
                     struct heatmap_span s)
{
    if (*n == *cap) {
        struct heatmap_span *grown = malloc(*cap * 2 * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
            grown[i] = (*sp)[i];
        if (*sp != stack)
            free(*sp);
        *sp = grown;
        *cap *= 2;
    }
    (*sp)[(*n)++] = s;
    return 0;
}

int heatmap_wire_cell(const void *buf, size_t len, struct heatmap_wire_cell *out)
{
    struct heatmap_span stack[32], *sp = stack, one;
    const uint8_t *p = buf, *end = p + len, *sub;
    uint64_t v = 0, start = 0;
    size_t n = 0, cap = 32, sublen;
    uint32_t field;
    bool timed;
    int r = 0;

    *out = (struct heatmap_wire_cell){0};
    while (p < end && r == 0) {
        if (!wire_field(&p, end, &field, &v, &sub, &sublen))
            r = -EBADMSG;
        else if (sub && field == WIRE_STEP_COLLECTIVES)
            r = !wire_collective(sub, sublen, &one, &timed) ? -EBADMSG
                : timed                                     ? wire_push(&sp, &n, &cap, stack, one)
                                                            : 0;
        else if (!sub && field == WIRE_STEP_RANK)
            out->rank = (uint32_t)v;
        else if (!sub && field == WIRE_STEP_STEP)
            out->step = v;
        else if (!sub && field == WIRE_STEP_START)
            start = v;
        else if (!sub && field == WIRE_STEP_DURATION)
            out->duration_ns = v;
    }
    if (r == 0)
        out->own_ns = heatmap_own_spans(start, out->duration_ns, sp, n);
    if (sp != stack)
        free(sp);
    return r;
}
