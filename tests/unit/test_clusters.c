/* common/clusters: the quantile function rebuilt from a KernelGroup's
 * clusters (one cluster, a two-mode mixture, min/max clamps, a point mass,
 * the grid against single quantiles), the round trip from clusters that the
 * agent's summarizer wrote back to the sample's own quantiles, and the
 * normal quantile function underneath. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/summarize.h"
#include "common/clusters.h"
#include "proto/argus.pb-c.h"
#include "tests/lib/rng.h"

static Argus__V1__Cluster cl[3];
static Argus__V1__Cluster *clp[3] = {&cl[0], &cl[1], &cl[2]};

static Argus__V1__KernelGroup group_of(size_t n)
{
    Argus__V1__KernelGroup kg = ARGUS__V1__KERNEL_GROUP__INIT;

    kg.clusters = clp;
    kg.n_clusters = n;
    return kg;
}

/* Mean of a quantile function on a grid of g points. */
static double grid_mean(const float *q, size_t g)
{
    double s = 0;

    for (size_t i = 0; i < g; i++)
        s += q[i];
    return s / (double)g;
}

static void test_single_cluster_quantiles(void **state)
{
    Argus__V1__KernelGroup kg = group_of(1);
    float q[50];

    cl[0] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    cl[0].count = 1000;
    cl[0].p50_ns = 100000;
    cl[0].p99_ns = 150000;
    assert_int_equal(clusters_quantile_grid(&kg, q, 50), 0);
    assert_true(q[24] < 100000 && q[25] > 100000); /* p = 0.49, 0.51 bracket p50 */
    assert_float_equal(q[49], 150000, 150);        /* p = 0.99 is p99 */
    for (int i = 1; i < 50; i++)
        assert_true(q[i] > q[i - 1]);
    /* Log-normal: the median of the rebuilt function is p50 (geometric). */
    assert_float_equal(sqrt((double)q[24] * q[25]), 100000, 100);
    /* min/max clamp the tails. */
    cl[0].max_ns = 120000;
    cl[0].min_ns = 90000;
    assert_int_equal(clusters_quantile_grid(&kg, q, 50), 0);
    assert_true(q[49] == 120000 && q[0] == 90000);
}

static void test_two_cluster_mixture(void **state)
{
    Argus__V1__KernelGroup kg = group_of(2);
    float q[50];

    cl[0] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    cl[1] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    cl[0].count = 300;
    cl[0].p50_ns = 10000;
    cl[0].p99_ns = 12000;
    cl[1].count = 100;
    cl[1].p50_ns = 50000;
    cl[1].p99_ns = 60000;
    assert_int_equal(clusters_quantile_grid(&kg, q, 50), 0);
    /* 75% of the mass is the fast mode: p_i <= 0.75 for i <= 37. */
    for (int i = 0; i <= 36; i++)
        assert_true(q[i] < 13000);
    for (int i = 38; i < 50; i++)
        assert_true(q[i] > 40000);
    /* Its mean is the mixture mean (300*10 + 100*50) / 400 = 20 us, near. */
    assert_float_equal(grid_mean(q, 50), 20000, 600);
    kg.n_clusters = 0;
    assert_int_equal(clusters_quantile_grid(&kg, q, 50), -EINVAL);
}

/* The grid is clusters_quantile at (i + 0.5) / g, to the bit. */
static void test_grid_is_pointwise(void **state)
{
    Argus__V1__KernelGroup kg = group_of(2);
    float q[37];
    double v;

    cl[0] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    cl[1] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    cl[0].count = 7;
    cl[0].p50_ns = 900;
    cl[0].p99_ns = 2000;
    cl[0].min_ns = 850;
    cl[1].count = 30;
    cl[1].p50_ns = 40000;
    cl[1].p99_ns = 41000;
    assert_int_equal(clusters_quantile_grid(&kg, q, 37), 0);
    for (size_t i = 0; i < 37; i++) {
        assert_int_equal(clusters_quantile(&kg, ((double)i + 0.5) / 37, &v), 0);
        assert_true((float)v == q[i]);
    }
    assert_int_equal(clusters_quantile_grid(&kg, q, 0), -EINVAL);
}

/* One counted cluster (empty ones around it) takes a shorter way: still
 * clusters_quantile at (i + 0.5) / g, within float rounding, for grids of
 * 16 (the diagnosis's), 50 and 100 points (over the table: the long way). */
static void test_one_cluster_grid_is_pointwise(void **state)
{
    static const uint64_t p50s[] = {0, 1, 900, 100000, 7654321};
    static const double spreads[] = {0.5, 1, 1.01, 1.5, 40};
    static const size_t grids[] = {16, 50, 100};
    Argus__V1__KernelGroup kg = group_of(3);
    float q[100];
    double v;

    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t k = 0; k < 3; k++)
                for (size_t at = 0; at < 3; at++) {
                    size_t g = grids[k];
                    for (int c = 0; c < 3; c++)
                        cl[c] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
                    cl[at].count = 1 + 37 * a;
                    cl[at].p50_ns = p50s[a];
                    cl[at].p99_ns = (uint64_t)((double)p50s[a] * spreads[b]);
                    cl[at].min_ns = b == 3 ? p50s[a] * 9 / 10 : 0;
                    cl[at].max_ns = b == 3 ? p50s[a] * 12 / 10 : 0;
                    assert_int_equal(clusters_quantile_grid(&kg, q, g), 0);
                    for (size_t i = 0; i < g; i++) {
                        assert_int_equal(clusters_quantile(&kg, ((double)i + 0.5) / g, &v), 0);
                        assert_float_equal(q[i], (float)v, fabs(v) * 1e-6);
                    }
                }
}

/* A single cluster with p50 == p99 is a point mass. */
static void test_quantile_point_mass(void **state)
{
    Argus__V1__Cluster k = ARGUS__V1__CLUSTER__INIT, *pk = &k;
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT;
    double probs[3] = {0.1, 0.5, 0.99}, q;

    k.count = 10;
    k.p50_ns = k.p99_ns = 777;
    g.n_clusters = 1;
    g.clusters = &pk;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(clusters_quantile(&g, probs[i], &q), 0);
        assert_float_equal(q, 777, 1e-6);
    }
    k.count = 0;
    assert_int_equal(clusters_quantile(&g, probs[0], &q), -EINVAL);
    g.n_clusters = 0;
    assert_int_equal(clusters_quantile(&g, probs[0], &q), -EINVAL);
}

/* --- round trip from the summarizer ------------------------------------------ */

/* n log-normal durations with median median_ns and log sigma, appended. */
static size_t gen_mode(uint64_t *rng, uint64_t *out, size_t at, size_t n, double median_ns,
                       double sigma)
{
    for (size_t i = 0; i < n; i++)
        out[at + i] = (uint64_t)llround(median_ns * exp(sigma * rng_normal(rng)));
    return at + n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Summarise durations v[0..n) as one group with options o (NULL: exact
 * values and every field) into rec; the caller frees it with
 * summarizer_free_groups. */
static void summarize_one(const struct summarize_options *o, const uint64_t *v, size_t n,
                          Argus__V1__StepRecord *rec)
{
    struct summarize_options exact;
    struct summarizer *s;

    summarize_options_default(&exact);
    exact.fields = SUMMARIZE_FIELDS_ALL;
    exact.quantize_bits = 0;
    s = summarizer_new(o ? o : &exact);
    assert_non_null(s);
    argus__v1__step_record__init(rec);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(summarizer_add(s, 42, 7, v[i]), 0);
    assert_int_equal(summarizer_finish(s, rec), 0);
    assert_int_equal(rec->n_kernels, 1);
    summarizer_free(s);
}

/* Mean and worst |ln(rebuilt / sample quantile)| of g over p = 0.02..0.98,
 * leaving out the jump between the modes at p = 0.7; the rebuilt function
 * never decreases. sorted: the sample. */
static void quantile_errors(const Argus__V1__KernelGroup *g, const uint64_t *sorted, size_t n,
                            double *mean_err, double *worst)
{
    double probs[49], q[49];
    size_t used = 0;

    for (size_t i = 0; i < 49; i++) {
        probs[i] = 0.02 * (i + 1);
        assert_int_equal(clusters_quantile(g, probs[i], &q[i]), 0);
    }
    *mean_err = *worst = 0;
    for (size_t i = 0; i < 49; i++) {
        double err = fabs(log(q[i] / (double)sorted[(size_t)ceil(probs[i] * n) - 1]));

        if (i > 0)
            assert_true(q[i] >= q[i - 1]);
        if (fabs(probs[i] - 0.7) < 0.03)
            continue;
        *worst = fmax(*worst, err);
        *mean_err += err;
        used++;
    }
    *mean_err /= (double)used;
}

/* The rebuilt quantile function against the sample's own quantiles on a
 * 70/30 mixture of two log-normals, from exact clusters and from the wire
 * defaults (no min/max, 8 significant bits). */
static void test_quantile_reconstruction(void **state)
{
    enum { N = 5000 };
    static uint64_t v[N];
    uint64_t rng = 8;
    Argus__V1__StepRecord rec, wire;
    struct summarize_options o;
    double q[2], mean_err, worst;
    size_t n = gen_mode(&rng, v, 0, 3500, 30000, 0.08);

    n = gen_mode(&rng, v, n, N - n, 300000, 0.12);
    summarize_one(NULL, v, n, &rec);
    summarize_options_default(&o);
    summarize_one(&o, v, n, &wire);
    assert_int_equal(rec.kernels[0]->n_clusters, 2);
    assert_int_equal(wire.kernels[0]->n_clusters, 2);
    qsort(v, n, sizeof(*v), cmp_u64);
    quantile_errors(rec.kernels[0], v, n, &mean_err, &worst);
    print_message("quantile reconstruction, exact: mean |ln error| %.4f, worst %.4f\n", mean_err,
                  worst);
    assert_true(mean_err < 0.01);
    assert_true(worst < 0.03);
    quantile_errors(wire.kernels[0], v, n, &mean_err, &worst);
    print_message("quantile reconstruction, wire defaults: mean |ln error| %.4f, worst %.4f\n",
                  mean_err, worst);
    assert_true(mean_err < 0.01);
    assert_true(worst < 0.03);

    assert_int_equal(clusters_quantile(rec.kernels[0], 0, &q[0]), 0);
    assert_int_equal(clusters_quantile(rec.kernels[0], 1, &q[1]), 0);
    assert_float_equal(q[0], (double)v[0], 0.5); /* min and max are the ends */
    assert_float_equal(q[1], (double)v[n - 1], 0.5);
    assert_int_equal(clusters_quantile(rec.kernels[0], 1.5, &q[0]), -EINVAL);
    assert_int_equal(clusters_quantile(rec.kernels[0], NAN, &q[0]), -EINVAL);
    summarizer_free_groups(&rec);
    summarizer_free_groups(&wire);
}

static void test_norm_ppf(void **state)
{
    assert_float_equal(clusters_norm_ppf(0.5), 0, 1e-9);
    assert_float_equal(clusters_norm_ppf(0.975), 1.959963985, 1e-7);
    assert_float_equal(clusters_norm_ppf(0.01), -2.326347874, 1e-7);
    assert_float_equal(clusters_norm_ppf(0.999), 3.090232306, 1e-6);
    assert_float_equal(clusters_norm_ppf(0.99), CLUSTERS_Z99, 1e-7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_cluster_quantiles),
        cmocka_unit_test(test_two_cluster_mixture),
        cmocka_unit_test(test_grid_is_pointwise),
        cmocka_unit_test(test_one_cluster_grid_is_pointwise),
        cmocka_unit_test(test_quantile_point_mass),
        cmocka_unit_test(test_quantile_reconstruction),
        cmocka_unit_test(test_norm_ppf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
