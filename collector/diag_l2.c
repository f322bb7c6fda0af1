/* L2 rank and phase: see diag_l2.h. */
#include "collector/diag_l2.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag_stats.h"

struct diag_l2_cand {
    double pz, pv, pm; /* best high compute phase: z, value, group median */
    int pi;            /* its index, -1 none */
    bool busy_hi, busy_known;
    double lz, lv, lm; /* best high transfer */
    int li;
    bool pexpert, lexpert; /* found in expert groups */
    double busy_ratio;     /* own kernel busy time / group median */
    double hz, hv, hm;     /* lateness */
    bool host_late;
};

struct diag_l2_entry {
    uint64_t comm, seq;
    uint32_t count;
    uint8_t name;
    bool used;
    double sum_start, sum_arrival, sum_end;
    double max_start;
};

void diag_l2_init(struct diag_l2 *l, const struct diag_l2_options *o)
{
    memset(l, 0, sizeof(*l));
    l->o = *o;
    if (l->o.z <= 0)
        l->o.z = 5;
    if (l->o.min_effect <= 0)
        l->o.min_effect = 0.10;
    if (l->o.link_ratio <= 1)
        l->o.link_ratio = 1.3;
    if (l->o.group_ratio <= 1)
        l->o.group_ratio = 1.5;
    if (l->o.host_late_frac <= 0)
        l->o.host_late_frac = 0.05;
    if (l->o.offset_alpha <= 0 || l->o.offset_alpha > 1)
        l->o.offset_alpha = 0.1;
    if (l->o.abs_floor_ns <= 0)
        l->o.abs_floor_ns = 20000;
    if (l->o.rel_floor <= 0)
        l->o.rel_floor = 0.01;
}

void diag_l2_free(struct diag_l2 *l)
{
    free(l->offset);
    free(l->late);
    free(l->arr_late);
    free(l->wait);
    free(l->transfer);
    free(l->calls);
    free(l->resid);
    free(l->vals);
    free(l->scratch);
    free(l->resid_w);
    free(l->prev);
    free(l->busy_last_ratio);
    free(l->busy_age);
    free(l->busy_last);
    free(l->who);
    free(l->cand);
    free(l->table);
    free(l->slot_of);
    struct diag_l2_options o = l->o;
    memset(l, 0, sizeof(*l));
    l->o = o;
}

void diag_l2_rebase(struct diag_l2 *l)
{
    memset(l->phase_hist_n, 0, sizeof(l->phase_hist_n));
    l->busy_hist_n = 0;
}

double diag_l2_offset(const struct diag_l2 *l, uint32_t rank)
{
    return rank < l->cap ? l->offset[rank] : 0;
}

/* realloc *p to n elements of size sz, zeroing the new tail from old. */
static int grow(void **p, size_t old, size_t n, size_t sz)
{
    void *t = realloc(*p, n * sz);

    if (!t)
        return -ENOMEM;
    memset((char *)t + old * sz, 0, (n - old) * sz);
    *p = t;
    return 0;
}

static int reserve(struct diag_l2 *l, uint32_t cap, size_t colls)
{
    int err = 0;

    if (cap > l->cap) {
        size_t o = l->cap, c = cap, nc = DIAG_MAX_COLL_NAMES;
        err = grow((void **)&l->offset, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->late, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->arr_late, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->wait, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->transfer, o * nc, c * nc, sizeof(double));
        err = err ? err : grow((void **)&l->calls, o * nc, c * nc, sizeof(uint32_t));
        err = err ? err : grow((void **)&l->resid, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->vals, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->scratch, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->resid_w, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->prev, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->busy_last_ratio, o, c, sizeof(double));
        err = err ? err : grow((void **)&l->busy_age, o, c, sizeof(uint32_t));
        err = err ? err : grow((void **)&l->busy_last, o, c, sizeof(uint8_t));
        err = err ? err : grow((void **)&l->who, o, c, sizeof(uint32_t));
        err = err ? err : grow((void **)&l->cand, o, c, sizeof(struct diag_l2_cand));
        if (err)
            return err;
        l->cap = cap;
    }
    size_t tc = 16;
    while (tc < colls * 2)
        tc *= 2;
    if (tc > l->table_cap) {
        err = grow((void **)&l->table, 0, tc, sizeof(struct diag_l2_entry));
        if (err)
            return err;
        l->table_cap = tc;
    }
    if (colls > l->slot_cap) {
        err = grow((void **)&l->slot_of, 0, colls, sizeof(uint32_t));
        if (err)
            return err;
        l->slot_cap = colls;
    }
    return 0;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Put every collective call of f in the table keyed by (comm, name, seq). */
static void table_build(struct diag_l2 *l, const struct diag_frame *f)
{
    size_t mask = l->table_cap - 1;

    memset(l->table, 0, l->table_cap * sizeof(*l->table));
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        size_t h = mix(c->comm_id ^ mix(c->seq * 31 + c->name)) & mask;
        while (l->table[h].used && !(l->table[h].comm == c->comm_id && l->table[h].seq == c->seq &&
                                     l->table[h].name == c->name))
            h = (h + 1) & mask;
        struct diag_l2_entry *e = &l->table[h];
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
static void offsets_round(struct diag_l2 *l, const struct diag_frame *f)
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
        const struct diag_l2_entry *e = &l->table[l->slot_of[i]];
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
static void estimate_offsets(struct diag_l2 *l, const struct diag_frame *f)
{
    if (f->n_colls == 0)
        return;
    memcpy(l->prev, l->offset, l->cap * sizeof(double));
    for (int i = 0; i < (l->offset_steps ? 3 : 6); i++)
        offsets_round(l, f);
    double a = 1.0 / (l->offset_steps + 1);
    if (a < l->o.offset_alpha)
        a = l->o.offset_alpha;
    for (uint32_t r = 0; r < l->cap; r++)
        l->offset[r] = l->prev[r] + a * (l->offset[r] - l->prev[r]);
    l->offset_steps++;
}

/* Lateness and transfer time of every call, with clocks aligned. */
static void match_colls(struct diag_l2 *l, const struct diag_frame *f)
{
    memset(l->late, 0, l->cap * sizeof(double));
    memset(l->arr_late, 0, l->cap * sizeof(double));
    memset(l->wait, 0, l->cap * sizeof(double));
    memset(l->transfer, 0, (size_t)l->cap * DIAG_MAX_COLL_NAMES * sizeof(double));
    memset(l->calls, 0, (size_t)l->cap * DIAG_MAX_COLL_NAMES * sizeof(uint32_t));
    for (size_t i = 0; i < l->table_cap; i++)
        l->table[i].max_start = -INFINITY;
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        struct diag_l2_entry *e = &l->table[l->slot_of[i]];
        double off = l->offset[c->rank], s = (double)c->start - off;
        e->sum_start += s;
        e->sum_arrival += (double)c->arrival - off;
        if (s > e->max_start)
            e->max_start = s;
    }
    for (size_t i = 0; i < f->n_colls; i++) {
        const struct diag_coll *c = &f->colls[i];
        const struct diag_l2_entry *e = &l->table[l->slot_of[i]];
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
        if (arr > l->arr_late[c->rank])
            l->arr_late[c->rank] = arr;
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

enum metric { M_PHASE, M_BUSY, M_XFER, M_LATE, M_STEP };

static double metric_get(const struct diag_l2 *l, const struct diag_frame *f, uint32_t r,
                         enum metric m, int idx)
{
    switch (m) {
    case M_PHASE:
        return (double)f->ranks[r].phase_ns[idx];
    case M_BUSY:
        return (double)f->ranks[r].busy_ns;
    case M_XFER:
        return l->transfer[(size_t)r * DIAG_MAX_COLL_NAMES + idx];
    case M_LATE:
        return l->late[r];
    case M_STEP:
        return (double)f->ranks[r].duration_ns;
    }
    return 0;
}

/* Values of one metric over the present members of a group into l->vals and
 * l->who; zeros are "no data" except for lateness. Returns their number and
 * the group's median and floored MAD. */
static uint32_t metric_stats(struct diag_l2 *l, const struct diag_frame *f, const uint32_t *mem,
                             uint32_t n, enum metric m, int idx, double *med, double *mad)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = mem[i];
        if (r >= f->cap || !f->ranks[r].present)
            continue;
        double v = metric_get(l, f, r, m, idx);
        if (v <= 0 && m != M_LATE)
            continue;
        l->vals[k] = v;
        l->who[k++] = r;
    }
    *med = diag_stats_median(l->vals, k, l->scratch);
    *mad = diag_stats_mad_floor(diag_stats_mad(l->vals, k, *med, l->scratch), *med, l->o.rel_floor,
                                l->o.abs_floor_ns);
    return k;
}

static bool is_compute_phase(const struct diag_dict *d, uint32_t p)
{
    for (uint32_t i = 0; i < d->n_coll; i++)
        if (d->coll[i] == d->phase[p])
            return false;
    return true;
}

/* Phases (of the class the groups are for) and busy time of one group. */
static void scan_compute(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                         const uint32_t *mem, uint32_t n, bool expert)
{
    double med, mad;

    for (uint32_t p = 0; p < d->n_phase; p++) {
        if (!is_compute_phase(d, p) || diag_dict_phase_expert(d, p) != expert)
            continue;
        uint32_t k = metric_stats(l, f, mem, n, M_PHASE, (int)p, &med, &mad);
        for (uint32_t i = 0; k >= 4 && i < k; i++) {
            struct diag_l2_cand *c = &l->cand[l->who[i]];
            double z = diag_stats_robust_z(l->vals[i], med, mad);
            if (z > l->o.z && l->vals[i] > med * (1 + l->o.min_effect) && z > c->pz) {
                c->pz = z;
                c->pv = l->vals[i];
                c->pm = med;
                c->pi = (int)p;
                c->pexpert = expert;
            }
        }
    }
    if (expert)
        return;
    uint32_t k = metric_stats(l, f, mem, n, M_BUSY, 0, &med, &mad);
    for (uint32_t i = 0; k >= 4 && i < k; i++) {
        struct diag_l2_cand *c = &l->cand[l->who[i]];
        c->busy_known = true;
        c->busy_ratio = med > 0 ? l->vals[i] / med : 0;
        c->busy_hi = diag_stats_robust_z(l->vals[i], med, mad) > l->o.z / 2 &&
                     l->vals[i] > med * (1 + l->o.min_effect / 2);
    }
}

/* Transfer times (of the class the groups are for) and lateness of one
 * group. */
static void scan_colls(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                       const uint32_t *mem, uint32_t n, bool expert)
{
    double med, mad, step_med, step_mad;

    for (uint32_t cn = 0; cn < d->n_coll; cn++) {
        if (diag_dict_coll_expert(d, cn) != expert)
            continue;
        uint32_t k = metric_stats(l, f, mem, n, M_XFER, (int)cn, &med, &mad);
        for (uint32_t i = 0; k >= 4 && i < k; i++) {
            struct diag_l2_cand *c = &l->cand[l->who[i]];
            double z = diag_stats_robust_z(l->vals[i], med, mad);
            if (z > l->o.z && l->vals[i] > med * l->o.link_ratio && z > c->lz) {
                c->lz = z;
                c->lv = l->vals[i];
                c->lm = med;
                c->li = (int)cn;
                c->lexpert = expert;
            }
        }
    }
    if (expert)
        return;
    metric_stats(l, f, mem, n, M_STEP, 0, &step_med, &step_mad);
    uint32_t k = metric_stats(l, f, mem, n, M_LATE, 0, &med, &mad);
    for (uint32_t i = 0; k >= 4 && i < k; i++) {
        struct diag_l2_cand *c = &l->cand[l->who[i]];
        c->hz = diag_stats_robust_z(l->vals[i], med, mad);
        c->hv = l->vals[i];
        c->hm = med;
        c->host_late = c->hz > l->o.z && l->vals[i] - med > l->o.host_late_frac * step_med;
    }
}

#define FLAG_GROUP_WIDE 1u
#define FLAG_EXPERT 2u

static void flag_set(struct diag_flag *flags, uint32_t r, int cause, int kind, int idx, double v,
                     double med, double score, unsigned bits)
{
    struct diag_flag *fl = &flags[(size_t)r * DIAG_CAUSE_N + cause];

    if (fl->set)
        return;
    *fl = (struct diag_flag){.set = true,
                             .group_wide = bits & FLAG_GROUP_WIDE,
                             .expert = bits & FLAG_EXPERT,
                             .level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE,
                             .kind = (uint8_t)kind,
                             .index = (uint8_t)idx,
                             .value = v,
                             .median = med,
                             .score = score};
}

/* A whole group's transfer time against the other groups of its stage. */
static void link_groups(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                        const struct diag_groups *g, bool expert, double *gm,
                        struct diag_flag *flags)
{
    double med, mad, ref[256];
    uint32_t n, idx[256];

    for (uint32_t cn = 0; cn < d->n_coll; cn++) {
        if (diag_dict_coll_expert(d, cn) != expert)
            continue;
        for (uint32_t gi = 0; gi < g->n_groups; gi++) {
            const uint32_t *mem = diag_groups_members(g, gi, &n);
            gm[gi] = metric_stats(l, f, mem, n, M_XFER, (int)cn, &med, &mad) >= 2 ? med : 0;
        }
        for (uint32_t a = 0; a < g->n_groups; a++) {
            uint32_t m = 0, bad = 0;
            bool first = true;
            for (uint32_t b = 0; b < g->n_groups && m < 256; b++) {
                if (g->stage[b] != g->stage[a] || gm[b] <= 0)
                    continue;
                first = first && b >= a;
                ref[m] = gm[b];
                idx[m++] = b;
            }
            if (!first || m < 3)
                continue;
            double rmed = diag_stats_median_inplace(ref, m);
            for (uint32_t j = 0; j < m; j++)
                bad += gm[idx[j]] > rmed * l->o.group_ratio;
            if (bad == 0 || bad * 2 >= m)
                continue;
            for (uint32_t j = 0; j < m; j++) {
                if (gm[idx[j]] <= rmed * l->o.group_ratio)
                    continue;
                const uint32_t *mem = diag_groups_members(g, idx[j], &n);
                for (uint32_t i = 0; i < n; i++)
                    if (mem[i] < f->cap && f->ranks[mem[i]].present)
                        flag_set(flags, mem[i], DIAG_CAUSE_LINK, DIAG_WHERE_COLL, (int)cn,
                                 gm[idx[j]], rmed, gm[idx[j]] / rmed,
                                 FLAG_GROUP_WIDE | (expert ? FLAG_EXPERT : 0));
            }
        }
    }
}

/* Kernels may be traced only on some steps (duty cycle): on a step without
 * them, a rank's kernel busy verdict from its last traced step stands in
 * for up to DIAG_L2_BUSY_TTL steps. */
static void remember_busy(struct diag_l2 *l, uint32_t r, struct diag_l2_cand *c)
{
    if (c->busy_known) {
        l->busy_last[r] = c->busy_hi ? 2 : 1;
        l->busy_last_ratio[r] = c->busy_ratio;
        l->busy_age[r] = 0;
        return;
    }
    if (l->busy_last[r] && ++l->busy_age[r] <= DIAG_L2_BUSY_TTL) {
        c->busy_known = true;
        c->busy_hi = l->busy_last[r] == 2;
        c->busy_ratio = l->busy_last_ratio[r];
    }
}

static void decide(struct diag_l2 *l, const struct diag_frame *f, struct diag_flag *flags,
                   struct diag_l2_result *res)
{
    for (uint32_t r = 0; r < f->cap; r++) {
        struct diag_l2_cand *c = &l->cand[r];
        if (!f->ranks[r].present)
            continue;
        if (l->late[r] > res->late_ns) {
            res->late_ns = l->late[r];
            res->late_rank = r;
        }
        /* Expert phases vary with routing: kernel busy time (compared in
         * work groups) cannot corroborate them. */
        struct diag_flag *fl = &flags[(size_t)r * DIAG_CAUSE_N];
        remember_busy(l, r, c);
        /* Without kernels, a rank that spent the phase's excess waiting for
         * peers inside collectives is a victim, not the culprit. */
        bool waited = !c->busy_known && !c->pexpert && l->wait[r] > 0.5 * (c->pv - c->pm);
        if (c->pi >= 0 && !waited && (c->busy_hi || !c->busy_known || c->pexpert)) {
            flag_set(flags, r, DIAG_CAUSE_COMPUTE, DIAG_WHERE_PHASE, c->pi, c->pv, c->pm, c->pz,
                     c->pexpert ? FLAG_EXPERT : 0);
            fl[DIAG_CAUSE_COMPUTE].aux = c->busy_known ? c->busy_ratio : 0;
        } else if (c->pi >= 0)
            res->waiting++;
        if (c->li >= 0)
            flag_set(flags, r, DIAG_CAUSE_LINK, DIAG_WHERE_COLL, c->li, c->lv, c->lm, c->lz,
                     c->lexpert ? FLAG_EXPERT : 0);
        bool linked = flags[(size_t)r * DIAG_CAUSE_N + DIAG_CAUSE_LINK].set;
        if (c->host_late && c->pi < 0 && !linked) {
            flag_set(flags, r, DIAG_CAUSE_HOST, DIAG_WHERE_ARRIVAL, 0, c->hv, c->hm, c->hz, 0);
            fl[DIAG_CAUSE_HOST].aux = (double)f->ranks[r].off_cpu_ns;
        }
    }
}

/* One job-wide median against its history (EWMA after a warmup mean,
 * frozen while the job is off it by 10% or more). Returns the shift. */
static double history_update(double med, double *h, uint32_t *hn)
{
    double shift = *hn ? med / *h - 1 : 0;

    if (*hn < 10 || fabs(shift) < 0.10) {
        double a = *hn < 10 ? 1.0 / (*hn + 1) : 0.05;
        *h = *hn ? (1 - a) * *h + a * med : med;
        (*hn)++;
        return *hn > 10 ? shift : 0;
    }
    return shift;
}

/* The job's own compute time against its history: the median over ranks of
 * kernel busy time where kernels are traced (a phase's wall span also
 * grows when half the job waits for the other half), else of each compute
 * phase. */
static void phase_history(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                          struct diag_l2_result *res)
{
    uint32_t k = 0;

    for (uint32_t r = 0; r < f->cap; r++)
        if (f->ranks[r].present && f->ranks[r].busy_ns)
            l->vals[k++] = (double)f->ranks[r].busy_ns;
    if (k) {
        double med = diag_stats_median_inplace(l->vals, k);
        res->job_phase_shift = history_update(med, &l->busy_hist, &l->busy_hist_n);
        res->job_phase = DIAG_L2_JOB_BUSY;
        return;
    }
    for (uint32_t p = 0; p < d->n_phase; p++) {
        k = 0;
        for (uint32_t r = 0; r < f->cap; r++)
            if (f->ranks[r].present && f->ranks[r].phase_ns[p])
                l->vals[k++] = (double)f->ranks[r].phase_ns[p];
        if (k == 0 || !is_compute_phase(d, p))
            continue;
        double med = diag_stats_median_inplace(l->vals, k);
        double shift = history_update(med, &l->phase_hist[p], &l->phase_hist_n[p]);
        if (shift > res->job_phase_shift) {
            res->job_phase_shift = shift;
            res->job_phase = (int)p;
        }
    }
}

/* Scan every group of one kind (work or expert). */
static void scan_groups(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                        const struct diag_groups *g, bool expert)
{
    for (uint32_t gi = 0; gi < g->n_groups; gi++) {
        uint32_t n;
        const uint32_t *mem = diag_groups_members(g, gi, &n);
        scan_compute(l, f, d, mem, n, expert);
        scan_colls(l, f, d, mem, n, expert);
    }
}

int diag_l2_run(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                const struct diag_groups *g, const struct diag_groups *xg, struct diag_flag *flags,
                struct diag_l2_result *res)
{
    uint32_t cap = f->cap > g->n_ranks ? f->cap : g->n_ranks;
    uint32_t ng = xg && xg->n_groups > g->n_groups ? xg->n_groups : g->n_groups;
    int err = reserve(l, cap, f->n_colls);
    double *gm = NULL;

    memset(res, 0, sizeof(*res));
    res->late_rank = UINT32_MAX;
    res->job_phase = -1;
    if (err)
        return err;
    gm = malloc((ng ? ng : 1) * sizeof(*gm));
    if (!gm)
        return -ENOMEM;
    table_build(l, f);
    estimate_offsets(l, f);
    match_colls(l, f);
    res->matched = (uint32_t)f->n_colls;
    for (uint32_t r = 0; r < l->cap; r++)
        l->cand[r] = (struct diag_l2_cand){.pi = -1, .li = -1};
    scan_groups(l, f, d, g, false);
    link_groups(l, f, d, g, false, gm, flags);
    if (xg) {
        scan_groups(l, f, d, xg, true);
        link_groups(l, f, d, xg, true, gm, flags);
    }
    decide(l, f, flags, res);
    phase_history(l, f, d, res);
    free(gm);
    return 0;
}
