/* Collective matching and clock alignment: see diag_colls.h. */
#include "collector/diag/diag_colls.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

struct diag_colls_entry {
    uint64_t comm, seq;
    uint32_t count;
    uint8_t name;
    bool used;
    double sum_start, sum_arrival, sum_end;
    double max_start;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Put every collective call of f in the table keyed by (comm, name, seq). */
static void table_build(struct diag_colls *l, const struct diag_frame *f)
{
    size_t mask = l->table_cap - 1;

    memset(l->table, 0, l->table_cap * sizeof(*l->table));
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        size_t h = mix(c->comm_id ^ mix(c->seq * 31 + c->name)) & mask;
        while (l->table[h].used && !(l->table[h].comm == c->comm_id && l->table[h].seq == c->seq &&
                                     l->table[h].name == c->name))
            h = (h + 1) & mask;
        struct diag_colls_entry *e = &l->table[h];
        e->used = true;
        e->comm = c->comm_id;
        e->seq = c->seq;
        e->name = c->name;
        e->count++;
        l->slot_of[i] = (uint32_t)h;
    }
}

/* One Jacobi round: each rank's offset moves to where its collective end
 * times agree with its peers', each call weighted by its number of peers (a
 * 32-member all-reduce says more than a pair on the same node). */
static void offsets_round(struct diag_colls *l, const struct diag_frame *f)
{
    for (size_t i = 0; i < l->table_cap; i++)
        l->table[i].sum_end = 0;
    memset(l->resid, 0, l->cap * sizeof(double));
    memset(l->resid_w, 0, l->cap * sizeof(double));
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        l->table[l->slot_of[i]].sum_end += (double)c->end - l->offset[c->rank];
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        const struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        if (e->count < 2)
            continue;
        double w = e->count - 1;
        l->resid[c->rank] += w * ((double)c->end - l->offset[c->rank] - e->sum_end / e->count);
        l->resid_w[c->rank] += w;
    }
    for (uint32_t r = 0; r < l->cap; r++)
        if (l->resid_w[r] > 0)
            l->offset[r] += l->resid[r] / l->resid_w[r];
}

/* This step's offsets by a few rounds from the last estimate, then blended
 * into it: a running mean over the first steps, an EWMA after. */
static void estimate_offsets(struct diag_colls *l, const struct diag_frame *f)
{
    if (f->n_colls == 0)
        return;
    memcpy(l->prev, l->offset, l->cap * sizeof(double));
    for (int i = 0; i < (l->offset_steps ? 3 : 6); i++)
        offsets_round(l, f);
    double a = 1.0 / (l->offset_steps + 1);
    if (a < l->alpha)
        a = l->alpha;
    for (uint32_t r = 0; r < l->cap; r++)
        l->offset[r] = l->prev[r] + a * (l->offset[r] - l->prev[r]);
    l->offset_steps++;
}

/* Lateness and transfer time of every call, with clocks aligned. */
static void match_colls(struct diag_colls *l, const struct diag_frame *f)
{
    memset(l->late, 0, l->cap * sizeof(double));
    memset(l->wait, 0, l->cap * sizeof(double));
    memset(l->transfer, 0, (size_t)l->cap * DIAG_MAX_COLL_NAMES * sizeof(double));
    memset(l->calls, 0, (size_t)l->cap * DIAG_MAX_COLL_NAMES * sizeof(uint32_t));
    for (size_t i = 0; i < l->table_cap; i++)
        l->table[i].max_start = -INFINITY;
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        double off = l->offset[c->rank], s = (double)c->start - off;
        e->sum_start += s;
        e->sum_arrival += (double)c->arrival - off;
        if (s > e->max_start)
            e->max_start = s;
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        const struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        double off = l->offset[c->rank];
        if (e->count < 2)
            continue;
        double late = (double)c->start - off - e->sum_start / e->count;
        double arr = (double)c->arrival - off - e->sum_arrival / e->count;
        double xfer = (double)c->end - off - e->max_start;
        /* Late by GPU start or by host arrival (a deep GPU queue can hide a
         * host stall from the start time); the worst call counts. */
        if (arr > late)
            late = arr;
        if (late > l->late[c->rank])
            l->late[c->rank] = late;
        double wait = e->max_start - ((double)c->start - off);
        l->wait[c->rank] += wait > 0 ? wait : 0;
        size_t k = (size_t)c->rank * DIAG_MAX_COLL_NAMES + c->name;
        l->transfer[k] += xfer > 0 ? xfer : 0;
        l->calls[k]++;
    }
    /* Mean transfer per call, so evidence reads per call of that name. */
    for (size_t k = 0; k < (size_t)l->cap * DIAG_MAX_COLL_NAMES; k++)
        if (l->calls[k] > 1)
            l->transfer[k] /= l->calls[k];
}

void diag_colls_init(struct diag_colls *l, double alpha)
{
    memset(l, 0, sizeof(*l));
    l->alpha = alpha > 0 && alpha <= 1 ? alpha : 0.1;
}

void diag_colls_free(struct diag_colls *l)
{
    free(l->offset);
    free(l->late);
    free(l->wait);
    free(l->transfer);
    free(l->calls);
    free(l->resid);
    free(l->resid_w);
    free(l->prev);
    free(l->table);
    free(l->slot_of);
    diag_colls_init(l, l->alpha);
}

double diag_colls_offset(const struct diag_colls *l, uint32_t rank)
{
    return rank < l->cap ? l->offset[rank] : 0;
}

static int reserve_ranks(struct diag_colls *l, uint32_t cap)
{
    size_t o = l->cap, c = cap, nc = DIAG_MAX_COLL_NAMES;
    int err;

    if (cap <= l->cap)
        return 0;
    err = array_grow_zeroed((void **)&l->offset, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->late, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->wait, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->transfer, o * nc, c * nc, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->calls, o * nc, c * nc, sizeof(uint32_t));
    err = err ? err : array_grow_zeroed((void **)&l->resid, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->resid_w, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->prev, o, c, sizeof(double));
    if (!err)
        l->cap = cap;
    return err;
}

static int reserve_calls(struct diag_colls *l, size_t colls)
{
    size_t tc = 16;

    while (tc < colls * 2)
        tc *= 2;
    if (tc > l->table_cap) {
        if (array_grow_zeroed((void **)&l->table, 0, tc, sizeof(struct diag_colls_entry)))
            return -ENOMEM;
        l->table_cap = tc;
    }
    if (colls > l->slot_cap) {
        if (array_grow_zeroed((void **)&l->slot_of, 0, colls, sizeof(uint32_t)))
            return -ENOMEM;
        l->slot_cap = colls;
    }
    return 0;
}

int diag_colls_run(struct diag_colls *l, const struct diag_frame *f, uint32_t cap)
{
    int err = reserve_ranks(l, cap > f->cap ? cap : f->cap);

    err = err ? err : reserve_calls(l, f->n_colls);
    if (err)
        return err;
    table_build(l, f);
    if (!l->frozen) {
        estimate_offsets(l, f);
        match_colls(l, f);
        return 0;
    }
    memcpy(l->prev, l->offset, l->cap * sizeof(double));
    for (int i = 0; i < 3 && f->n_colls; i++)
        offsets_round(l, f);
    match_colls(l, f);
    memcpy(l->offset, l->prev, l->cap * sizeof(double));
    return 0;
}
