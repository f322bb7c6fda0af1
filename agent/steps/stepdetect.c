/* Period-based step detection over a rank's collective calls (see
 * stepdetect.h). */
#include "agent/steps/stepdetect.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t call_end(const struct stepdetect_call *c)
{
    return c->end_ns > c->ts_ns ? c->end_ns : c->ts_ns;
}

/* Gap before call i (from the latest return before it to its arrival). */
static uint64_t gap_before(const struct stepdetect_call *calls, size_t i, uint64_t *last_end)
{
    uint64_t g = calls[i].ts_ns > *last_end ? calls[i].ts_ns - *last_end : 0;
    uint64_t e = call_end(&calls[i]);

    if (e > *last_end)
        *last_end = e;
    return g;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Otsu's threshold on log gaps: the split that maximises the between-class
 * variance, over the sorted gaps (sorted is scratch of n entries). Returns
 * UINT64_MAX (no split) when the gaps are not bimodal (the two class means
 * closer than a factor of 4). */
static uint64_t gap_threshold(const uint64_t *gaps, size_t n, uint64_t min_gap, uint64_t *sorted)
{
    double best = -1, sum = 0, s0 = 0;
    uint64_t thr = UINT64_MAX;

    memcpy(sorted, gaps, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), cmp_u64);
    for (size_t i = 0; i < n; i++)
        sum += log((double)sorted[i] + 1.0);
    for (size_t i = 0; i + 1 < n; i++) { /* class 0 = sorted[0..i] */
        double w0 = (double)(i + 1), w1 = (double)(n - i - 1), m0, m1, between;

        s0 += log((double)sorted[i] + 1.0);
        if (sorted[i] == sorted[i + 1])
            continue; /* split only between distinct values */
        m0 = s0 / w0;
        m1 = (sum - s0) / w1;
        between = w0 * w1 * (m1 - m0) * (m1 - m0);
        if (between > best && m1 - m0 > log(4.0)) {
            best = between;
            thr = sorted[i];
        }
    }
    if (thr == UINT64_MAX)
        return thr;
    return thr > min_gap ? thr : min_gap;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0x100000001b3ULL;
}

/* Smallest period p whose shifted signatures match at least frac of the
 * positions after the first quarter (a warm-up prefix, e.g. DDP's initial
 * broadcasts, does not repeat). Returns 0 when none. */
static uint32_t find_period(const uint64_t *sig, size_t n, uint32_t max_period, double frac)
{
    size_t from = n / 4;

    for (uint32_t p = 1; p <= max_period && from + 2 * (size_t)p <= n; p++) {
        size_t match = 0, total = n - p - from;

        for (size_t i = from; i + p < n; i++)
            match += sig[i] == sig[i + p];
        if ((double)match >= frac * (double)total)
            return p;
    }
    return 0;
}

/* Where the periodic part begins: after the last mismatch with period p in
 * the first quarter. */
static size_t periodic_start(const uint64_t *sig, size_t n, uint32_t p)
{
    size_t start = 0;

    for (size_t i = 0; i < n / 4 && i + p < n; i++)
        if (sig[i] != sig[i + p])
            start = i + 1;
    return start;
}

/* Does one position of period p carry the compute gap: its mean log gap
 * larger than every other position's by a factor of 2? (Noise gives some
 * autocorrelation at any lag; a real step structure gives this. DDP's
 * buckets are spaced by backward compute, often a third of the step's
 * largest gap, so a factor of 4 missed them.) */
static bool gaps_show_period(const uint64_t *gaps, size_t nb, uint32_t p)
{
    double mean[256] = {0}, top = -1, second = -1;
    size_t cnt[256] = {0};

    for (size_t i = nb / 4 + 1; i < nb; i++) {
        mean[i % p] += log((double)gaps[i] + 1.0);
        cnt[i % p]++;
    }
    for (uint32_t r = 0; r < p; r++) {
        double m = cnt[r] ? mean[r] / (double)cnt[r] : 0;

        if (m > top) {
            second = top;
            top = m;
        } else if (m > second) {
            second = m;
        }
    }
    return top - second > log(2.0);
}

/* Does one position of period p hold the longest gap in nearly every cycle
 * (85% of at least 16 whole cycles after the first quarter)? Compared within
 * each cycle, a load that drifts over seconds (which correlates the gaps at
 * every lag, so the autocorrelation sees period p0) cancels out. Cycles
 * start at the same place, so positions mean the same call. */
static bool gaps_dominant(const uint64_t *gaps, size_t nb, uint32_t p)
{
    uint32_t wins[256] = {0}, cycles = 0, top = 0;

    for (size_t c = nb / 4 + 1; p <= 256 && c + p <= nb; c += p, cycles++) {
        uint32_t best = 0;

        for (uint32_t i = 1; i < p; i++)
            if (gaps[c + i] > gaps[c + best])
                best = i;
        if (++wins[best] > top)
            top = wins[best];
    }
    return cycles >= 16 && top >= 0.85 * cycles;
}

/* p0, or the largest multiple of it up to 4 p0 whose cycles show one
 * position with the longest gap (the largest: with period 4, cycles of 2
 * can show it too; with period 2, cycles of 4 hold two such positions). */
static uint32_t refine_within(const uint64_t *gaps, size_t nb, uint32_t p0, uint32_t max_period)
{
    for (uint32_t k = 4; k >= 2; k--)
        if (k * p0 <= max_period && gaps_dominant(gaps, nb, k * p0))
            return k * p0;
    return p0;
}

/* Refine a signature period p0 by the period of the gaps before the bursts
 * (identical signatures, e.g. c10d calls without bytes, still show the
 * compute gap once per step): the smallest multiple of p0 whose
 * autocorrelation of log gaps is at least 0.8 of the best one and above
 * 0.3, and whose positions show the compute gap (a multiple of the true
 * period autocorrelates as well but fails that, so the search goes on).
 * Like find_period, it leaves out the first quarter (set-up collectives,
 * e.g. DDP's broadcasts, close together, would correlate at every lag).
 * When that gives p0, the cycles of its multiples are checked one by one
 * (refine_within). Returns p0 when the gaps show no period. */
static uint32_t refine_period(const uint64_t *gaps, size_t nb, uint32_t p0, uint32_t max_period)
{
    double mean = 0, var = 0, best = 0, r[257] = {0};
    size_t from = nb / 4 + 1, m = nb - from;

    if (nb < 8 || max_period > 256)
        return p0;
    for (size_t i = from; i < nb; i++)
        mean += log((double)gaps[i] + 1.0) / (double)m;
    for (size_t i = from; i < nb; i++)
        var += pow(log((double)gaps[i] + 1.0) - mean, 2);
    if (var <= 0)
        return p0;
    for (uint32_t p = p0; p <= max_period && 2 * (size_t)p < m; p += p0) {
        double acc = 0;

        for (size_t i = from; i + p < nb; i++)
            acc += (log((double)gaps[i] + 1.0) - mean) * (log((double)gaps[i + p] + 1.0) - mean);
        r[p] = acc / var * (double)m / (double)(m - p);
        best = r[p] > best ? r[p] : best;
    }
    for (uint32_t p = p0; p <= max_period && 2 * (size_t)p < m; p += p0)
        if (r[p] > 0.3 && r[p] >= 0.8 * best && (p == p0 || gaps_show_period(gaps, nb, p)))
            return p == p0 ? refine_within(gaps, nb, p0, max_period) : p;
    return refine_within(gaps, nb, p0, max_period);
}

/* The position (call index mod p) whose preceding gap is longest on
 * average over the periodic part: the call that follows the compute gap. */
static uint32_t choose_phase(const uint64_t *gaps, size_t n, size_t first, uint32_t p)
{
    uint64_t best_gap = 0;
    uint32_t phase = 0;

    for (uint32_t r = 0; r < p; r++) {
        uint64_t sum = 0, cnt = 0;

        for (size_t c = first + r + (first + r ? 0 : p); c < n; c += p, cnt++)
            sum += gaps[c];
        if (cnt && sum / cnt > best_gap) {
            best_gap = sum / cnt;
            phase = (uint32_t)((first + r) % p);
        }
    }
    return phase;
}

/* Cut the steps. A step runs from the end of the burst before its compute
 * gap to the end of the next one: B(c) = ts[c] - gaps[c] is the latest
 * return before call c, so the first step needs a periodic call before it. */
static size_t cut_steps(const struct stepdetect_call *calls, size_t n, const uint64_t *gaps,
                        uint64_t thr, size_t first, uint32_t p, uint32_t phase,
                        struct stepdetect_step *steps, size_t max_steps)
{
    size_t nsteps = 0, c0 = first + (phase + p - first % p) % p;

    if (c0 == first)
        c0 += p;
    for (; c0 + p < n && nsteps < max_steps; c0 += p) {
        struct stepdetect_step *s = &steps[nsteps++];
        uint64_t compute = 0;

        memset(s, 0, sizeof(*s));
        s->first_call = (uint32_t)c0;
        s->ncalls = p;
        s->start_ns = calls[c0].ts_ns - gaps[c0];
        s->step_ns = calls[c0 + p].ts_ns - gaps[c0 + p] - s->start_ns;
        for (size_t c = c0; c < c0 + p; c++) /* gaps that split bursts are compute */
            if (gaps[c] > thr)
                compute += gaps[c];
        s->compute_ns = compute < s->step_ns ? compute : s->step_ns;
        s->collective_ns = s->step_ns - s->compute_ns;
    }
    return nsteps;
}

static int check_input(const struct stepdetect_call *calls, size_t n, const uint64_t *scratch,
                       const struct stepdetect_step *steps, size_t max_steps)
{
    if (!calls || !scratch || (!steps && max_steps))
        return -EINVAL;
    for (size_t i = 1; i < n; i++)
        if (calls[i].ts_ns < calls[i - 1].ts_ns)
            return -EINVAL;
    return 0;
}

int stepdetect_find(const struct stepdetect_call *calls, size_t n,
                    const struct stepdetect_opts *opts, uint64_t *scratch,
                    struct stepdetect_step *steps, size_t max_steps, struct stepdetect_info *info)
{
    struct stepdetect_opts o = opts ? *opts : (struct stepdetect_opts){0};
    uint64_t *gaps = scratch, *sig = scratch + n; /* gaps[i]: before call i */
    uint64_t thr, last_end;
    size_t nb = 0, first;
    uint32_t p, phase;
    int err = check_input(calls, n, scratch, steps, max_steps);
    struct stepdetect_info local;

    if (!info)
        info = &local;
    memset(info, 0, sizeof(*info));
    if (err < 0 || n < 4)
        return err;
    o.max_period = o.max_period ? o.max_period : 64;
    o.min_gap_ns = o.min_gap_ns ? o.min_gap_ns : 50000;
    o.match_fraction = o.match_fraction > 0 ? o.match_fraction : 0.9;
    last_end = call_end(&calls[0]);
    gaps[0] = 0;
    for (size_t i = 1; i < n; i++)
        gaps[i] = gap_before(calls, i, &last_end);
    thr = gap_threshold(gaps + 1, n - 1, o.min_gap_ns, sig);
    if (thr == UINT64_MAX) /* one gap size: every call is its own burst */
        thr = 0;
    for (size_t i = 0; i < n; i++) {
        sig[i] = mix(mix(0xcbf29ce484222325ULL, calls[i].name_id), calls[i].bytes);
        nb += i == 0 || gaps[i] > thr;
    }
    info->bursts = (uint32_t)nb;
    info->gap_threshold_ns = thr;
    /* Period over call signatures, refined by the gaps (identical
     * signatures still show the compute gap once per step). */
    p = find_period(sig, n, o.max_period, o.match_fraction);
    if (!p)
        return 0;
    p = refine_period(gaps, n, p, o.max_period);
    first = periodic_start(sig, n, p);
    phase = choose_phase(gaps, n, first, p);
    info->period = p;
    info->phase = phase;
    return (int)cut_steps(calls, n, gaps, thr, first, p, phase, steps, max_steps);
}
