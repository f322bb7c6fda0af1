/* L3 kernels: see diag_l3.h. */
#include "collector/diag/diag_l3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_stats.h"

void diag_l3_init(struct diag_l3 *l, const struct diag_l3_options *o)
{
    memset(l, 0, sizeof(*l));
    l->o = *o;
    if (l->o.fence_k <= 0)
        l->o.fence_k = 10;
    if (l->o.min_rel <= 0)
        l->o.min_rel = 0.15;
    if (l->o.group_min_rel <= 0)
        l->o.group_min_rel = 0.25;
    if (l->o.job_min_rel <= 0)
        l->o.job_min_rel = 0.10;
    if (l->o.history_alpha <= 0)
        l->o.history_alpha = 0.05;
    if (!l->o.warmup)
        l->o.warmup = 10;
}

void diag_l3_free(struct diag_l3 *l)
{
    free(l->qs);
    free(l->who);
    free(l->scratch);
    free(l->scores);
    free(l->group_ref);
    l->qs = NULL;
    l->who = NULL;
    l->scratch = NULL;
    l->scores = NULL;
    l->group_ref = NULL;
    l->cap = l->group_cap = 0;
}

void diag_l3_rebase(struct diag_l3 *l)
{
    memset(l->hist_n, 0, sizeof(l->hist_n));
}

static int ensure_cap(struct diag_l3 *l, size_t ranks, size_t groups)
{
    if (ranks > l->cap) {
        const float **q = realloc(l->qs, ranks * sizeof(*q));
        if (!q)
            return -ENOMEM;
        l->qs = q;
        uint32_t *w = realloc(l->who, ranks * sizeof(*w));
        if (!w)
            return -ENOMEM;
        l->who = w;
        double *s = realloc(l->scratch, ranks * DIAG_QGRID * sizeof(*s)); /* qmedian's */
        if (!s)
            return -ENOMEM;
        l->scratch = s;
        double *sc = realloc(l->scores, ranks * sizeof(*sc));
        if (!sc)
            return -ENOMEM;
        l->scores = sc;
        l->cap = ranks;
    }
    if (groups > l->group_cap) {
        float *r = realloc(l->group_ref, groups * DIAG_QGRID * sizeof(*r));
        if (!r)
            return -ENOMEM;
        l->group_ref = r;
        l->group_cap = groups;
    }
    return 0;
}

static void flag_kernel(struct diag_flag *flags, uint32_t rank, int cause, int k, double value,
                        double ref, double score, bool group_wide)
{
    struct diag_flag *fl = &flags[(size_t)rank * DIAG_CAUSE_N + cause];

    if (fl->set)
        return;
    *fl = (struct diag_flag){.set = true,
                             .group_wide = group_wide,
                             .level = ARGUS__V1__LEVEL__LEVEL_L3_KERNEL,
                             .kind = DIAG_WHERE_KERNEL,
                             .index = (uint8_t)k,
                             .value = value,
                             .median = ref,
                             .score = score};
}

/* Score the members of one group for kernel k; writes the group reference.
 * Returns the number of members with data. */
static uint32_t score_group(struct diag_l3 *l, const struct diag_frame *f, int k,
                            const uint32_t *mem, uint32_t n, float *ref, struct diag_flag *flags,
                            uint32_t *flagged)
{
    uint32_t m = 0;

    for (uint32_t i = 0; i < n; i++) {
        const struct diag_rank_step *r = &f->ranks[mem[i]];
        if (mem[i] < f->cap && r->present && (r->kernel_mask & (1u << k))) {
            l->qs[m] = f->q[mem[i]][k];
            l->who[m++] = mem[i];
        }
    }
    if (m == 0)
        return 0;
    diag_stats_qmedian(l->qs, m, DIAG_QGRID, ref, l->scratch);
    if (m < 4)
        return m;
    double mean = diag_stats_qmean(ref, DIAG_QGRID);
    for (uint32_t j = 0; j < m; j++)
        l->scores[j] = mean > 0 ? diag_stats_w1(l->qs[j], ref, DIAG_QGRID) / mean : 0;
    double med = diag_stats_median(l->scores, m, l->scratch);
    double mad =
        diag_stats_mad_floor(diag_stats_mad(l->scores, m, med, l->scratch), med, 0.01, 0.01);
    double fence = diag_stats_fence(med, mad, l->o.fence_k);
    uint64_t major = diag_frame_work_majority(f, mem, n, k);
    for (uint32_t j = 0; j < m; j++) {
        double own = diag_stats_qmean(l->qs[j], DIAG_QGRID);
        uint64_t work = f->ranks[l->who[j]].work_id[k];
        if (l->scores[j] > fence && l->scores[j] > l->o.min_rel && own > mean) {
            /* the same kernel slower on other launch shapes: more work */
            bool more = major && work && work != major;
            flag_kernel(flags, l->who[j], more ? DIAG_CAUSE_IMBALANCE : DIAG_CAUSE_COMPUTE, k, own,
                        mean, l->scores[j], false);
            *flagged += !more;
        }
    }
    return m;
}

/* Compare the group references of one stage with each other. */
static void compare_groups(struct diag_l3 *l, const struct diag_groups *g, int k,
                           const uint32_t *have, struct diag_flag *flags, uint32_t *flagged)
{
    float ref[DIAG_QGRID];

    for (uint32_t a = 0; a < g->n_groups; a++) {
        uint32_t m = 0, first = a;
        if (!have[a])
            continue;
        for (uint32_t b = 0; b < g->n_groups; b++)
            if (have[b] && g->stage[b] == g->stage[a]) {
                if (b < a)
                    first = b;
                l->qs[m] = l->group_ref + (size_t)b * DIAG_QGRID;
                l->who[m++] = b;
            }
        if (first != a || m < 3)
            continue; /* each stage once, from its first group */
        diag_stats_qmedian(l->qs, m, DIAG_QGRID, ref, l->scratch);
        double mean = diag_stats_qmean(ref, DIAG_QGRID);
        uint32_t bad = 0, bad_g[DIAG_MAX_KERNELS * 4];
        for (uint32_t j = 0; j < m; j++) {
            double own = diag_stats_qmean(l->qs[j], DIAG_QGRID);
            double s = mean > 0 ? diag_stats_w1(l->qs[j], ref, DIAG_QGRID) / mean : 0;
            if (s > l->o.group_min_rel && own > mean) {
                if (bad < DIAG_MAX_KERNELS * 4)
                    bad_g[bad] = l->who[j];
                bad++;
            }
        }
        if (bad == 0 || bad * 2 >= m)
            continue; /* half the stage slow is not one bad group */
        for (uint32_t j = 0; j < bad && j < DIAG_MAX_KERNELS * 4; j++) {
            uint32_t n, gi = bad_g[j];
            const uint32_t *mem = diag_groups_members(g, gi, &n);
            double own = diag_stats_qmean(l->group_ref + (size_t)gi * DIAG_QGRID, DIAG_QGRID);
            for (uint32_t i = 0; i < n; i++)
                flag_kernel(flags, mem[i], DIAG_CAUSE_COMPUTE, k, own, mean, own / mean - 1, true);
            (*flagged)++;
        }
    }
}

/* Job reference (pointwise median of group references) against history. */
static void compare_history(struct diag_l3 *l, const struct diag_groups *g, int k,
                            const uint32_t *have, struct diag_l3_result *res)
{
    float ref[DIAG_QGRID];
    uint32_t m = 0;

    for (uint32_t b = 0; b < g->n_groups; b++)
        if (have[b])
            l->qs[m++] = l->group_ref + (size_t)b * DIAG_QGRID;
    if (m == 0)
        return;
    diag_stats_qmedian(l->qs, m, DIAG_QGRID, ref, l->scratch);
    float *h = l->hist[k];
    if (l->hist_n[k] == 0) {
        memcpy(h, ref, sizeof(ref));
        l->hist_n[k] = 1;
        return;
    }
    double mean = diag_stats_qmean(h, DIAG_QGRID);
    double shift = mean > 0 ? diag_stats_w1(ref, h, DIAG_QGRID) / mean : 0;
    bool slower = diag_stats_qmean(ref, DIAG_QGRID) > mean;
    if (l->hist_n[k] >= l->o.warmup && slower && shift > res->job_shift) {
        res->job_shift = shift;
        res->job_kernel = k;
    }
    /* The history follows slowly, and not at all while the job is off it. */
    if (l->hist_n[k] < l->o.warmup || shift < l->o.job_min_rel) {
        double a = l->hist_n[k] < l->o.warmup ? 1.0 / (l->hist_n[k] + 1) : l->o.history_alpha;
        for (int i = 0; i < DIAG_QGRID; i++)
            h[i] = (float)((1 - a) * h[i] + a * ref[i]);
        l->hist_n[k]++;
    }
}

int diag_l3_run(struct diag_l3 *l, const struct diag_frame *f, const struct diag_dict *d,
                const struct diag_groups *g, struct diag_flag *flags, struct diag_l3_result *res)
{
    uint32_t *have = NULL;
    int err = ensure_cap(l, f->cap > g->n_ranks ? f->cap : g->n_ranks, g->n_groups);

    memset(res, 0, sizeof(*res));
    res->job_kernel = -1;
    if (err)
        return err;
    have = calloc(g->n_groups ? g->n_groups : 1, sizeof(*have));
    if (!have)
        return -ENOMEM;
    for (uint32_t k = 0; k < d->n_kernel; k++) {
        if (diag_dict_is_coll_stream(d, d->kernel_stream[k]))
            continue;
        for (uint32_t gi = 0; gi < g->n_groups; gi++) {
            uint32_t n;
            const uint32_t *mem = diag_groups_members(g, gi, &n);
            have[gi] = score_group(l, f, (int)k, mem, n, l->group_ref + (size_t)gi * DIAG_QGRID,
                                   flags, &res->rank_flags);
        }
        compare_groups(l, g, (int)k, have, flags, &res->group_flags);
        if (!l->frozen)
            compare_history(l, g, (int)k, have, res);
    }
    free(have);
    return 0;
}
