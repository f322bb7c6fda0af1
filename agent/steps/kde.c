/* KDE clustering of one kernel group: see kde.h (the method: summarize.h). */
#include "agent/steps/kde.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KDE_SMALL_SORT 48       /* insertion sort below this many durations */
#define KDE_KERNEL_SIGMAS 4.0   /* direct Gaussian kernel truncated at 4h */
#define KDE_RECURSIVE_SIGMA 3.0 /* wider kernels (grid steps): recursive filter */
#define KDE_GRID_PAD 3.0        /* grid spans [min - 3h, max + 3h] */
#define KDE_MAX_DEPTH 4         /* re-splits of a segment with its own bandwidth */

struct kde {
    struct summarize_options o;
    uint64_t *tmp; /* sort scratch, cap durations */
    double *logs;  /* cap */
    size_t cap;
    double *bins, *dens, *weights; /* grid_points each */
};

struct kde *kde_new(const struct summarize_options *o)
{
    struct kde *k = calloc(1, sizeof(*k));

    if (!k)
        return NULL;
    k->o = *o;
    k->bins = calloc(o->grid_points, sizeof(double));
    k->dens = calloc(o->grid_points, sizeof(double));
    k->weights = calloc(o->grid_points, sizeof(double));
    if (!k->bins || !k->dens || !k->weights) {
        kde_free(k);
        return NULL;
    }
    return k;
}

void kde_free(struct kde *k)
{
    if (!k)
        return;
    free(k->tmp);
    free(k->logs);
    free(k->bins);
    free(k->dens);
    free(k->weights);
    free(k);
}

int kde_reserve(struct kde *k, size_t n)
{
    uint64_t *tmp;
    double *logs;

    if (n <= k->cap)
        return 0;
    tmp = malloc(n * sizeof(*tmp));
    logs = malloc(n * sizeof(*logs));
    if (!tmp || !logs) {
        free(tmp);
        free(logs);
        return -ENOMEM;
    }
    free(k->tmp);
    free(k->logs);
    k->tmp = tmp;
    k->logs = logs;
    k->cap = n;
    return 0;
}

/* --- sorting ------------------------------------------------------------- */

/* LSD radix sort, 8 bits per pass; passes where every key has the same digit
 * (the high bytes of durations) are skipped. tmp holds n values, n > 0. */
static void radix_sort_u64(uint64_t *a, uint64_t *tmp, size_t n)
{
    size_t hist[8][256] = {{0}};
    uint64_t *src = a, *dst = tmp;

    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < 8; p++)
            hist[p][(a[i] >> (8 * p)) & 0xff]++;
    for (int p = 0; p < 8; p++) {
        size_t sum = 0;

        if (hist[p][(a[0] >> (8 * p)) & 0xff] == n)
            continue;
        for (int d = 0; d < 256; d++) {
            size_t c = hist[p][d];

            hist[p][d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[hist[p][(src[i] >> (8 * p)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(*a));
}

/* Sort n durations: insertion sort when few, radix sort otherwise. */
static void sort_u64(uint64_t *a, uint64_t *tmp, size_t n)
{
    if (n >= KDE_SMALL_SORT) {
        radix_sort_u64(a, tmp, n);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        size_t j = i;

        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

/* --- clustering ---------------------------------------------------------- */

/* Round v to bits significant bits (0 = exact). Monotonic, so the order
 * min <= p50 <= p99 <= max survives. */
static uint64_t quantize(uint64_t v, uint32_t bits)
{
    int msb;
    uint32_t shift;

    if (!bits || v == 0)
        return v;
    msb = 63 - __builtin_clzll(v);
    if ((uint32_t)msb < bits)
        return v;
    shift = (uint32_t)msb + 1 - bits;
    if (v > UINT64_MAX - (UINT64_C(1) << (shift - 1)))
        return v;
    return ((v + (UINT64_C(1) << (shift - 1))) >> shift) << shift;
}

/* Statistics of sorted dur[0..m), nearest-rank percentiles. */
static void cluster_fill(const struct summarize_options *o, const uint64_t *dur, size_t m,
                         struct kde_cluster *c)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < m; i++)
        sum += dur[i];
    c->count = (uint32_t)m;
    c->p50 = quantize(dur[(50 * m + 99) / 100 - 1], o->quantize_bits);
    c->p99 = quantize(dur[(99 * m + 99) / 100 - 1], o->quantize_bits);
    c->sum = (o->fields & SUMMARIZE_FIELD_SUM) ? quantize(sum, o->quantize_bits) : 0;
    c->min = (o->fields & SUMMARIZE_FIELD_MIN_MAX) ? quantize(dur[0], o->quantize_bits) : 0;
    c->max = (o->fields & SUMMARIZE_FIELD_MIN_MAX) ? quantize(dur[m - 1], o->quantize_bits) : 0;
}

/* Number of logs[0..n) below x (logs sorted). */
static size_t count_below(const double *logs, size_t n, double x)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (logs[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* dens = bins convolved with a Gaussian of sigma grid steps, by the
 * recursive filter of Young and van Vliet (1995): a causal and an anti-causal
 * third-order pass, O(grid) whatever sigma. The grid's 3h padding holds no
 * samples, so starting both passes from zero costs nothing where it matters. */
static void gauss_recursive(const double *bins, double *dens, uint32_t g, double sigma)
{
    double q =
        sigma >= 2.5 ? 0.98711 * sigma - 0.96330 : 3.97156 - 4.14554 * sqrt(1 - 0.26891 * sigma);
    double b0 = 1.57825 + 2.44413 * q + 1.4281 * q * q + 0.422205 * q * q * q;
    double b1 = (2.44413 * q + 2.85619 * q * q + 1.26661 * q * q * q) / b0;
    double b2 = -(1.4281 * q * q + 1.26661 * q * q * q) / b0;
    double b3 = 0.422205 * q * q * q / b0;
    double gain = 1 - (b1 + b2 + b3), w1 = 0, w2 = 0, w3 = 0;

    for (uint32_t i = 0; i < g; i++) {
        double w = gain * bins[i] + b1 * w1 + b2 * w2 + b3 * w3;

        dens[i] = w;
        w3 = w2, w2 = w1, w1 = w;
    }
    w1 = w2 = w3 = 0;
    for (uint32_t i = g; i-- > 0;) {
        double y = gain * dens[i] + b1 * w1 + b2 * w2 + b3 * w3;

        dens[i] = y;
        w3 = w2, w2 = w1, w1 = y;
    }
}

/* dens = bins convolved with the Gaussian of sigma grid steps truncated at
 * 4 sigma, directly: for narrow kernels, where it is cheap and exact. */
static void gauss_direct(const double *bins, double *dens, double *w, uint32_t g, double sigma)
{
    uint32_t k_max = (uint32_t)fmin(g - 1, ceil(KDE_KERNEL_SIGMAS * sigma));

    for (uint32_t k = 0; k <= k_max; k++)
        w[k] = exp(-0.5 * (k / sigma) * (k / sigma));
    memset(dens, 0, g * sizeof(*dens));
    for (uint32_t j = 0; j < g; j++) {
        uint32_t a = j > k_max ? j - k_max : 0, b = j + k_max < g - 1 ? j + k_max : g - 1;

        if (bins[j] == 0)
            continue;
        for (uint32_t i = a; i <= b; i++)
            dens[i] += bins[j] * w[i > j ? i - j : j - i];
    }
}

/* The KDE of the sorted logs on the grid lo + i * dx, into k->dens (up to a
 * constant factor): linear binning, then the Gaussian of bandwidth h. */
static void kde_density(struct kde *k, const double *logs, size_t n, double h, double lo, double dx)
{
    uint32_t g = k->o.grid_points;
    double *bins = k->bins;

    memset(bins, 0, g * sizeof(*bins));
    for (size_t i = 0; i < n; i++) {
        double t = (logs[i] - lo) / dx;
        uint32_t j = (uint32_t)t;
        double frac = t - j;

        if (j >= g - 1) {
            j = g - 2;
            frac = 1;
        }
        bins[j] += 1 - frac;
        bins[j + 1] += frac;
    }
    if (h / dx >= KDE_RECURSIVE_SIGMA)
        gauss_recursive(bins, k->dens, g, h / dx);
    else
        gauss_direct(bins, k->dens, k->weights, g, h / dx);
}

/* Index of the highest density in dens[a..b]. */
static uint32_t peak_in(const double *dens, uint32_t a, uint32_t b)
{
    uint32_t best = a;

    for (uint32_t i = a + 1; i <= b; i++)
        if (dens[i] > dens[best])
            best = i;
    return best;
}

/* Cut positions (as counts of logs below each cut, increasing) of one group;
 * returns how many, at most max_cuts. */
static uint32_t kde_cuts(struct kde *k, const double *logs, size_t n, size_t *cuts,
                         uint32_t max_cuts)
{
    const struct summarize_options *o = &k->o;
    double mean = 0, var = 0, h, lo, dx;
    uint32_t g = o->grid_points, n_cuts = 0, left_peak, seg_start = 0;
    size_t below_last = 0, min_side = (size_t)ceil(o->min_fraction * (double)n);

    for (size_t i = 0; i < n; i++)
        mean += logs[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (logs[i] - mean) * (logs[i] - mean);
    var /= (double)(n - 1);
    if (!(var > 1e-18))
        return 0;
    h = 1.06 * sqrt(var) * pow((double)n, -0.2);
    lo = logs[0] - KDE_GRID_PAD * h;
    dx = (logs[n - 1] + KDE_GRID_PAD * h - lo) / (g - 1);
    kde_density(k, logs, n, h, lo, dx);
    if (min_side < o->min_count)
        min_side = o->min_count;

    for (uint32_t i = 1; i + 1 < g && n_cuts < max_cuts; i++) {
        const double *d = k->dens;
        uint32_t next = i + 1, right_peak;
        size_t below;

        if (!(d[i] < d[i - 1] && d[i] <= d[i + 1]))
            continue;
        /* the right mode: up to the next valley (or the end) */
        while (next + 1 < g && !(d[next] < d[next - 1] && d[next] <= d[next + 1]))
            next++;
        left_peak = peak_in(d, seg_start, i);
        right_peak = peak_in(d, i, next);
        below = count_below(logs, n, lo + i * dx);
        if (below - below_last >= min_side && n - below >= min_side &&
            (right_peak - left_peak) * dx >= o->min_log_gap &&
            d[i] <= o->max_valley_ratio * fmin(d[left_peak], d[right_peak])) {
            cuts[n_cuts++] = below;
            below_last = below;
            seg_start = i;
        }
    }
    return n_cuts;
}

/* Cuts of logs[0..n) (counts below each cut, plus offset) appended to
 * cuts[*n_cuts..max_cuts): one KDE pass, then each resulting segment again
 * with its own bandwidth, because Scott's rule over several modes is wide
 * enough to blur two neighbouring ones into one. */
static void split_segment(struct kde *k, const double *logs, size_t n, size_t offset, size_t *cuts,
                          uint32_t *n_cuts, uint32_t max_cuts, int depth)
{
    size_t local[SUMMARIZE_MAX_CLUSTERS], start = 0;
    uint32_t found;

    if (*n_cuts >= max_cuts || n < 2 * (size_t)k->o.min_count)
        return;
    found = kde_cuts(k, logs, n, local, max_cuts - *n_cuts);
    for (uint32_t c = 0; c <= found && *n_cuts < max_cuts; c++) {
        size_t end = c < found ? local[c] : n;

        if (found && depth < KDE_MAX_DEPTH)
            split_segment(k, logs + start, end - start, offset + start, cuts, n_cuts, max_cuts,
                          depth + 1);
        if (c < found && *n_cuts < max_cuts)
            cuts[(*n_cuts)++] = offset + end;
        start = end;
    }
}

uint32_t kde_summarize(struct kde *k, uint64_t *dur, size_t n, struct kde_cluster *out)
{
    size_t cuts[SUMMARIZE_MAX_CLUSTERS], start = 0;
    uint32_t n_cuts = 0;

    sort_u64(dur, k->tmp, n);
    if (n >= 2 * (size_t)k->o.min_count && k->o.max_clusters > 1) {
        for (size_t i = 0; i < n; i++)
            k->logs[i] = log(dur[i] ? (double)dur[i] : 1.0);
        split_segment(k, k->logs, n, 0, cuts, &n_cuts, k->o.max_clusters - 1, 0);
    }
    for (uint32_t c = 0; c <= n_cuts; c++) {
        size_t end = c < n_cuts ? cuts[c] : n;

        cluster_fill(&k->o, dur + start, end - start, &out[c]);
        start = end;
    }
    return n_cuts + 1;
}
