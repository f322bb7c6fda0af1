/* The cluster format as a distribution: see clusters.h. */
#include "common/clusters.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>

static uint64_t total_count(const Argus__V1__KernelGroup *kg)
{
    uint64_t total = 0;

    for (size_t i = 0; i < kg->n_clusters; i++)
        total += kg->clusters[i]->count;
    return total;
}

/* The log-normal of a cluster: its median and sigma. */
struct cluster_shape {
    const Argus__V1__Cluster *cl;
    double p50, sigma;
};

static void cluster_shape(struct cluster_shape *sh, const Argus__V1__Cluster *cl)
{
    double p50 = cl->p50_ns ? (double)cl->p50_ns : 1;
    double p99 = cl->p99_ns > cl->p50_ns ? (double)cl->p99_ns : p50;

    sh->cl = cl;
    sh->p50 = p50;
    sh->sigma = log(p99 / p50) / CLUSTERS_Z99;
}

/* The value of the cluster of shape sh at local level local of its own
 * distribution. */
static double cluster_value(const struct cluster_shape *sh, double local)
{
    const Argus__V1__Cluster *cl = sh->cl;
    double p50 = sh->p50, sigma = sh->sigma;
    double v;

    local = local < 1e-6 ? 1e-6 : local > 1 - 1e-6 ? 1 - 1e-6 : local;
    v = p50 * exp(sigma * clusters_norm_ppf(local));
    if (cl->min_ns && v < (double)cl->min_ns)
        v = (double)cl->min_ns;
    if (cl->max_ns && v > (double)cl->max_ns)
        v = (double)cl->max_ns;
    return v;
}

/* The value at position pos in [0, total count] of kg (n_clusters > 0): in
 * the cluster whose cumulative count covers it, searched from cluster *c
 * with *below counts before it (both advanced, so increasing positions cost
 * O(clusters) in all); sh caches the shape of the last cluster used (sh->cl
 * NULL: none yet). */
static double value_at(const Argus__V1__KernelGroup *kg, double pos, size_t *c, uint64_t *below,
                       struct cluster_shape *sh)
{
    const Argus__V1__Cluster *cl;
    double count;

    while (*c + 1 < kg->n_clusters && pos > (double)(*below + kg->clusters[*c]->count)) {
        *below += kg->clusters[*c]->count;
        (*c)++;
    }
    cl = kg->clusters[*c];
    count = cl->count ? cl->count : 1;
    if (sh->cl != cl)
        cluster_shape(sh, cl);
    return cluster_value(sh, (pos - (double)*below) / count);
}

int clusters_quantile(const Argus__V1__KernelGroup *kg, double p, double *out_ns)
{
    uint64_t total = total_count(kg), below = 0;
    struct cluster_shape sh = {0};
    size_t c = 0;

    if (!total || !(p >= 0 && p <= 1))
        return -EINVAL;
    *out_ns = value_at(kg, p * (double)total, &c, &below, &sh);
    return 0;
}

/* Phi^-1 of the grid's levels for g points (levels kept in [1e-6, 1 - 1e-6]
 * as cluster_value does), computed once per g up to GRID_TABLE points: the
 * one-cluster grid costs an exp per point, not a ppf, a log and an exp. */
#define GRID_TABLE 64

static const double *grid_ppf(size_t g)
{
    static _Thread_local double table[GRID_TABLE];
    static _Thread_local size_t table_g;

    if (g > GRID_TABLE)
        return NULL;
    if (table_g != g) {
        for (size_t i = 0; i < g; i++) {
            double local = ((double)i + 0.5) / (double)g;
            local = local < 1e-6 ? 1e-6 : local > 1 - 1e-6 ? 1 - 1e-6 : local;
            table[i] = clusters_norm_ppf(local);
        }
        table_g = g;
    }
    return table;
}

/* The grid of a group of one counted cluster: the cluster's own quantiles at
 * the grid's levels (cluster_value with its constants taken out of the loop).
 * The levels are symmetric about the median (z[g-1-i] = -z[i]), so one expf
 * gives two points, in float as the grid holds them: the grids of every
 * group of every rank are most of diagnosis's exps. */
static void one_cluster_grid(const Argus__V1__Cluster *cl, const double *z, float *out, size_t g)
{
    double p50 = cl->p50_ns ? (double)cl->p50_ns : 1;
    double p99 = cl->p99_ns > cl->p50_ns ? (double)cl->p99_ns : p50;
    float sigma = (float)(log(p99 / p50) / CLUSTERS_Z99), m = (float)p50;
    float lo = cl->min_ns ? (float)cl->min_ns : 0, hi = cl->max_ns ? (float)cl->max_ns : INFINITY;

    for (size_t i = 0; i < (g + 1) / 2; i++) {
        float e = sigma == 0 ? 1 : expf(sigma * (float)z[i]), below = m * e, above = m / e;

        out[i] = below < lo ? lo : below > hi ? hi : below;
        out[g - 1 - i] = above < lo ? lo : above > hi ? hi : above;
    }
}

int clusters_quantile_grid(const Argus__V1__KernelGroup *kg, float *out, size_t g)
{
    uint64_t total = total_count(kg), below = 0;
    const Argus__V1__Cluster *only = NULL;
    struct cluster_shape sh = {0};
    size_t c = 0, counted = 0;
    const double *z;

    if (!total || !g)
        return -EINVAL;
    for (size_t i = 0; i < kg->n_clusters; i++)
        if (kg->clusters[i]->count) {
            only = kg->clusters[i];
            counted++;
        }
    /* one cluster holds every count: the level within it is the grid's own
     * (value_at passes the empty ones before it and never reaches those after) */
    if (counted == 1 && (z = grid_ppf(g))) {
        one_cluster_grid(only, z, out, g);
        return 0;
    }
    for (size_t i = 0; i < g; i++)
        out[i] =
            (float)value_at(kg, ((double)i + 0.5) / (double)g * (double)total, &c, &below, &sh);
    return 0;
}

double clusters_norm_ppf(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    double q, r;

    if (p <= 0)
        return -INFINITY;
    if (p >= 1)
        return INFINITY;
    if (p < 0.02425) {
        q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - 0.02425) {
        q = sqrt(-2 * log(1 - p));
        return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    q = p - 0.5;
    r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}
