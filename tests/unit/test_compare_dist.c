/* tools/argusctl/compare_dist: argusctl compare's distributions against
 * exact values computed here from the samples. Kernel samples go through
 * the agent's real summarizer (default options: 8-bit rounding, no min/max)
 * and only its clusters reach compare_dist, as in argusctl. Checked: the
 * four kernels of the report (0.174, 0.175, 0.719, 0.751 ms), a two-mode
 * group with one slow kernel in eight, large two-mode and heavy-tailed
 * (Pareto) sets, random small mixtures (the exact quantile inside its
 * bounds), clusters with min and max sent, distributions too large to keep (sketched) and exact
 * samples (steps). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/summarize.h"
#include "proto/argus.pb-c.h"
#include "tests/lib/rng.h"
#include "tools/argusctl/compare_dist.h"

#define Q COMPARE_DIST_ROUNDING

/* One side: its samples (exact values) and its model from clusters. */
struct side {
    double *v;
    size_t n, cap;
    struct compare_dist d;
    bool sketched; /* d lost pieces: it became a sketch */
};

/* A step record of one kernel group of durations dur[0..n) into s: the
 * summarizer's clusters into s->d, the samples kept. */
static struct summarizer *sum; /* the agent's, default options (group setup) */

static void side_sample(struct side *s, double v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        assert_non_null(s->v);
    }
    s->v[s->n++] = v;
}

static void side_record(struct side *s, const uint64_t *dur, size_t n)
{
    Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;

    for (size_t i = 0; i < n; i++) {
        assert_int_equal(summarizer_add(sum, 42, 7, dur[i]), 0);
        side_sample(s, (double)dur[i]);
    }
    assert_int_equal(summarizer_finish(sum, &rec), 0);
    assert_int_equal(rec.n_kernels, 1);
    size_t before = s->d.n;
    assert_int_equal(compare_dist_add_group(&s->d, rec.kernels[0]), 0);
    s->sketched |= s->d.n < before;
    summarizer_free_groups(&rec);
}

static void side_free(struct side *s)
{
    free(s->v);
    compare_dist_free(&s->d);
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* The exact nearest-rank p-quantile of s's samples (sorted by the caller). */
static double exact_quantile(const struct side *s, double p)
{
    size_t rank = (size_t)ceil(p * (double)s->n - 1e-9);

    return s->v[rank ? rank - 1 : 0];
}

/* The exact W1 of two sorted samples: the integral of |Fa - Fb|. */
static double exact_w1(const struct side *a, const struct side *b)
{
    size_t i = 0, k = 0;
    double x = fmin(a->v[0], b->v[0]), w = 0;

    while (i < a->n || k < b->n) {
        double next = k >= b->n || (i < a->n && a->v[i] <= b->v[k]) ? a->v[i] : b->v[k];
        w += fabs((double)i / (double)a->n - (double)k / (double)b->n) * (next - x);
        x = next;
        while (i < a->n && a->v[i] == next)
            i++;
        while (k < b->n && b->v[k] == next)
            k++;
    }
    return w;
}

/* p of s: the estimate within rel of the exact value and inside its
 * bounds, the exact value inside the bounds (widened by the rounding); with
 * in_range, the estimate inside the samples' [min, max] (likewise). */
static void check_quantile(const struct side *s, double p, double rel, bool in_range)
{
    struct compare_quantile q;
    double exact = exact_quantile(s, p), lo = s->v[0], hi = s->v[s->n - 1];

    assert_int_equal(compare_dist_quantiles(&s->d, &p, 1, &q), 0);
    if (fabs(q.v - exact) > rel * exact || q.lo > exact * (1 + Q) || q.hi < exact * (1 - Q) ||
        q.v < q.lo || q.v > q.hi || (in_range && (q.v < lo * (1 - Q) || q.v > hi * (1 + Q))))
        fail_msg("p%.0f: estimate %.0f [%.0f, %.0f], exact %.0f, samples in [%.0f, %.0f]", p * 100,
                 q.v, q.lo, q.hi, exact, lo, hi);
}

static void check_w1(const struct side *a, const struct side *b, double rel)
{
    double w1, err, exact = exact_w1(a, b);

    assert_int_equal(compare_dist_w1(&a->d, &b->d, &w1, &err), 0);
    if (fabs(w1 - exact) > rel * exact || fabs(w1 - exact) > err * (1 + 1e-9))
        fail_msg("W1 %.0f (bound +-%.0f), exact %.0f", w1, err, exact);
}

static void sides_sort(struct side *a, struct side *b)
{
    qsort(a->v, a->n, sizeof(double), double_cmp);
    qsort(b->v, b->n, sizeof(double), double_cmp);
}

/* The report: 0.174, 0.175, 0.719, 0.751 ms gave p50 0.116 and p90 0.266,
 * both below the minimum. One cluster of 4 knows ranks 2 and 4 exactly. */
static void test_report_four_kernels(void **state)
{
    struct side a = {0}, b = {0};
    uint64_t da[] = {174000, 175000, 719000, 751000}, db[] = {174000, 175000, 1719000, 1751000};

    side_record(&a, da, 4);
    side_record(&b, db, 4);
    sides_sort(&a, &b);
    check_quantile(&a, 0.5, Q, true);
    check_quantile(&a, 0.9, Q, true);
    check_quantile(&b, 0.5, Q, true);
    check_quantile(&b, 0.9, Q, true);
    check_w1(&a, &b, 0.05); /* exact 0.5 ms */
    /* the shortest is not sent, but the sum leaves it at least 0.13 ms */
    struct compare_quantile q;
    assert_int_equal(compare_dist_quantiles(&a.d, &(double){0.25}, 1, &q), 0);
    assert_true(q.lo > 130000 && q.lo <= 174000 && q.hi >= 174000 && q.v >= q.lo);
    side_free(&a);
    side_free(&b);
}

/* 8 kernels a step, one of them slow (x2 on side B), 12 steps: each step's
 * group is one cluster (fewer than 10 events). Before: p90 about 0.6 of the
 * exact value, W1 half of it. */
static void test_one_slow_in_eight(void **state)
{
    struct side a = {0}, b = {0};
    uint64_t x = 8;

    for (int step = 0; step < 12; step++) {
        uint64_t da[8], db[8];
        for (int i = 0; i < 8; i++) {
            da[i] = db[i] = 100000 + rng_next(&x) % 5000;
            if (i == 3) {
                da[i] = 700000 + rng_next(&x) % 40000;
                db[i] = 2 * da[i];
            }
        }
        side_record(&a, da, 8);
        side_record(&b, db, 8);
    }
    sides_sort(&a, &b);
    assert_float_equal(a.d.count, 96, 1e-9);
    for (double p = 0.1; p < 0.95; p += 0.1) {
        check_quantile(&a, p, INFINITY, false);
        check_quantile(&b, p, INFINITY, false);
    }
    check_quantile(&a, 0.5, 0.02, true);
    check_quantile(&a, 0.9, 0.02, true);
    check_quantile(&b, 0.5, 0.02, true);
    check_quantile(&b, 0.9, 0.02, true);
    check_w1(&a, &b, 0.15);
    side_free(&a);
    side_free(&b);
}

/* Log-normal around median with sigma. */
static uint64_t lognormal(uint64_t *x, double median, double sigma)
{
    return (uint64_t)(median * exp(sigma * rng_normal(x)));
}

/* 1000 kernels a step in two modes (30% at 80 us, 70% at 600 us; B's slow
 * mode 25% slower), 20 steps: the agent cuts them into clusters. */
static void test_two_modes_large(void **state)
{
    struct side a = {0}, b = {0};
    uint64_t x = 2, *da = malloc(1000 * sizeof(*da)), *db = malloc(1000 * sizeof(*db));

    assert_non_null(da);
    assert_non_null(db);
    for (int step = 0; step < 20; step++) {
        for (int i = 0; i < 1000; i++) {
            bool fast = rng_uniform(&x) < 0.3;
            da[i] = lognormal(&x, fast ? 80000 : 600000, 0.08);
            db[i] = fast ? lognormal(&x, 80000, 0.08) : lognormal(&x, 750000, 0.08);
        }
        side_record(&a, da, 1000);
        side_record(&b, db, 1000);
    }
    sides_sort(&a, &b);
    for (double p = 0.05; p < 1; p += 0.05) {
        check_quantile(&a, p, INFINITY, false);
        check_quantile(&b, p, INFINITY, false);
    }
    check_quantile(&a, 0.5, 0.02, true);
    check_quantile(&a, 0.9, 0.02, true);
    check_quantile(&b, 0.5, 0.02, true);
    check_quantile(&b, 0.9, 0.02, true);
    check_w1(&a, &b, 0.05);
    free(da);
    free(db);
    side_free(&a);
    side_free(&b);
}

/* Pareto(alpha 1.5) from 50 us, 500 kernels a step, 20 steps; B 30% slower. */
static void test_heavy_tailed(void **state)
{
    struct side a = {0}, b = {0};
    uint64_t x = 3, da[500], db[500];

    for (int step = 0; step < 20; step++) {
        for (int i = 0; i < 500; i++) {
            double u = rng_uniform(&x);
            da[i] = (uint64_t)(50000 * pow(u, -1 / 1.5));
            db[i] = (uint64_t)(65000 * pow(rng_uniform(&x), -1 / 1.5));
        }
        side_record(&a, da, 500);
        side_record(&b, db, 500);
    }
    sides_sort(&a, &b);
    for (double p = 0.1; p < 0.95; p += 0.1) {
        check_quantile(&a, p, INFINITY, false);
        check_quantile(&b, p, INFINITY, false);
    }
    check_quantile(&a, 0.5, 0.03, true); /* p50 is a known rank of each step's cluster */
    check_quantile(&b, 0.5, 0.03, true);
    /* p90 lies between p50 and p99 of each step's cluster, where a Pareto
     * is not the log-normal the model assumes: within its bounds, ~20% off */
    check_quantile(&a, 0.9, 0.25, true);
    check_quantile(&b, 0.9, 0.25, true);
    check_w1(&a, &b, 0.15);
    side_free(&a);
    side_free(&b);
}

/* Random small mixtures: every quantile inside [min, max], the exact one
 * inside its bounds (check_quantile with a tolerance that holds anyway). */
static void test_random_small_bounds(void **state)
{
    uint64_t x = 5;

    for (int trial = 0; trial < 200; trial++) {
        struct side a = {0}, b = {0};
        int steps = 1 + (int)(rng_next(&x) % 4);
        for (int step = 0; step < steps; step++) {
            uint64_t d[60];
            size_t n = 1 + rng_next(&x) % 60;
            for (size_t i = 0; i < n; i++)
                d[i] = lognormal(&x, rng_next(&x) % 2 ? 100000 : 900000, 0.3);
            side_record(&a, d, n);
            side_record(&b, d, n);
        }
        sides_sort(&a, &b);
        for (double p = 0.05; p <= 1; p += 0.05)
            check_quantile(&a, p, INFINITY, false);
        check_w1(&a, &b, INFINITY);
        side_free(&a);
        side_free(&b);
    }
}

/* Clusters with min and max sent, exact values (the agent's other
 * options): every kernel counted once, every quantile inside [min, max]
 * and its bounds, from 1 kernel a step up. */
static void test_min_max_sent(void **state)
{
    struct summarize_options o;
    struct summarizer *exact_sum;
    uint64_t x = 11;

    summarize_options_default(&o);
    o.fields = SUMMARIZE_FIELDS_ALL;
    o.quantize_bits = 0;
    exact_sum = summarizer_new(&o);
    assert_non_null(exact_sum);
    struct summarizer *def = sum;
    sum = exact_sum;
    for (size_t n = 1; n <= 40; n++) {
        struct side a = {0}, b = {0};
        uint64_t d[40];
        for (int step = 0; step < 3; step++) {
            for (size_t i = 0; i < n; i++)
                d[i] = lognormal(&x, i % 3 ? 100000 : 400000, 0.2);
            side_record(&a, d, n);
            for (size_t i = 0; i < n; i++)
                d[i] = 2 * d[i];
            side_record(&b, d, n);
        }
        sides_sort(&a, &b);
        assert_float_equal(a.d.count, 3.0 * (double)n, 1e-9);
        for (double p = 0.05; p <= 1; p += 0.05)
            check_quantile(&a, p, INFINITY, true);
        check_w1(&a, &b, INFINITY);
        side_free(&a);
        side_free(&b);
    }
    sum = def;
    summarizer_free(exact_sum);
}

/* More pieces than COMPARE_DIST_MAX_PIECES: the distributions are sketched
 * (the exact samples too), and their bounds still hold the exact values. */
static void test_sketch(void **state)
{
    struct side a = {0}, b = {0}, e = {0};
    uint64_t x = 9, d[100];

    for (int step = 0; step < 8000; step++) {
        for (int i = 0; i < 100; i++)
            d[i] = lognormal(&x, rng_uniform(&x) < 0.4 ? 90000 : 500000, 0.1);
        side_record(&a, d, 100);
        for (int i = 0; i < 100; i++)
            d[i] = lognormal(&x, rng_uniform(&x) < 0.4 ? 90000 : 600000, 0.1);
        side_record(&b, d, 100);
    }
    for (int i = 0; i < 300000; i++) {
        double v = (double)lognormal(&x, 1e6, 0.2);
        assert_int_equal(compare_dist_add_sample(&e.d, v), 0);
        side_sample(&e, v);
    }
    assert_true(a.sketched && b.sketched && e.d.deviation > 0);
    assert_true(a.d.n <= COMPARE_DIST_MAX_PIECES && e.d.n <= COMPARE_DIST_MAX_PIECES);
    assert_float_equal(a.d.count, 8e5, 1e-3);
    assert_float_equal(e.d.count, 3e5, 1e-3);
    sides_sort(&a, &b);
    qsort(e.v, e.n, sizeof(double), double_cmp);
    for (double p = 0.05; p < 1; p += 0.05) {
        check_quantile(&a, p, INFINITY, false);
        check_quantile(&e, p, 0.001, true);
    }
    check_quantile(&a, 0.5, 0.03, true);
    check_quantile(&b, 0.9, 0.03, true);
    check_w1(&a, &b, 0.05);
    side_free(&a);
    side_free(&b);
    side_free(&e);
}

/* Exact samples (step times): nearest-rank quantiles and W1 are exact. */
static void test_exact_samples(void **state)
{
    struct side a = {0}, b = {0};
    struct compare_quantile q;
    double w1, err;
    double va[] = {5, 1, 4, 2, 3}, vb[] = {2, 3, 4, 5, 6, 7};

    a.v = va;
    a.n = 5;
    b.v = vb;
    b.n = 6;
    for (size_t i = 0; i < a.n; i++)
        assert_int_equal(compare_dist_add_sample(&a.d, va[i]), 0);
    for (size_t i = 0; i < b.n; i++)
        assert_int_equal(compare_dist_add_sample(&b.d, vb[i]), 0);
    qsort(va, 5, sizeof(double), double_cmp);
    for (double p = 0.05; p <= 1; p += 0.05) {
        assert_int_equal(compare_dist_quantiles(&a.d, &p, 1, &q), 0);
        assert_float_equal(q.v, exact_quantile(&a, p), 1e-9);
        assert_float_equal(q.lo, q.v, 1e-9);
        assert_float_equal(q.hi, q.v, 1e-9);
    }
    assert_int_equal(compare_dist_w1(&a.d, &b.d, &w1, &err), 0);
    assert_float_equal(w1, exact_w1(&a, &b), 1e-9);
    assert_float_equal(err, 0, 1e-12);
    assert_int_equal(compare_dist_quantiles(&(struct compare_dist){0}, &(double){0.5}, 1, &q),
                     -ENODATA);
    compare_dist_free(&a.d);
    compare_dist_free(&b.d);
}

static int setup(void **state)
{
    sum = summarizer_new(NULL);
    return sum ? 0 : -1;
}

static int teardown(void **state)
{
    summarizer_free(sum);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_four_kernels),
        cmocka_unit_test(test_one_slow_in_eight),
        cmocka_unit_test(test_two_modes_large),
        cmocka_unit_test(test_heavy_tailed),
        cmocka_unit_test(test_random_small_bounds),
        cmocka_unit_test(test_min_max_sent),
        cmocka_unit_test(test_sketch),
        cmocka_unit_test(test_exact_samples),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
