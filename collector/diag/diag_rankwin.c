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
    float chance, gap, runq, off_cpu;
};

void diag_rankwin_init(struct diag_rankwin *w, uint32_t window)
{
    memset(w, 0, sizeof(*w));
    w->window = window < 1 ? 1 : window > 64 ? 64 : window;
}

void diag_rankwin_free(struct diag_rankwin *w)
{
    free(w->slots);
    free(w->scratch);
    diag_rankwin_init(w, w->window);
}

int diag_rankwin_reserve(struct diag_rankwin *w, uint32_t cap)
{
    if (cap <= w->cap)
        return 0;
    int err = array_grow_zeroed((void **)&w->slots, (size_t)w->cap * w->window,
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

/* Median gap over the window, each step's median weighted by its count. */
static double gap_median(const struct diag_rankwin *w, uint32_t rank, uint32_t total)
{
    uint32_t seen = 0, best = 0;
    double gap = 0;

    /* Weighted median: the smallest step median whose cumulative weight
     * reaches half; O(window^2), window <= 64. */
    for (uint32_t i = 0; i < w->window; i++) {
        const struct diag_rankwin_slot *a = &w->slots[(size_t)rank * w->window + i];
        if (!a->last)
            continue;
        uint32_t below = 0;
        for (uint32_t j = 0; j < w->window; j++) {
            const struct diag_rankwin_slot *b = &w->slots[(size_t)rank * w->window + j];
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

int diag_rankwin_get(struct diag_rankwin *w, uint32_t rank, const uint32_t *members, uint32_t n,
                     struct diag_rank_evidence *out)
{
    memset(out, 0, sizeof(*out));
    if (rank >= w->cap)
        return 0;
    if (n * 2 > w->scratch_cap) {
        if (array_grow_zeroed((void **)&w->scratch, 0, (size_t)n * 2, sizeof(double)))
            return -ENOMEM;
        w->scratch_cap = n * 2;
    }
    for (uint32_t i = 0; i < w->window; i++) {
        const struct diag_rankwin_slot *s = &w->slots[(size_t)rank * w->window + i];
        out->part += s->part;
        out->last += s->last;
        out->chance += s->chance;
    }
    out->gap_ns = gap_median(w, rank, out->last);
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
    return 0;
}
