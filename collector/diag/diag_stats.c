/* Robust statistics: see diag_stats.h. */
#include "collector/diag/diag_stats.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static void swap_d(double *a, double *b)
{
    double t = *a;

    *a = *b;
    *b = t;
}

/* Move the elements of v[lo, hi) below x (le: or equal) to its front, in
 * one pass without a branch on the data (each element is swapped with the
 * first one not moved, moved or not); returns where they end. */
static size_t move_below(double *v, size_t lo, size_t hi, double x, bool le)
{
    size_t s = lo;

    if (le)
        for (size_t i = lo; i < hi; i++) {
            double t = v[i];
            v[i] = v[s];
            v[s] = t;
            s += t <= x;
        }
    else
        for (size_t i = lo; i < hi; i++) {
            double t = v[i];
            v[i] = v[s];
            v[s] = t;
            s += t < x;
        }
    return s;
}

/* Index of the median of v[a], v[b], v[c]. */
static size_t median3(const double *v, size_t a, size_t b, size_t c)
{
    if (v[a] < v[b])
        return v[b] < v[c] ? b : v[a] < v[c] ? c : a;
    return v[a] < v[c] ? a : v[b] < v[c] ? c : b;
}

/* Quickselect: leaves the k-th smallest at v[k], none bigger before it and
 * none smaller after. Partitions without data-dependent branches (a
 * mispredicted branch per element was most of Wirth's selection's time),
 * the pivot a median of three; after a lopsided split the elements equal
 * to the pivot are set apart, so that ties (zeros, equal times) do not
 * make it quadratic. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* k in [lo, hi) */

    while (hi - lo > 1) {
        swap_d(&v[median3(v, lo, lo + (hi - lo) / 2, hi - 1)], &v[hi - 1]);
        double x = v[hi - 1];
        size_t s = move_below(v, lo, hi - 1, x, false);
        swap_d(&v[s], &v[hi - 1]); /* [lo, s) < x = v[s] <= (s, hi) */
        if (k < s) {
            hi = s;
            continue;
        }
        if (k == s)
            return x;
        if ((s - lo) * 16 >= hi - lo) {
            lo = s + 1;
            continue;
        }
        /* few below the pivot: perhaps many equal to it */
        size_t e = move_below(v, s + 1, hi, x, true); /* (s, e) == x < [e, hi) */
        if (k < e)
            return x;
        lo = e;
    }
    return v[k];
}

double diag_stats_median_inplace(double *v, size_t n)
{
    if (n == 0)
        return 0;
    double hi = select_kth(v, n, n / 2);
    if (n % 2)
        return hi;
    /* After selecting n/2, everything below index n/2 is <= hi: the lower
     * middle is the largest of them. */
    double lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return (lo + hi) / 2;
}

double diag_stats_select_inplace(double *v, size_t n, size_t k)
{
    return select_kth(v, n, k);
}

double diag_stats_quantile_inplace(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    q = q < 0 ? 0 : q > 1 ? 1 : q;
    return select_kth(v, n, (size_t)(q * (double)(n - 1) + 0.5));
}

double diag_stats_median(const double *v, size_t n, double *scratch)
{
    memcpy(scratch, v, n * sizeof(*v));
    return diag_stats_median_inplace(scratch, n);
}

double diag_stats_mad(const double *v, size_t n, double med, double *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = fabs(v[i] - med);
    return diag_stats_median_inplace(scratch, n);
}

double diag_stats_mad_floor(double mad, double med, double rel_floor, double abs_floor)
{
    double f = fabs(med) * rel_floor;

    if (f < abs_floor)
        f = abs_floor;
    return mad > f ? mad : f;
}

double diag_stats_robust_z(double x, double med, double mad)
{
    return mad > 0 ? DIAG_STATS_Z_SCALE * (x - med) / mad : 0;
}

double diag_stats_fence(double med, double mad, double k)
{
    return med + k * mad;
}

void diag_roll_init(struct diag_roll *r, uint32_t cap)
{
    memset(r, 0, sizeof(*r));
    r->cap = cap < 1 ? 1 : cap > DIAG_STATS_ROLL_MAX ? DIAG_STATS_ROLL_MAX : cap;
}

void diag_roll_push(struct diag_roll *r, double x)
{
    r->v[r->head] = x;
    r->head = (r->head + 1) % r->cap;
    if (r->n < r->cap)
        r->n++;
}

double diag_roll_get(const struct diag_roll *r, uint32_t i)
{
    return r->v[(r->head + r->cap - 1 - i) % r->cap];
}

double diag_roll_median(const struct diag_roll *r)
{
    double tmp[DIAG_STATS_ROLL_MAX];

    for (uint32_t i = 0; i < r->n; i++)
        tmp[i] = diag_roll_get(r, i);
    return diag_stats_median_inplace(tmp, r->n);
}

bool diag_stats_change_point(const double *x, size_t n, size_t base, size_t recent, double k,
                             double min_shift, double min_scale, double *shift, double *scratch)
{
    if (base == 0 || recent == 0 || n < base + recent)
        return false;
    const double *b = x + n - recent - base, *r = x + n - recent;
    double med = diag_stats_median(b, base, scratch);
    double mad = diag_stats_mad(b, base, med, scratch);
    double scale = mad / DIAG_STATS_Z_SCALE; /* robust sigma */
    double sum = 0;

    if (scale < min_scale)
        scale = min_scale;
    for (size_t i = 0; i < recent; i++)
        sum += r[i];
    /* The mean of `recent` values has sigma / sqrt(recent). */
    double d = sum / (double)recent - med;
    if (shift)
        *shift = d;
    return fabs(d) > min_shift && fabs(d) > k * scale / sqrt((double)recent);
}

double diag_stats_w1(const float *a, const float *b, size_t g)
{
    double s = 0;

    for (size_t i = 0; i < g; i++)
        s += fabs((double)a[i] - (double)b[i]);
    return g ? s / (double)g : 0;
}

double diag_stats_qmean(const float *q, size_t g)
{
    double s = 0;

    for (size_t i = 0; i < g; i++)
        s += q[i];
    return g ? s / (double)g : 0;
}

void diag_stats_qmedian(const float *const *qs, size_t m, size_t g, float *out, double *scratch)
{
    /* Transposed first, one function at a time: each function is read once
     * (a column at a time read every function g times, a cache miss each
     * at thousands of functions), the columns in the same order as before. */
    for (size_t j = 0; j < m; j++)
        for (size_t i = 0; i < g; i++)
            scratch[i * m + j] = qs[j][i];
    for (size_t i = 0; i < g; i++)
        out[i] = (float)diag_stats_median_inplace(scratch + i * m, m);
}
