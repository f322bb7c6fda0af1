/* Per-rank evidence window: see diag_rankwin.h. */
#include "collector/diag/diag_rankwin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_stats.h"
#include "common/array.h"

struct diag_rankwin_slot {
    uint16_t part, last;
    bool present;
    float chance, gap, runq, off_cpu, step;
};

static void rule_defaults(struct diag_rankwin_rule *r)
{
    if (!r->recent)
        r->recent = 8;
    if (!r->min_calls)
        r->min_calls = 6;
    if (r->last_frac <= 0 || r->last_frac > 1)
        r->last_frac = 0.6;
    if (r->gap_frac <= 0)
        r->gap_frac = 0.05;
    if (r->runq_ratio <= 1)
        r->runq_ratio = 1.5;
    if (r->busy_ratio_ok <= 0)
        r->busy_ratio_ok = 1.05;
}

void diag_rankwin_init(struct diag_rankwin *w, uint32_t window)
{
    memset(w, 0, sizeof(*w));
    w->window = window < 1 ? 1 : window > 64 ? 64 : window;
    rule_defaults(&w->rule);
    diag_hwwin_init(&w->hw, w->window);
}

void diag_rankwin_free(struct diag_rankwin *w)
{
    struct diag_rankwin_rule rule = w->rule;

    free(w->slots);
    free(w->scratch);
    free(w->recent);
    diag_hwwin_free(&w->hw);
    diag_rankwin_init(w, w->window);
    w->rule = rule;
}

/* The slot of rank's step age steps before the newest (0). */
static const struct diag_rankwin_slot *slot_at(const struct diag_rankwin *w, uint32_t rank,
                                               uint32_t age)
{
    return &w->slots[(size_t)rank * w->window + (w->head + w->window - age) % w->window];
}

int diag_rankwin_reserve(struct diag_rankwin *w, uint32_t cap)
{
    if (cap <= w->cap)
        return 0;
    int err = diag_hwwin_reserve(&w->hw, cap);
    if (!err)
        err = array_grow_zeroed((void **)&w->slots, (size_t)w->cap * w->window,
                                (size_t)cap * w->window, sizeof(*w->slots));
    if (!err)
        w->cap = cap;
    return err;
}

static uint16_t clamp16(uint32_t v)
{
    return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

void diag_rankwin_step(struct diag_rankwin *w, const struct diag_frame *f,
                       const struct diag_colls *c)
{
    uint32_t n = f->cap < w->cap ? f->cap : w->cap;

    diag_hwwin_step(&w->hw, f);
    w->head = (w->head + 1) % w->window;
    if (w->steps < w->window)
        w->steps++;
    for (uint32_t r = 0; r < w->cap; r++) {
        struct diag_rankwin_slot *s = &w->slots[(size_t)r * w->window + w->head];
        memset(s, 0, sizeof(*s));
        if (r >= n || !f->ranks[r].present)
            continue;
        s->present = true;
        s->runq = (float)f->ranks[r].runq_ns;
        s->off_cpu = (float)f->ranks[r].off_cpu_ns;
        s->step = (float)f->ranks[r].duration_ns;
        if (r < c->cap) {
            s->part = clamp16(c->part[r]);
            s->last = clamp16(c->last[r]);
            s->chance = (float)c->chance[r];
            s->gap = (float)c->gap[r];
        }
    }
}

/* Mean run-queue and off-CPU time of rank over its present steps. */
static uint32_t host_means(const struct diag_rankwin *w, uint32_t rank, double *runq,
                           double *off_cpu)
{
    uint32_t k = 0;

    *runq = *off_cpu = 0;
    for (uint32_t i = 0; i < w->window; i++) {
        const struct diag_rankwin_slot *s = &w->slots[(size_t)rank * w->window + i];
        if (!s->present)
            continue;
        *runq += s->runq;
        *off_cpu += s->off_cpu;
        k++;
    }
    if (k) {
        *runq /= k;
        *off_cpu /= k;
    }
    return k;
}

/* Median gap over the newest k steps, each step's median weighted by its
 * count (total: the rank's last arrivals there). */
static double gap_median(const struct diag_rankwin *w, uint32_t rank, uint32_t k, uint32_t total)
{
    uint32_t seen = 0, best = 0;
    double gap = 0;

    /* Weighted median: the smallest step median whose cumulative weight
     * reaches half; O(k^2), k <= 64. */
    for (uint32_t i = 0; i < k; i++) {
        const struct diag_rankwin_slot *a = slot_at(w, rank, i);
        if (!a->last)
            continue;
        uint32_t below = 0;
        for (uint32_t j = 0; j < k; j++) {
            const struct diag_rankwin_slot *b = slot_at(w, rank, j);
            if (b->last && (b->gap < a->gap || (b->gap == a->gap && j <= i)))
                below += b->last;
        }
        if (below * 2 >= total && (!seen || below < best)) {
            best = below;
            gap = a->gap;
            seen = 1;
        }
    }
    return gap;
}

/* What the newest k steps say about one rank. */
struct diag_rankwin_recent {
    uint32_t steps, part, last;
    double chance, runq, off_cpu, step; /* runq, off_cpu, step: means per present step */
};

/* Room for 2 * n doubles of scratch and n members' sums. 0 or -ENOMEM. */
static int scratch_reserve(struct diag_rankwin *w, uint32_t n)
{
    if (n * 2 <= w->scratch_cap)
        return 0;
    if (array_grow_zeroed((void **)&w->scratch, 0, (size_t)n * 2, sizeof(double)) ||
        array_grow_zeroed((void **)&w->recent, 0, n, sizeof(*w->recent)))
        return -ENOMEM;
    w->scratch_cap = n * 2;
    return 0;
}

int diag_rankwin_get(struct diag_rankwin *w, uint32_t rank, const uint32_t *members, uint32_t n,
                     struct diag_rank_evidence *out)
{
    memset(out, 0, sizeof(*out));
    if (rank >= w->cap)
        return 0;
    if (scratch_reserve(w, n))
        return -ENOMEM;
    for (uint32_t i = 0; i < w->window; i++) {
        const struct diag_rankwin_slot *s = &w->slots[(size_t)rank * w->window + i];
        out->part += s->part;
        out->last += s->last;
        out->chance += s->chance;
    }
    out->gap_ns = gap_median(w, rank, w->window, out->last);
    out->steps = host_means(w, rank, &out->runq_ns, &out->off_cpu_ns);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        double rq, oc;
        if (members[i] < w->cap && host_means(w, members[i], &rq, &oc)) {
            w->scratch[k] = rq;
            w->scratch[n + k++] = oc;
        }
    }
    if (k) {
        out->runq_median = diag_stats_median_inplace(w->scratch, k);
        out->off_cpu_median = diag_stats_median_inplace(w->scratch + n, k);
    }
    if (diag_hwwin_get(&w->hw, rank, members, n, &out->hw))
        return memset(out, 0, sizeof(*out)), -ENOMEM;
    return 0;
}

static void recent_sums(const struct diag_rankwin *w, uint32_t rank, uint32_t k,
                        struct diag_rankwin_recent *o)
{
    memset(o, 0, sizeof(*o));
    for (uint32_t i = 0; rank < w->cap && i < k; i++) {
        const struct diag_rankwin_slot *s = slot_at(w, rank, i);
        if (!s->present)
            continue;
        o->steps++;
        o->part += s->part;
        o->last += s->last;
        o->chance += s->chance;
        o->runq += s->runq;
        o->off_cpu += s->off_cpu;
        o->step += s->step;
    }
    if (o->steps) {
        o->runq /= o->steps;
        o->off_cpu /= o->steps;
        o->step /= o->steps;
    }
}

/* Does rank r (sums m) arrive last persistently, well after the first? */
static bool last_persistently(const struct diag_rankwin *w, uint32_t r, uint32_t k,
                              const struct diag_rankwin_recent *m)
{
    const struct diag_rankwin_rule *o = &w->rule;

    if (m->part < o->min_calls || m->last < o->last_frac * m->part || m->last < 2 * m->chance)
        return false;
    return gap_median(w, r, k, m->last) >= o->gap_frac * m->step;
}

/* Set the HOST flag of rank r (starved, against the group's run-queue
 * median med and MAD mad) and clear a compute flag the starvation explains. */
static void flag_starved(const struct diag_rankwin *w, uint32_t r,
                         const struct diag_rankwin_recent *m, double med, double mad,
                         struct diag_flag *flags)
{
    struct diag_flag *host = &flags[(size_t)r * DIAG_CAUSE_N + DIAG_CAUSE_HOST];
    struct diag_flag *comp = &flags[(size_t)r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE];

    if (!host->set)
        *host = (struct diag_flag){.set = true,
                                   .level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE,
                                   .kind = DIAG_WHERE_RUNQ,
                                   .value = m->runq,
                                   .median = med,
                                   .score = diag_stats_robust_z(m->runq, med, mad),
                                   .aux = m->off_cpu};
    if (comp->set && !comp->expert && comp->aux <= w->rule.busy_ratio_ok)
        memset(comp, 0, sizeof(*comp));
}

/* The earlier steps of the newest k at which rank r arrived last at half its
 * calls or more, gap_frac of its step after the first, count for persistence
 * too (p: the steps before this one): what the rule sees now was there. */
static void backfill(const struct diag_rankwin *w, uint32_t r, uint32_t k,
                     const struct diag_flag *fl, struct diag_persist *p)
{
    for (uint32_t age = 1; p && age < k; age++) {
        const struct diag_rankwin_slot *s = slot_at(w, r, age);
        if (s->present && s->part && 2 * s->last >= s->part && s->gap >= w->rule.gap_frac * s->step)
            diag_persist_amend(p, r, DIAG_CAUSE_HOST, age - 1, fl);
    }
}

/* The rule over one group's members; returns the ranks flagged. */
static uint32_t flag_group(struct diag_rankwin *w, const uint32_t *mem, uint32_t nm, uint32_t k,
                           struct diag_flag *flags, uint32_t n, struct diag_persist *p)
{
    struct diag_rankwin_recent *ms = w->recent;
    uint32_t present = 0, flagged = 0;

    for (uint32_t i = 0; i < nm; i++) {
        recent_sums(w, mem[i], k, &ms[i]);
        if (ms[i].steps * 2 >= k)
            w->scratch[present++] = ms[i].runq;
    }
    if (present < 3)
        return 0;
    double med = diag_stats_median(w->scratch, present, w->scratch + nm);
    double mad = diag_stats_mad_floor(diag_stats_mad(w->scratch, present, med, w->scratch + nm),
                                      med, 0.01, 20000);
    for (uint32_t i = 0; i < nm; i++) {
        uint32_t r = mem[i];
        const struct diag_rankwin_recent *m = &ms[i]; /* the sums of the first loop */
        if (r >= n || m->steps * 2 < k || !last_persistently(w, r, k, m))
            continue;
        if (m->runq < w->rule.runq_ratio * med || m->runq - med < w->rule.gap_frac * m->step)
            continue;
        flag_starved(w, r, m, med, mad, flags);
        backfill(w, r, k, &flags[(size_t)r * DIAG_CAUSE_N + DIAG_CAUSE_HOST], p);
        flagged++;
    }
    return flagged;
}

int diag_rankwin_flag(struct diag_rankwin *w, const struct diag_groups *g, struct diag_flag *flags,
                      uint32_t n, struct diag_persist *p)
{
    uint32_t k = w->rule.recent < w->steps ? w->rule.recent : w->steps, flagged = 0;

    for (uint32_t gi = 0; k && gi < g->n_groups; gi++) {
        uint32_t nm;
        const uint32_t *mem = diag_groups_members(g, gi, &nm);
        if (scratch_reserve(w, nm))
            return -ENOMEM;
        flagged += flag_group(w, mem, nm, k, flags, n, p);
    }
    return (int)flagged;
}
