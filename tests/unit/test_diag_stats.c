/* Robust statistics of the diagnosis engine: median, MAD, robust z, change
 * point, W1 on known distributions, pointwise quantile median. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_stats.h"
#include "common/clusters.h"

static void test_median_odd_even_and_order_kept(void **state)
{
    double v[] = {5, 1, 4, 2, 3}, w[] = {4, 1, 3, 2}, scratch[8];

    assert_true(diag_stats_median(v, 5, scratch) == 3);
    assert_true(v[0] == 5 && v[4] == 3); /* input untouched */
    assert_true(diag_stats_median(w, 4, scratch) == 2.5);
    assert_true(diag_stats_median(v, 0, scratch) == 0);
    double dup[] = {7, 7, 7, 1, 7, 7};
    assert_true(diag_stats_median(dup, 6, scratch) == 7);
}

static void test_median_random_against_sort(void **state)
{
    double v[257], s[257], scratch[257];

    srand(7);
    for (int trial = 0; trial < 50; trial++) {
        size_t n = 1 + (size_t)(rand() % 257);
        for (size_t i = 0; i < n; i++)
            v[i] = s[i] = rand() % 50; /* many ties */
        for (size_t i = 1; i < n; i++) /* insertion sort for the reference */
            for (size_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
                double t = s[j];
                s[j] = s[j - 1];
                s[j - 1] = t;
            }
        double want = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        assert_true(diag_stats_median(v, n, scratch) == want);
    }
}

/* Every rank of arrays with ties, all equal, sorted and reversed: the
 * selection leaves the k-th smallest at k, none bigger before it. */
static void test_quantile_every_rank_against_sort(void **state)
{
    enum { N = 300 };
    double v[N], s[N], u[N];

    srand(11);
    for (int shape = 0; shape < 4; shape++)
        for (size_t n = 1; n < N; n += 37) {
            for (size_t i = 0; i < n; i++)
                u[i] = s[i] = shape == 0   ? rand() % 7
                              : shape == 1 ? 3
                              : shape == 2 ? (double)i
                                           : -(double)i;
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
                    double t = s[j];
                    s[j] = s[j - 1];
                    s[j - 1] = t;
                }
            for (size_t k = 0; k < n; k++) {
                for (size_t i = 0; i < n; i++)
                    v[i] = u[(i + k) % n]; /* a rotation: the same values */
                double q = n > 1 ? (double)k / (double)(n - 1) : 0;
                assert_true(diag_stats_quantile_inplace(v, n, q) == s[k]);
                for (size_t i = 0; i < k; i++)
                    assert_true(v[i] <= s[k]);
            }
        }
}

static void test_quantile(void **state)
{
    double v[101];

    for (int i = 0; i <= 100; i++)
        v[i] = 100 - i; /* 0..100 reversed */
    assert_true(diag_stats_quantile_inplace(v, 101, 0.10) == 10);
    assert_true(diag_stats_quantile_inplace(v, 101, 0) == 0);
    assert_true(diag_stats_quantile_inplace(v, 101, 1) == 100);
    assert_true(diag_stats_quantile_inplace(v, 101, 0.5) == 50);
    assert_true(diag_stats_quantile_inplace(v, 0, 0.5) == 0);
}

static void test_mad_and_robust_z(void **state)
{
    double v[] = {10, 11, 9, 10, 10, 12, 8, 100}, scratch[8];
    double med = diag_stats_median(v, 8, scratch);
    double mad = diag_stats_mad(v, 8, med, scratch);

    assert_true(med == 10);
    assert_true(mad == 1); /* the outlier does not move it */
    assert_float_equal(diag_stats_robust_z(100, med, mad), 0.6745 * 90, 1e-9);
    assert_true(diag_stats_robust_z(10, med, mad) == 0);
    assert_float_equal(diag_stats_fence(med, mad, 3), 13, 1e-12);
}

static void test_mad_floor_flat_group(void **state)
{
    double flat[16], scratch[16];

    for (int i = 0; i < 16; i++)
        flat[i] = 1e6; /* 1 ms, perfectly flat */
    double med = diag_stats_median(flat, 16, scratch);
    double mad = diag_stats_mad(flat, 16, med, scratch);
    assert_true(mad == 0);
    double fl = diag_stats_mad_floor(mad, med, 0.01, 20000);
    assert_float_equal(fl, 20000, 1e-9); /* 1% of 1 ms = 10 us < 20 us */
    /* 1 us slower is nothing, 2x slower is a lot. */
    assert_true(diag_stats_robust_z(1e6 + 1000, med, fl) < 0.1);
    assert_true(diag_stats_robust_z(2e6, med, fl) > 30);
    assert_float_equal(diag_stats_mad_floor(0, 1e9, 0.01, 20000), 1e7, 1e-3);
    assert_float_equal(diag_stats_mad_floor(5e7, 1e9, 0.01, 20000), 5e7, 1e-3);
}

static void test_rolling_median(void **state)
{
    struct diag_roll r;

    diag_roll_init(&r, 5);
    assert_true(diag_roll_median(&r) == 0);
    for (int i = 1; i <= 3; i++)
        diag_roll_push(&r, i);
    assert_true(diag_roll_median(&r) == 2);
    for (int i = 4; i <= 9; i++)
        diag_roll_push(&r, i * 10); /* window now 50 60 70 80 90 */
    assert_int_equal(r.n, 5);
    assert_true(diag_roll_median(&r) == 70);
    assert_true(diag_roll_get(&r, 0) == 90 && diag_roll_get(&r, 4) == 50);
    diag_roll_push(&r, 1e9); /* one spike barely moves it */
    assert_true(diag_roll_median(&r) == 80);
}

static void test_change_point_level_shift(void **state)
{
    double x[64], scratch[64], shift = 0;

    srand(3);
    for (int i = 0; i < 48; i++)
        x[i] = log(100e6) + ((rand() % 2001) - 1000) / 1000.0 * 0.02;
    /* No shift: nothing. */
    assert_false(diag_stats_change_point(x, 48, 24, 8, 6, log(1.1), 0.005, &shift, scratch));
    /* 1.3x for the last 8 steps: found, with the right size. */
    for (int i = 40; i < 48; i++)
        x[i] += log(1.3);
    assert_true(diag_stats_change_point(x, 48, 24, 8, 6, log(1.1), 0.005, &shift, scratch));
    assert_float_equal(shift, log(1.3), 0.02);
    /* 1.05x is under the minimum shift. */
    for (int i = 40; i < 48; i++)
        x[i] += log(1.05) - log(1.3);
    assert_false(diag_stats_change_point(x, 48, 24, 8, 6, log(1.1), 0.005, &shift, scratch));
    /* Too short a series. */
    assert_false(diag_stats_change_point(x, 20, 24, 8, 6, log(1.1), 0.005, &shift, scratch));
}

static void normal_q(float *q, size_t g, double mu, double sigma)
{
    for (size_t i = 0; i < g; i++)
        q[i] = (float)(mu + sigma * clusters_norm_ppf((i + 0.5) / g));
}

static void test_w1_known_distributions(void **state)
{
    enum { G = 2000 };
    static float a[G], b[G];

    /* Shift: W1(N(0,1), N(3,1)) = 3. */
    normal_q(a, G, 0, 1);
    normal_q(b, G, 3, 1);
    assert_float_equal(diag_stats_w1(a, b, G), 3, 1e-4);
    assert_float_equal(diag_stats_w1(b, a, G), 3, 1e-4);
    assert_float_equal(diag_stats_w1(a, a, G), 0, 1e-12);
    /* Scale: W1(N(0,1), N(0,2)) = E|Z| = sqrt(2/pi). */
    normal_q(b, G, 0, 2);
    assert_float_equal(diag_stats_w1(a, b, G), sqrt(2 / M_PI), 0.005);
    /* Uniform[0,1] vs Uniform[0,2]: integral of p = 1/2. */
    for (int i = 0; i < G; i++) {
        a[i] = (float)((i + 0.5) / G);
        b[i] = 2 * a[i];
    }
    assert_float_equal(diag_stats_w1(a, b, G), 0.5, 1e-4);
    assert_float_equal(diag_stats_qmean(b, G), 1.0, 1e-4);
    /* Exp(1) vs Exp(mean 2): the difference is Exp(1) itself, mean 1. */
    for (int i = 0; i < G; i++) {
        a[i] = (float)-log(1 - (i + 0.5) / G);
        b[i] = 2 * a[i];
    }
    assert_float_equal(diag_stats_w1(a, b, G), 1.0, 0.01);
}

static void test_pointwise_median_of_quantiles(void **state)
{
    float q1[4] = {1, 2, 3, 4}, q2[4] = {2, 3, 4, 5}, q3[4] = {10, 20, 30, 40}, out[4];
    float q4[4] = {0, 2.5f, 3.5f, 100};
    const float *qs[] = {q3, q1, q2};
    const float *qx[] = {q1, q2, q4};
    double scratch[3 * 4];

    diag_stats_qmedian(qs, 3, 4, out, scratch);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == q2[i]); /* the outlier function does not matter */
    diag_stats_qmedian(qx, 3, 4, out, scratch);
    for (int i = 1; i < 4; i++)
        assert_true(out[i] >= out[i - 1]); /* crossing functions: still monotone */
    assert_true(out[0] == 1 && out[3] == 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_odd_even_and_order_kept),
        cmocka_unit_test(test_median_random_against_sort),
        cmocka_unit_test(test_quantile),
        cmocka_unit_test(test_quantile_every_rank_against_sort),
        cmocka_unit_test(test_mad_and_robust_z),
        cmocka_unit_test(test_mad_floor_flat_group),
        cmocka_unit_test(test_rolling_median),
        cmocka_unit_test(test_change_point_level_shift),
        cmocka_unit_test(test_w1_known_distributions),
        cmocka_unit_test(test_pointwise_median_of_quantiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
