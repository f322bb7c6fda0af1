/* Robust statistics: see diag_stats.h. */
#include "collector/diag/diag_stats.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static void swap_d(double *a, double *b)
{
    double t = *a;

    *a = *b;
    *b = t;
}

/* Wirth's selection: leaves the k-th smallest at v[k], smaller ones before. */
static double select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

    while (lo < hi) {
        double x = v[kk];
        ptrdiff_t i = lo, j = hi;

        do {
            while (v[i] < x)
                i++;
            while (x < v[j])
                j--;
            if (i <= j) {
                swap_d(&v[i], &v[j]);
                i++;
                j--;
            }
        } while (i <= j);
        if (j < kk)
            lo = i;
        if (kk < i)
            hi = j;
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
