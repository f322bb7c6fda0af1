/* The stored form of a step record: see store_stepform.h. */
#include "collector/store/store_stepform.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/varint.h"
#include "common/wire_steps.h"

/* Room for n elements of size bytes in *arr and n pointers in *ptrs, both
 * *cap long. 0 or -ENOMEM. */
static int stepform_reserve(void **arr, void **ptrs, size_t *cap, size_t n, size_t size)
{
    size_t c = *cap ? *cap : 64;
    void *a, *p;

    if (n <= *cap)
        return 0;
    while (c < n)
        c *= 2;
    a = realloc(*arr, c * size);
    if (a)
        *arr = a;
    p = a ? realloc(*ptrs, c * sizeof(void *)) : NULL;
    if (!p)
        return -ENOMEM;
    *ptrs = p;
    *cap = c;
    return 0;
}

static int stepform_buf(struct store_stepform *f, size_t n)
{
    uint8_t *p;

    if (n <= f->cap_buf)
        return 0;
    p = realloc(f->buf, n);
    if (!p)
        return -ENOMEM;
    f->buf = p;
    f->cap_buf = n;
    return 0;
}

/* A timestamp x against ref, both modulo 2^64; 0 (unknown) stays 0. *lossy
 * is set when x would come back as 0. */
static uint64_t ts_encode(uint64_t x, uint64_t ref, bool *lossy)
{
    uint64_t z = varint_zigzag(x - ref);

    if (x && z == UINT64_MAX)
        *lossy = true;
    return x ? z + 1 : 0;
}

static uint64_t ts_decode(uint64_t e, uint64_t ref)
{
    return e ? varint_unzigzag(e - 1) + ref : 0;
}

static void cluster_encode(Argus__V1__Cluster *c, const Argus__V1__Cluster *o)
{
    *c = *o;
    c->p99_ns = o->p99_ns - o->p50_ns;
    c->max_ns = o->max_ns - o->p99_ns;
    c->min_ns = o->p50_ns - o->min_ns;
    c->sum_ns = varint_zigzag(o->sum_ns - (uint64_t)o->count * o->p50_ns);
}

static void cluster_decode(Argus__V1__Cluster *c)
{
    c->p99_ns += c->p50_ns;
    c->max_ns += c->p99_ns;
    c->min_ns = c->p50_ns - c->min_ns;
    c->sum_ns = varint_unzigzag(c->sum_ns) + (uint64_t)c->count * c->p50_ns;
}

static void collective_encode(Argus__V1__Collective *c, const Argus__V1__Collective *o,
                              uint64_t start, bool *lossy)
{
    *c = *o;
    c->host_arrival_unix_ns = ts_encode(o->host_arrival_unix_ns, start, lossy);
    c->gpu_start_unix_ns = ts_encode(o->gpu_start_unix_ns, o->host_arrival_unix_ns, lossy);
    c->gpu_end_unix_ns = ts_encode(o->gpu_end_unix_ns, o->gpu_start_unix_ns, lossy);
    c->host_return_unix_ns = ts_encode(o->host_return_unix_ns, o->host_arrival_unix_ns, lossy);
}

static void collective_decode(Argus__V1__Collective *c, uint64_t start)
{
    c->host_arrival_unix_ns = ts_decode(c->host_arrival_unix_ns, start);
    c->gpu_start_unix_ns = ts_decode(c->gpu_start_unix_ns, c->host_arrival_unix_ns);
    c->gpu_end_unix_ns = ts_decode(c->gpu_end_unix_ns, c->gpu_start_unix_ns);
    c->host_return_unix_ns = ts_decode(c->host_return_unix_ns, c->host_arrival_unix_ns);
}

/* Copy r's kernel groups and their clusters into f, coded. */
static int kernels_encode(struct store_stepform *f, const Argus__V1__StepRecord *r)
{
    size_t ncl = 0, k = 0;

    for (size_t i = 0; i < r->n_kernels; i++)
        ncl += r->kernels[i]->n_clusters;
    if (stepform_reserve((void **)&f->kg, (void **)&f->kg_p, &f->cap_kg, r->n_kernels,
                         sizeof(*f->kg)) ||
        stepform_reserve((void **)&f->cl, (void **)&f->cl_p, &f->cap_cl, ncl, sizeof(*f->cl)))
        return -ENOMEM;
    for (size_t i = 0; i < r->n_kernels; i++) {
        const Argus__V1__KernelGroup *o = r->kernels[i];

        f->kg[i] = *o;
        f->kg[i].clusters = f->cl_p + k;
        for (size_t c = 0; c < o->n_clusters; c++, k++) {
            cluster_encode(&f->cl[k], o->clusters[c]);
            f->cl_p[k] = &f->cl[k];
        }
        f->kg_p[i] = &f->kg[i];
    }
    return 0;
}

long store_stepform_encode(struct store_stepform *f, const Argus__V1__StepRecord *r)
{
    Argus__V1__StepRecord c = *r;
    bool lossy = false;
    size_t n;

    if (kernels_encode(f, r) || stepform_reserve((void **)&f->co, (void **)&f->co_p, &f->cap_co,
                                                 r->n_collectives, sizeof(*f->co)))
        return -ENOMEM;
    for (size_t i = 0; i < r->n_collectives; i++) {
        collective_encode(&f->co[i], r->collectives[i], r->start_unix_ns, &lossy);
        f->co_p[i] = &f->co[i];
    }
    if (lossy)
        return 0;
    c.job = "";
    c.rank = 0;
    c.step = 0;
    c.kernels = f->kg_p;
    c.collectives = f->co_p;
    n = wire_steps_record_size(&c);
    if (stepform_buf(f, n + 1))
        return -ENOMEM;
    f->buf[0] = STORE_STEPFORM_COMPACT;
    return (long)(1 + wire_steps_record_pack(&c, f->buf + 1));
}

/* ---- restoring on the wire, without unpacking ---------------------------- */

/* Step over one field value of wire type wt at *p. false when malformed. */
static bool field_skip(const uint8_t **p, const uint8_t *end, unsigned wt)
{
    uint64_t v;

    if (wt == WIRE_TYPE_VARINT)
        return varint_get(p, end, &v);
    if (wt == WIRE_TYPE_FIXED64 || wt == WIRE_TYPE_FIXED32) {
        v = wt == WIRE_TYPE_FIXED64 ? 8 : 4;
    } else if (wt != WIRE_TYPE_LEN || !varint_get(p, end, &v)) {
        return false;
    }
    if (v > (uint64_t)(end - *p))
        return false;
    *p += v;
    return true;
}

static uint8_t *put_scalar(uint8_t *o, unsigned field, uint64_t v)
{
    if (!v)
        return o;
    *o++ = WIRE_TAG(field, WIRE_TYPE_VARINT);
    return varint_put(o, v);
}

/* Write a length-delimited field whose body was written at o + 6 (len
 * bytes) as tag, length, body at o. Returns its end. */
static uint8_t *put_nested(uint8_t *o, unsigned field, size_t len)
{
    uint8_t *b = varint_put(o + 1, len);

    o[0] = WIRE_TAG(field, WIRE_TYPE_LEN);
    memmove(b, o + 6, len);
    return b + len;
}

/* Restore the compact Cluster [p, end) at o. NULL when it holds a field the
 * compact form does not write (the caller unpacks instead). */
static uint8_t *cluster_restore(const uint8_t *p, const uint8_t *end, uint8_t *o)
{
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT;
    uint64_t v[7] = {0}, key;

    while (p < end)
        if (!varint_get(&p, end, &key) || (key & 7) != WIRE_TYPE_VARINT || key >> 3 < 1 ||
            key >> 3 > 6 || !varint_get(&p, end, &v[key >> 3]))
            return NULL;
    c.count = (uint32_t)v[1];
    c.sum_ns = v[2];
    c.p50_ns = v[3];
    c.p99_ns = v[4];
    c.min_ns = v[5];
    c.max_ns = v[6];
    cluster_decode(&c);
    o = put_scalar(o, 1, c.count);
    o = put_scalar(o, 2, c.sum_ns);
    o = put_scalar(o, 3, c.p50_ns);
    o = put_scalar(o, 4, c.p99_ns);
    o = put_scalar(o, 5, c.min_ns);
    return put_scalar(o, 6, c.max_ns);
}

/* Restore the body of a KernelGroup (k) or a Collective (!k) [p, end) at o:
 * clusters and the four timestamps decoded, other fields copied. */
static uint8_t *nested_restore(const uint8_t *p, const uint8_t *end, uint8_t *o, bool k,
                               uint64_t start)
{
    uint64_t key, v, ha = 0, gs = 0;

    while (o && p < end) {
        const uint8_t *f = p;
        uint8_t *b;
        unsigned n;

        if (!varint_get(&p, end, &key))
            return NULL;
        n = (unsigned)(key >> 3);
        if (k && n == WIRE_KERNEL_GROUP_CLUSTERS_FIELD && (key & 7) == WIRE_TYPE_LEN) {
            if (!varint_get(&p, end, &v) || v > (uint64_t)(end - p))
                return NULL;
            b = cluster_restore(p, p + v, o + 6);
            o = b ? put_nested(o, n, (size_t)(b - (o + 6))) : NULL;
            p += v;
        } else if (!k && (key & 7) == WIRE_TYPE_VARINT && (n == 4 || n == 5 || n == 6 || n == 9)) {
            if (!varint_get(&p, end, &v))
                return NULL;
            v = ts_decode(v, n == 4 ? start : n == 6 ? gs : ha);
            ha = n == 4 ? v : ha;
            gs = n == 5 ? v : gs;
            o = put_scalar(o, n, v);
        } else {
            if (!field_skip(&p, end, key & 7))
                return NULL;
            memcpy(o, f, (size_t)(p - f));
            o += p - f;
        }
    }
    return o;
}

/* The record's start (field 4), 0 when absent. */
static uint64_t record_start(const uint8_t *p, const uint8_t *end)
{
    uint64_t key, v = 0;

    while (p < end && varint_get(&p, end, &key)) {
        if (key == WIRE_TAG(4, WIRE_TYPE_VARINT))
            return varint_get(&p, end, &v) ? v : 0;
        if (!field_skip(&p, end, key & 7))
            break;
    }
    return 0;
}

/* Restore the compact record [p, end) under job, step, rank into f->buf
 * without unpacking it. Returns its length, 0 when the slow path must do
 * it, -ENOMEM. */
static long wire_restore(struct store_stepform *f, const char *job, uint64_t step, uint32_t rank,
                         const uint8_t *p, const uint8_t *end)
{
    size_t jl = strlen(job);
    uint64_t start = record_start(p, end), key, v;
    uint8_t *o;

    /* a cluster grows from 2 bytes to at most 68, a timestamp by 9 */
    if (stepform_buf(f, 40 * (size_t)(end - p) + jl + 64))
        return -ENOMEM;
    o = f->buf;
    if (jl) {
        *o++ = WIRE_TAG(1, WIRE_TYPE_LEN);
        o = varint_put(o, jl);
        memcpy(o, job, jl);
        o += jl;
    }
    o = put_scalar(put_scalar(o, 2, rank), 3, step);
    while (o && p < end) {
        const uint8_t *fs = p;
        unsigned n;

        if (!varint_get(&p, end, &key))
            return 0;
        n = (unsigned)(key >> 3);
        if ((n == WIRE_STEP_RECORD_KERNELS_FIELD || n == 9) && (key & 7) == WIRE_TYPE_LEN) {
            uint8_t *b;

            if (!varint_get(&p, end, &v) || v > (uint64_t)(end - p))
                return 0;
            b = nested_restore(p, p + v, o + 6, n == WIRE_STEP_RECORD_KERNELS_FIELD, start);
            o = b ? put_nested(o, n, (size_t)(b - (o + 6))) : NULL;
            p += v;
        } else {
            if (!field_skip(&p, end, key & 7))
                return 0;
            memcpy(o, fs, (size_t)(p - fs));
            o += p - fs;
        }
    }
    return o ? (long)(o - f->buf) : 0;
}

int store_stepform_decode(struct store_stepform *f, const char *job, uint64_t step, uint32_t rank,
                          const void *v, size_t vlen, const void **out, size_t *outlen)
{
    Argus__V1__StepRecord *u;
    char *own_job;
    size_t n;
    long wl;
    int rc = 0;

    *out = v;
    *outlen = vlen;
    if (!vlen || *(const uint8_t *)v != STORE_STEPFORM_COMPACT)
        return 0;
    wl = wire_restore(f, job, step, rank, (const uint8_t *)v + 1, (const uint8_t *)v + vlen);
    if (wl) {
        *out = f->buf;
        *outlen = wl > 0 ? (size_t)wl : 0;
        return wl > 0 ? 0 : (int)wl;
    }
    u = argus__v1__step_record__unpack(NULL, vlen - 1, (const uint8_t *)v + 1);
    if (!u)
        return -EBADMSG;
    for (size_t i = 0; i < u->n_kernels; i++)
        for (size_t c = 0; c < u->kernels[i]->n_clusters; c++)
            cluster_decode(u->kernels[i]->clusters[c]);
    for (size_t i = 0; i < u->n_collectives; i++)
        collective_decode(u->collectives[i], u->start_unix_ns);
    own_job = u->job; /* protobuf-c's to free */
    u->job = (char *)job;
    u->rank = rank;
    u->step = step;
    n = wire_steps_record_size(u);
    if (stepform_buf(f, n ? n : 1) == 0) {
        *out = f->buf;
        *outlen = wire_steps_record_pack(u, f->buf);
    } else {
        rc = -ENOMEM;
    }
    u->job = own_job;
    argus__v1__step_record__free_unpacked(u, NULL);
    return rc;
}

void store_stepform_free(struct store_stepform *f)
{
    free(f->kg);
    free(f->kg_p);
    free(f->cl);
    free(f->cl_p);
    free(f->co);
    free(f->co_p);
    free(f->buf);
    *f = (struct store_stepform){0};
}
