/* L1 iteration time: see diag_l1.h. */
#include "collector/diag/diag_l1.h"

#include <math.h>
#include <string.h>

void diag_l1_defaults(struct diag_l1_options *o)
{
    if (!o->roll_window)
        o->roll_window = 16;
    if (o->spike_ratio <= 1)
        o->spike_ratio = 1.5;
    if (o->spike_jitter_k <= 0)
        o->spike_jitter_k = 5;
    if (o->spike_one_ratio <= 0)
        o->spike_one_ratio = 4;
    if (!o->spike_max_len)
        o->spike_max_len = 3;
    if (!o->cp_base)
        o->cp_base = 24;
    if (!o->cp_recent)
        o->cp_recent = 8;
    if (o->cp_base + o->cp_recent > DIAG_L1_HISTORY)
        o->cp_base = DIAG_L1_HISTORY - o->cp_recent;
    if (o->cp_k <= 0)
        o->cp_k = 6;
    if (o->cp_min_ratio <= 1)
        o->cp_min_ratio = 1.1;
}

void diag_l1_init(struct diag_l1 *l, const struct diag_l1_options *o)
{
    memset(l, 0, sizeof(*l));
    l->o = *o;
    diag_l1_defaults(&l->o);
    diag_roll_init(&l->roll, l->o.roll_window);
}

void diag_l1_rebase(struct diag_l1 *l)
{
    l->n_logt = 0;
}

static void push_logt(struct diag_l1 *l, double v)
{
    if (l->n_logt == DIAG_L1_HISTORY) {
        memmove(l->logt, l->logt + 1, (DIAG_L1_HISTORY - 1) * sizeof(double));
        l->n_logt--;
    }
    l->logt[l->n_logt++] = v;
}

/* The step time above which T_k is a spike: spike_ratio times the rolling
 * median, or the job's own jitter (spike_jitter_k robust sigmas of log T
 * over the rolling window) when that is wider. */
static double spike_line(const struct diag_l1 *l, double med)
{
    double dev[DIAG_STATS_ROLL_MAX], scratch[DIAG_STATS_ROLL_MAX];
    uint32_t n = l->roll.n;

    for (uint32_t i = 0; i < n; i++)
        dev[i] = fabs(log(fmax(diag_roll_get(&l->roll, i), 1) / med));
    double sigma = 1.4826 * diag_stats_median(dev, n, scratch);
    return med * fmax(l->o.spike_ratio, exp(l->o.spike_jitter_k * sigma));
}

static void spike_update(struct diag_l1 *l, uint64_t step, double t, double med, uint32_t rank,
                         struct diag_l1_event *ev)
{
    bool high = l->roll.n >= 5 && med > 0 && t > spike_line(l, med);

    if (high && l->shifted)
        return;
    l->shifted = false;
    if (high) {
        if (!l->in_spike) {
            memset(&l->pending, 0, sizeof(l->pending));
            l->pending.spike_from = step;
            l->pending.spike_median_ns = med;
            l->in_spike = true;
            l->spike_len = 0;
        }
        l->spike_len++;
        l->pending.spike_to = step;
        if (t > l->pending.spike_peak_ns) {
            l->pending.spike_peak_ns = t;
            l->pending.spike_rank = rank;
        }
        if (l->spike_len > l->o.spike_max_len) {
            l->in_spike = false; /* a level shift: L1 regression's business */
            l->shifted = true;
        }
        return;
    }
    bool one = l->pending.spike_from == l->pending.spike_to;
    if (l->in_spike && one &&
        l->pending.spike_peak_ns < l->o.spike_one_ratio * l->pending.spike_median_ns)
        l->in_spike = false; /* one step's wobble: no finding */
    if (l->in_spike) {
        ev->spike = true;
        ev->spike_from = l->pending.spike_from;
        ev->spike_to = l->pending.spike_to;
        ev->spike_peak_ns = l->pending.spike_peak_ns;
        ev->spike_median_ns = l->pending.spike_median_ns;
        ev->spike_rank = l->pending.spike_rank;
        l->in_spike = false;
    }
}

/* Every value of the recent window is above the base median by min: the
 * shift is complete, so its size and start step are right. */
static bool recent_all_high(const struct diag_l1 *l, double min, double *scratch)
{
    const double *base = l->logt + l->n_logt - l->o.cp_recent - l->o.cp_base;
    double med = diag_stats_median(base, l->o.cp_base, scratch);

    for (uint32_t i = l->n_logt - l->o.cp_recent; i < l->n_logt; i++)
        if (l->logt[i] < med + min)
            return false;
    return true;
}

void diag_l1_step(struct diag_l1 *l, uint64_t step, double t_ns, uint32_t rank,
                  struct diag_l1_event *ev)
{
    double med = diag_roll_median(&l->roll), shift = 0;
    double scratch[DIAG_L1_HISTORY];

    memset(ev, 0, sizeof(*ev));
    if (t_ns < 1)
        t_ns = 1;
    spike_update(l, step, t_ns, med, rank, ev);
    /* Spikes are winsorised so one 40x stall does not look like a shift. */
    double w = (l->roll.n >= 5 && t_ns > l->o.spike_ratio * med) ? l->o.spike_ratio * med : t_ns;
    diag_roll_push(&l->roll, t_ns);
    push_logt(l, log(w));
    if (diag_stats_change_point(l->logt, l->n_logt, l->o.cp_base, l->o.cp_recent, l->o.cp_k,
                                log(l->o.cp_min_ratio), 0.005, &shift, scratch) &&
        shift > 0 && recent_all_high(l, log(l->o.cp_min_ratio) / 2, scratch)) {
        ev->regression = true;
        ev->regression_ratio = exp(shift);
        ev->regression_from = step + 1 - l->o.cp_recent;
    }
}
