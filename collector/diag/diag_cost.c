/* GPU-hours lost to a job's suspects: see diag_cost.h. */
#include "collector/diag/diag_cost.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_report.h"
#include "collector/diag/diag_stats.h"

double diag_cost_whatif(const float *own, const float *ref, const bool *fix, uint32_t n)
{
    double top = 0, whatif = 0;

    for (uint32_t r = 0; r < n; r++) {
        if (own[r] < 0)
            continue;
        double v = own[r], w = fix[r] && ref[r] < v ? ref[r] : v;
        top = v > top ? v : top;
        whatif = w > whatif ? w : whatif;
    }
    return top > whatif ? top - whatif : 0;
}

void diag_cost_init(struct diag_cost *c)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < DIAG_COST_STEPS; i++)
        c->ring[i].step = UINT64_MAX;
}

void diag_cost_free(struct diag_cost *c)
{
    for (int i = 0; i < DIAG_COST_STEPS; i++) {
        free(c->ring[i].own);
        free(c->ring[i].ref);
    }
    free(c->from);
    free(c->to);
    free(c->fix);
    free(c->scratch);
    diag_cost_init(c);
}

/* Grow *p of n elements of size sz to cap ones, zeroing the new ones. */
static int grow(void *p, size_t sz, uint32_t n, uint32_t cap)
{
    void *t = realloc(*(void **)p, (size_t)cap * sz);

    if (!t)
        return -ENOMEM;
    memset((char *)t + (size_t)n * sz, 0, (size_t)(cap - n) * sz);
    *(void **)p = t;
    return 0;
}

/* Room for ranks [0, cap). New ranks have no record in the kept steps. */
static int reserve(struct diag_cost *c, uint32_t cap)
{
    int err = 0;

    if (cap <= c->cap)
        return 0;
    for (int i = 0; i < DIAG_COST_STEPS && !err; i++) {
        err = grow(&c->ring[i].own, sizeof(float), c->cap, cap);
        err = err ? err : grow(&c->ring[i].ref, sizeof(float), c->cap, cap);
        for (uint32_t r = c->cap; r < cap && !err; r++)
            c->ring[i].own[r] = -1;
    }
    err = err ? err : grow(&c->from, sizeof(uint64_t), c->cap, cap);
    err = err ? err : grow(&c->to, sizeof(uint64_t), c->cap, cap);
    err = err ? err : grow(&c->fix, sizeof(bool), c->cap, cap);
    err = err ? err : grow(&c->scratch, sizeof(double), c->cap, cap);
    if (!err)
        c->cap = cap; /* on failure the arrays that grew keep their old prefix valid */
    return err;
}

/* The order statistics a median without one element needs: of v[0..m)
 * (m >= 2, reordered) the a-th smallest and the two after it (mid[2]
 * unused when a + 2 == m), a the lower middle of m - 1 elements. */
static uint32_t middles(double *v, uint32_t m, double mid[3])
{
    uint32_t k = m - 1, a = k % 2 ? k / 2 : k / 2 - 1;

    mid[0] = diag_stats_select_inplace(v, m, a);
    mid[1] = mid[2] = INFINITY;
    for (uint32_t i = a + 1; i < m; i++) { /* the two smallest above a */
        if (v[i] < mid[1]) {
            mid[2] = mid[1];
            mid[1] = v[i];
        } else if (v[i] < mid[2]) {
            mid[2] = v[i];
        }
    }
    return a;
}

/* The median of the m elements whose order statistics from the a-th are
 * mid[] without one element equal to x: of the sorted s, the middles of
 * the m - 1 left are s[j] where j is below x's first position (s[j] < x),
 * s[j + 1] from it. */
static double median_without(const double mid[3], uint32_t m, uint32_t a, double x)
{
    uint32_t k = m - 1, b = k / 2 - a; /* b: 0 or 1, relative to a */
    double va = mid[0] < x ? mid[0] : mid[1], vb = mid[b] < x ? mid[b] : mid[b + 1];

    return (va + vb) / 2;
}

/* References of the present members of group gi; job: the job's median.
 * O(members): the middles by selection, not a sort. */
static void group_refs(struct diag_cost *c, struct diag_cost_step *s, const struct diag_groups *g,
                       uint32_t gi, double job)
{
    uint32_t n, m = 0, a = 0;
    const uint32_t *mem = diag_groups_members(g, gi, &n);
    double mid[3];

    for (uint32_t i = 0; i < n; i++)
        if (mem[i] < c->cap && s->own[mem[i]] >= 0)
            c->scratch[m++] = s->own[mem[i]];
    if (m >= 2)
        a = middles(c->scratch, m, mid);
    for (uint32_t i = 0; i < n; i++)
        if (mem[i] < c->cap && s->own[mem[i]] >= 0)
            s->ref[mem[i]] = (float)(m >= 2 ? median_without(mid, m, a, s->own[mem[i]]) : job);
}

int diag_cost_note_step(struct diag_cost *c, const struct diag_frame *f, const double *wait,
                        uint32_t wait_n, const struct diag_groups *g)
{
    if (reserve(c, f->cap))
        return -ENOMEM;
    struct diag_cost_step *s = &c->ring[f->step % DIAG_COST_STEPS];
    uint32_t m = 0;

    s->step = f->step;
    for (uint32_t r = 0; r < c->cap; r++) {
        const struct diag_rank_step *rs = r < f->cap ? &f->ranks[r] : NULL;
        double w = r < wait_n ? wait[r] : 0, own = rs ? (double)rs->duration_ns - w : -1;
        s->own[r] = !rs || !rs->present ? -1 : own > 0 ? (float)own : 0;
        if (s->own[r] >= 0)
            c->scratch[m++] = s->own[r];
    }
    s->n = m;
    double job = diag_stats_median_inplace(c->scratch, m);
    for (uint32_t r = 0; r < c->cap; r++)
        s->ref[r] = (float)job; /* ranks outside every group */
    for (uint32_t gi = 0; gi < g->n_groups; gi++)
        group_refs(c, s, g, gi, job);
    return 0;
}

/* The first step suspect rank's report up to to_step covers (window from
 * `from`), remembered so that the rank's next report starts after it;
 * to_step + 1 (nothing) for an older window than its last report's. */
static uint64_t suspect_from(struct diag_cost *c, uint32_t r, uint64_t from, uint64_t to_step)
{
    uint64_t through = c->to[r]; /* 1 + the last step costed, 0: none */

    if (through && to_step + 1 == through)
        return c->from[r]; /* the same report again */
    if (through && to_step + 1 < through)
        return to_step + 1;
    c->from[r] = through > from ? through : from;
    c->to[r] = to_step + 1;
    return c->from[r];
}

/* The suspects' first steps into first[] (UINT64_MAX: not costed), the
 * lowest of them returned. */
static uint64_t suspects_from(struct diag_cost *c, const Argus__V1__Report *rep, uint64_t from,
                              uint64_t to_step, uint64_t *first)
{
    uint64_t low = UINT64_MAX;

    for (size_t i = 0; i < rep->n_suspects; i++) {
        uint32_t r = rep->suspects[i]->rank;
        first[i] =
            r == DIAG_RANK_NONE || r >= c->cap ? UINT64_MAX : suspect_from(c, r, from, to_step);
        low = first[i] < low ? first[i] : low;
    }
    return low;
}

double diag_cost_slowdown(const struct diag_cost *c, uint32_t rank, uint64_t to_step,
                          uint32_t window)
{
    uint64_t from = to_step + 1 > window ? to_step + 1 - window : 0;
    double own = 0, ref = 0;

    for (uint64_t k = from; k <= to_step && rank < c->cap; k++) {
        const struct diag_cost_step *s = &c->ring[k % DIAG_COST_STEPS];
        if (s->step != k || s->own[rank] < 0)
            continue;
        own += s->own[rank];
        ref += s->ref[rank];
    }
    return ref > 0 ? own / ref : 0;
}

int diag_cost_report(struct diag_cost *c, Argus__V1__Report *rep, uint64_t to_step, uint32_t window)
{
    uint64_t from = to_step + 1 > window ? to_step + 1 - window : 0;
    uint64_t *first = calloc(rep->n_suspects + 1, sizeof(*first));
    double *hours = calloc(rep->n_suspects + 1, sizeof(*hours));
    double lost_ns = 0, gpu_ns = 0;

    if (!first || !hours) {
        free(first);
        free(hours);
        return -ENOMEM;
    }
    uint64_t low = suspects_from(c, rep, from, to_step, first);
    for (uint64_t k = low; k <= to_step && low != UINT64_MAX; k++) {
        const struct diag_cost_step *s = &c->ring[k % DIAG_COST_STEPS];
        if (s->step != k)
            continue; /* not kept (older than the ring, or never closed) */
        for (size_t i = 0; i < rep->n_suspects; i++) {
            if (first[i] > k)
                continue;
            uint32_t r = rep->suspects[i]->rank;
            c->fix[r] = true;
            hours[i] += diag_cost_whatif(s->own, s->ref, c->fix, c->cap) * s->n;
            c->fix[r] = false;
        }
        for (size_t i = 0; i < rep->n_suspects; i++)
            if (first[i] <= k)
                c->fix[rep->suspects[i]->rank] = true;
        double all = diag_cost_whatif(s->own, s->ref, c->fix, c->cap);
        memset(c->fix, 0, c->cap * sizeof(bool));
        lost_ns += all;
        gpu_ns += all * s->n;
    }
    for (size_t i = 0; i < rep->n_suspects; i++) {
        Argus__V1__Suspect *x = rep->suspects[i];
        x->gpu_hours_lost = hours[i] / 3.6e12;
        if (x->rank != DIAG_RANK_NONE)
            x->slowdown = diag_cost_slowdown(c, x->rank, to_step, window);
    }
    rep->seconds_lost = lost_ns / 1e9;
    rep->gpu_hours_lost = gpu_ns / 3.6e12;
    free(first);
    free(hours);
    return 0;
}
