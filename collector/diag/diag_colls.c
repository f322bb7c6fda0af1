/* Collective matching and clock alignment: see diag_colls.h. */
#include "collector/diag/diag_colls.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

struct diag_colls_entry {
    uint64_t comm, seq;
    uint32_t count, n_end;
    uint32_t last_rank;
    uint8_t name;
    bool used, by_order;
    double sum_start, sum_arrival, sum_end;
    double max_start, min_start;
};

struct diag_colls_gap {
    uint32_t rank;
    double gap;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* The slot of key (comm, name, seq, by_order), inserted when missing. */
static uint32_t table_slot(struct diag_colls *l, uint64_t comm, uint8_t name, uint64_t seq,
                           bool by_order)
{
    size_t mask = l->table_cap - 1;
    size_t h = mix(comm ^ mix(seq * 31 + name) ^ (by_order ? 0x9e3779b97f4a7c15ULL : 0)) & mask;

    while (l->table[h].used && !(l->table[h].comm == comm && l->table[h].seq == seq &&
                                 l->table[h].name == name && l->table[h].by_order == by_order))
        h = (h + 1) & mask;
    struct diag_colls_entry *e = &l->table[h];
    if (!e->used)
        l->used[l->n_used++] = (uint32_t)h;
    e->used = true;
    e->comm = comm;
    e->seq = seq;
    e->name = name;
    e->by_order = by_order;
    return (uint32_t)h;
}

/* Put every collective call of f in the table keyed by (comm, name, seq),
 * or (comm, name, ordinal) when its seq is local (counted by each agent from
 * when it attached: equal numbers need not be the same call); the calls that
 * match nobody go by (name, ordinal). */
static void table_build(struct diag_colls *l, const struct diag_frame *f)
{
    /* only the slots the last frame used: the table is 2x the calls, 72
     * bytes a slot (9 MB at 10,240 ranks) */
    for (size_t i = 0; i < l->n_used; i++)
        memset(&l->table[l->used[i]], 0, sizeof(*l->table));
    l->n_used = 0;
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        l->slot_of[i] = c->local ? table_slot(l, c->comm_id, c->name, c->ord, true)
                                 : table_slot(l, c->comm_id, c->name, c->seq, false);
        l->table[l->slot_of[i]].count++;
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        if (l->table[l->slot_of[i]].count != 1 || l->table[l->slot_of[i]].by_order)
            continue;
        l->table[l->slot_of[i]].count = 0;
        l->slot_of[i] = table_slot(l, 0, c->name, c->ord, true);
        l->table[l->slot_of[i]].count++;
    }
    for (size_t i = 0; i < f->n_colls; i++)
        l->table[l->slot_of[i]].n_end += f->colls[i].end != 0;
}

static uint32_t domain_of(const struct diag_colls *l, uint32_t rank)
{
    return l->domain && rank < l->n_domain ? l->domain[rank] : rank;
}

/* Every rank of a clock domain has the domain's offset (a rank whose node
 * became known later took its own until now). */
static void offsets_by_domain(struct diag_colls *l)
{
    for (uint32_t r = 0; l->domain && r < l->cap && r < l->n_domain; r++)
        if (l->domain[r] < r)
            l->offset[r] = l->offset[l->domain[r]];
}

/* One Jacobi round: each clock domain's offset moves to where the
 * collective end times of its ranks agree with their peers', each call
 * weighted by its number of peers (a 32-member all-reduce says more than a
 * pair on the same node). By domain, not by rank: a rank's offset is pulled
 * by the calls of its tensor-parallel group (8 members, its own node) and
 * of its data-parallel group (1,280 ranks of the same GPU index at 10,240
 * ranks); per rank, at 1,279 to 7, the offsets of a whole data-parallel
 * group could drift together against the other groups (nothing in its own
 * calls shows it), corrected by ~1% a step, and each step's noise walked
 * them hundreds of us apart: a slow "transfer" of every rank of that group
 * (a false LINK page of 1,280 ranks in bench-detect). One clock per node
 * has no such freedom. */
static void offsets_round(struct diag_colls *l, const struct diag_frame *f)
{
    for (size_t i = 0; i < l->n_used; i++)
        l->table[l->used[i]].sum_end = 0;
    memset(l->resid, 0, l->cap * sizeof(double));
    memset(l->resid_w, 0, l->cap * sizeof(double));
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        if (c->end)
            l->table[l->slot_of[i]].sum_end += (double)c->end - l->offset[c->rank];
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        const struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        if (e->n_end < 2 || !c->end)
            continue;
        double w = e->n_end - 1;
        uint32_t d = domain_of(l, c->rank);
        l->resid[d] += w * ((double)c->end - l->offset[c->rank] - e->sum_end / e->n_end);
        l->resid_w[d] += w;
    }
    for (uint32_t r = 0; r < l->cap; r++) {
        uint32_t d = domain_of(l, r);
        if (l->resid_w[d] > 0)
            l->offset[r] += l->resid[d] / l->resid_w[d];
    }
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
    for (size_t i = 0; i < l->n_used; i++) {
        l->table[l->used[i]].max_start = -INFINITY;
        l->table[l->used[i]].min_start = INFINITY;
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        double off = l->offset[c->rank], s = (double)c->start - off;
        e->sum_start += s;
        e->sum_arrival += (double)c->arrival - off;
        if (s > e->max_start) {
            e->max_start = s;
            e->last_rank = c->rank;
        }
        if (s < e->min_start)
            e->min_start = s;
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        const struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        double off = l->offset[c->rank];
        if (e->count < 2)
            continue;
        double late = (double)c->start - off - e->sum_start / e->count;
        double arr = (double)c->arrival - off - e->sum_arrival / e->count;
        double xfer = c->end ? (double)c->end - off - e->max_start : 0;
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

static int gap_cmp(const void *a, const void *b)
{
    const struct diag_colls_gap *x = a, *y = b;

    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->gap < y->gap ? -1 : x->gap > y->gap;
}

/* Who arrived last at each matched call, by how much after the first, and
 * how often each rank would be last by chance. */
static void last_arrivals(struct diag_colls *l, const struct diag_frame *f)
{
    size_t n = 0;

    memset(l->part, 0, l->cap * sizeof(uint32_t));
    memset(l->last, 0, l->cap * sizeof(uint32_t));
    memset(l->chance, 0, l->cap * sizeof(double));
    memset(l->gap, 0, l->cap * sizeof(double));
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_colls_entry *e = &l->table[l->slot_of[i]];
        if (e->count < 2)
            continue;
        l->part[f->colls[i].rank]++;
        l->chance[f->colls[i].rank] += 1.0 / e->count;
    }
    /* in use order, not slot order: the sort below orders the gaps */
    for (size_t i = 0; i < l->n_used; i++) {
        const struct diag_colls_entry *e = &l->table[l->used[i]];
        if (e->count < 2)
            continue;
        l->last[e->last_rank]++;
        l->gaps[n++] = (struct diag_colls_gap){e->last_rank, e->max_start - e->min_start};
    }
    if (n > 1)
        qsort(l->gaps, n, sizeof(*l->gaps), gap_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && l->gaps[j].rank == l->gaps[i].rank)
            j++;
        size_t m = i + (j - i) / 2;
        l->gap[l->gaps[i].rank] =
            (j - i) % 2 ? l->gaps[m].gap : (l->gaps[m - 1].gap + l->gaps[m].gap) / 2;
        i = j;
    }
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
    free(l->part);
    free(l->last);
    free(l->chance);
    free(l->gap);
    free(l->gaps);
    free(l->resid);
    free(l->resid_w);
    free(l->prev);
    free(l->table);
    free(l->slot_of);
    free(l->used);
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
    err = err ? err : array_grow_zeroed((void **)&l->part, o, c, sizeof(uint32_t));
    err = err ? err : array_grow_zeroed((void **)&l->last, o, c, sizeof(uint32_t));
    err = err ? err : array_grow_zeroed((void **)&l->chance, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->gap, o, c, sizeof(double));
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
        if (array_grow_zeroed((void **)&l->table, 0, tc, sizeof(struct diag_colls_entry)) ||
            array_grow_zeroed((void **)&l->used, 0, tc, sizeof(uint32_t)))
            return -ENOMEM;
        l->table_cap = tc;
        l->n_used = 0; /* all zeroed */
    }
    if (colls > l->slot_cap) {
        if (array_grow_zeroed((void **)&l->slot_of, 0, colls, sizeof(uint32_t)) ||
            array_grow_zeroed((void **)&l->gaps, 0, colls, sizeof(struct diag_colls_gap)))
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
    offsets_by_domain(l);
    if (!l->frozen) {
        estimate_offsets(l, f);
        match_colls(l, f);
        last_arrivals(l, f);
        return 0;
    }
    memcpy(l->prev, l->offset, l->cap * sizeof(double));
    for (int i = 0; i < 3 && f->n_colls; i++)
        offsets_round(l, f);
    match_colls(l, f);
    last_arrivals(l, f);
    memcpy(l->offset, l->prev, l->cap * sizeof(double));
    return 0;
}
