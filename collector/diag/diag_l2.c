/* L2 rank and phase: see diag_l2.h. */
#include "collector/diag/diag_l2.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_colls.h"
#include "collector/diag/diag_stats.h"
#include "common/array.h"

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
    double rz, rv, rm; /* run-queue time */
    bool starved;
    double ov, om;  /* off-CPU time outside collectives, group median */
    bool off_hi;    /* it explains the lateness: host evidence */
    bool more_work; /* its kernels differ in work (work id, more of them), not in speed */
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
    if (l->o.runq_ratio <= 1)
        l->o.runq_ratio = 1.5;
    if (l->o.abs_floor_ns <= 0)
        l->o.abs_floor_ns = 20000;
    if (l->o.rel_floor <= 0)
        l->o.rel_floor = 0.01;
    diag_colls_init(&l->cm, l->o.offset_alpha);
}

void diag_l2_free(struct diag_l2 *l)
{
    diag_colls_free(&l->cm);
    free(l->vals);
    free(l->scratch);
    free(l->busy_last_ratio);
    free(l->busy_age);
    free(l->busy_last);
    free(l->who);
    free(l->cand);
    struct diag_l2_options o = l->o;
    memset(l, 0, sizeof(*l));
    l->o = o;
}

void diag_l2_rebase(struct diag_l2 *l)
{
    memset(l->phase_hist_n, 0, sizeof(l->phase_hist_n));
    l->busy_hist_n = 0;
    l->busy_shift = 0;
}

double diag_l2_offset(const struct diag_l2 *l, uint32_t rank)
{
    return diag_colls_offset(&l->cm, rank);
}

static int reserve(struct diag_l2 *l, uint32_t cap)
{
    int err = 0;

    if (cap <= l->cap)
        return 0;
    size_t o = l->cap, c = cap;
    err = array_grow_zeroed((void **)&l->vals, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->scratch, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->busy_last_ratio, o, c, sizeof(double));
    err = err ? err : array_grow_zeroed((void **)&l->busy_age, o, c, sizeof(uint32_t));
    err = err ? err : array_grow_zeroed((void **)&l->busy_last, o, c, sizeof(uint8_t));
    err = err ? err : array_grow_zeroed((void **)&l->who, o, c, sizeof(uint32_t));
    err = err ? err : array_grow_zeroed((void **)&l->cand, o, c, sizeof(struct diag_l2_cand));
    if (!err)
        l->cap = cap;
    return err;
}

enum metric { M_PHASE, M_BUSY, M_XFER, M_LATE, M_STEP, M_RUNQ, M_OFFCPU, M_KCOUNT, M_PERK };

static double metric_get(const struct diag_l2 *l, const struct diag_frame *f, uint32_t r,
                         enum metric m, int idx)
{
    switch (m) {
    case M_PHASE:
        return (double)f->ranks[r].phase_ns[idx];
    case M_BUSY:
        return (double)f->ranks[r].busy_ns;
    case M_XFER:
        return l->cm.transfer[(size_t)r * DIAG_MAX_COLL_NAMES + idx];
    case M_LATE:
        return l->cm.late[r];
    case M_STEP:
        return (double)f->ranks[r].duration_ns;
    case M_RUNQ:
        return (double)f->ranks[r].runq_ns;
    case M_OFFCPU: /* a waiter's time blocked inside collectives is not its host's */
        return f->ranks[r].off_cpu_ns ? fmax(1, (double)f->ranks[r].off_cpu_ns - l->cm.wait[r]) : 0;
    case M_KCOUNT:
        return (double)f->ranks[r].kernel_count;
    case M_PERK:
        return f->ranks[r].kernel_count ? (double)f->ranks[r].busy_ns / f->ranks[r].kernel_count
                                        : 0;
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

/* More work, not slower hardware: a rank whose kernels ran with another
 * work id than most of its group's (other launch shapes or counts), or that
 * ran more kernels (1 + min_effect of the group median) each as fast as its
 * peers'. */
static void scan_work(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                      const uint32_t *mem, uint32_t n)
{
    double med, mad, per_med;

    for (uint32_t k = 0; k < d->n_kernel; k++) {
        uint64_t major = diag_frame_work_majority(f, mem, n, (int)k);
        for (uint32_t i = 0; major && i < n; i++) {
            const struct diag_rank_step *r = &f->ranks[mem[i]];
            if (mem[i] < f->cap && r->present && r->work_id[k] && r->work_id[k] != major)
                l->cand[mem[i]].more_work = true;
        }
    }
    metric_stats(l, f, mem, n, M_PERK, 0, &per_med, &mad);
    uint32_t k = metric_stats(l, f, mem, n, M_KCOUNT, 0, &med, &mad);
    for (uint32_t i = 0; k >= 4 && i < k; i++) {
        uint32_t r = l->who[i];
        double per = metric_get(l, f, r, M_PERK, 0);
        if (l->vals[i] > med * (1 + l->o.min_effect) && per <= per_med * (1 + l->o.min_effect / 2))
            l->cand[r].more_work = true;
    }
}

/* Off-CPU time outside collectives of one group: host evidence of a late
 * rank when its excess over the group explains half its lateness or more,
 * and is at least host_late_frac of the step (a thread blocked on I/O, a
 * lock, a sleep). A rank that is late because it computes longer is on a
 * CPU meanwhile: its off-CPU time is its peers' or less. */
static void scan_off_cpu(struct diag_l2 *l, const struct diag_frame *f, const uint32_t *mem,
                         uint32_t n, double step_med, double late_med)
{
    double med, mad;
    uint32_t k = metric_stats(l, f, mem, n, M_OFFCPU, 0, &med, &mad);

    for (uint32_t i = 0; k >= 4 && i < k; i++) {
        struct diag_l2_cand *c = &l->cand[l->who[i]];
        double excess = l->vals[i] - med;
        c->ov = l->vals[i];
        c->om = med;
        c->off_hi = diag_stats_robust_z(l->vals[i], med, mad) > l->o.z &&
                    excess > l->o.host_late_frac * step_med && excess >= 0.5 * (c->hv - late_med);
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
    scan_off_cpu(l, f, mem, n, step_med, med);
    k = metric_stats(l, f, mem, n, M_RUNQ, 0, &med, &mad);
    for (uint32_t i = 0; k >= 4 && i < k; i++) {
        struct diag_l2_cand *c = &l->cand[l->who[i]];
        c->rz = diag_stats_robust_z(l->vals[i], med, mad);
        c->rv = l->vals[i];
        c->rm = med;
        c->starved = c->rz > l->o.z && l->vals[i] > med * l->o.runq_ratio &&
                     l->vals[i] - med > l->o.host_late_frac * step_med;
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
 * them, a rank's kernel verdicts from its last traced step (busy time high,
 * more work) stand in for up to DIAG_L2_BUSY_TTL steps. busy_last: 0 none,
 * else 1 normal or 2 high, | 4 more work. */
static void recall_busy(struct diag_l2 *l, uint32_t r, struct diag_l2_cand *c)
{
    c->busy_known = true;
    c->busy_hi = (l->busy_last[r] & 3) == 2;
    c->more_work = l->busy_last[r] & 4;
    c->busy_ratio = l->busy_last_ratio[r];
}

static void remember_busy(struct diag_l2 *l, uint32_t r, struct diag_l2_cand *c)
{
    if (l->frozen) {
        if (!c->busy_known && l->busy_last[r] && l->busy_age[r] < DIAG_L2_BUSY_TTL)
            recall_busy(l, r, c);
        return;
    }
    if (c->busy_known) {
        l->busy_last[r] = (uint8_t)((c->busy_hi ? 2 : 1) | (c->more_work ? 4 : 0));
        l->busy_last_ratio[r] = c->busy_ratio;
        l->busy_age[r] = 0;
        return;
    }
    if (l->busy_last[r] && ++l->busy_age[r] <= DIAG_L2_BUSY_TTL)
        recall_busy(l, r, c);
}

/* A slow compute phase: slower hardware (COMPUTE), or, when its kernels
 * show more work than its peers' (diag_l2.h), the job's imbalance. */
static void flag_slow(struct diag_flag *flags, uint32_t r, const struct diag_l2_cand *c)
{
    int cause = c->more_work && !c->pexpert ? DIAG_CAUSE_IMBALANCE : DIAG_CAUSE_COMPUTE;

    flag_set(flags, r, cause, DIAG_WHERE_PHASE, c->pi, c->pv, c->pm, c->pz,
             c->pexpert ? FLAG_EXPERT : 0);
    flags[(size_t)r * DIAG_CAUSE_N + cause].aux = c->busy_known && !c->pexpert ? c->busy_ratio : 0;
}

/* Late at collectives with normal phases: the host's fault only with host
 * evidence against the peers (run queue: starved, or off-CPU time outside
 * collectives); else the rank does more work on a healthy host. */
static void flag_late(struct diag_flag *flags, uint32_t r, const struct diag_l2_cand *c)
{
    int cause = c->off_hi ? DIAG_CAUSE_HOST : DIAG_CAUSE_IMBALANCE;

    flag_set(flags, r, cause, DIAG_WHERE_ARRIVAL, 0, c->hv, c->hm, c->hz, 0);
    flags[(size_t)r * DIAG_CAUSE_N + cause].aux = c->ov;
}

static void decide(struct diag_l2 *l, const struct diag_frame *f, struct diag_flag *flags,
                   struct diag_l2_result *res)
{
    for (uint32_t r = 0; r < f->cap; r++) {
        struct diag_l2_cand *c = &l->cand[r];
        if (!f->ranks[r].present)
            continue;
        if (l->cm.late[r] > res->late_ns) {
            res->late_ns = l->cm.late[r];
            res->late_rank = r;
        }
        /* Expert phases vary with routing: kernel busy time (compared in
         * work groups) cannot corroborate them. */
        struct diag_flag *fl = &flags[(size_t)r * DIAG_CAUSE_N];
        remember_busy(l, r, c);
        /* Without kernels, a rank that spent the phase's excess waiting for
         * peers inside collectives is a victim, not the culprit. */
        bool waited = !c->busy_known && !c->pexpert && l->cm.wait[r] > 0.5 * (c->pv - c->pm);
        bool slow = c->pi >= 0 && !waited && (c->busy_hi || !c->busy_known || c->pexpert);
        /* Slow or late while waiting for a CPU, its own kernels not slow: a
         * CPU-starved host, not slow compute. */
        bool starved = c->starved && !c->busy_hi && (slow || c->host_late);
        if (slow && !starved)
            flag_slow(flags, r, c);
        else if (c->pi >= 0 && !starved)
            res->waiting++;
        if (c->li >= 0)
            flag_set(flags, r, DIAG_CAUSE_LINK, DIAG_WHERE_COLL, c->li, c->lv, c->lm, c->lz,
                     c->lexpert ? FLAG_EXPERT : 0);
        bool linked = fl[DIAG_CAUSE_LINK].set;
        if (starved) {
            flag_set(flags, r, DIAG_CAUSE_HOST, DIAG_WHERE_RUNQ, 0, c->rv, c->rm, c->rz, 0);
            fl[DIAG_CAUSE_HOST].aux = c->ov;
        } else if (c->host_late && c->pi < 0 && !linked) {
            flag_late(flags, r, c);
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
 * kernel busy time where kernels are traced (on untraced steps of a
 * duty-cycled job, the last traced verdict stands); with no kernels at all,
 * the 10th percentile of each compute phase: a phase's wall span also grows
 * on every rank that waits for a straggler (up to all but one rank of a
 * TP group), but an everyone-slower regression moves even the fastest. */
static void phase_history(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                          struct diag_l2_result *res)
{
    uint32_t k = 0;

    for (uint32_t r = 0; r < f->cap; r++)
        if (f->ranks[r].present && f->ranks[r].busy_ns)
            l->vals[k++] = (double)f->ranks[r].busy_ns;
    if (k || l->busy_hist_n) {
        if (k) {
            double med = diag_stats_median_inplace(l->vals, k);
            l->busy_shift = history_update(med, &l->busy_hist, &l->busy_hist_n);
        }
        res->job_phase_shift = l->busy_shift;
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
        double low = diag_stats_quantile_inplace(l->vals, k, 0.10);
        double shift = history_update(low, &l->phase_hist[p], &l->phase_hist_n[p]);
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
        if (!expert)
            scan_work(l, f, d, mem, n);
        scan_colls(l, f, d, mem, n, expert);
    }
}

int diag_l2_run(struct diag_l2 *l, const struct diag_frame *f, const struct diag_dict *d,
                const struct diag_groups *g, const struct diag_groups *xg, struct diag_flag *flags,
                struct diag_l2_result *res)
{
    uint32_t cap = f->cap > g->n_ranks ? f->cap : g->n_ranks;
    uint32_t ng = xg && xg->n_groups > g->n_groups ? xg->n_groups : g->n_groups;
    int err = reserve(l, cap);
    double *gm = NULL;

    memset(res, 0, sizeof(*res));
    res->late_rank = UINT32_MAX;
    res->job_phase = -1;
    l->cm.frozen = l->frozen;
    err = err ? err : diag_colls_run(&l->cm, f, cap);
    if (err)
        return err;
    gm = malloc((ng ? ng : 1) * sizeof(*gm));
    if (!gm)
        return -ENOMEM;
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
    if (!l->frozen)
        phase_history(l, f, d, res);
    free(gm);
    return 0;
}
