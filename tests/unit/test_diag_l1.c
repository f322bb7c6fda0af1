/* L1: spikes against the rolling median, regressions by change point. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_l1.h"

struct tally {
    uint32_t spikes, regressions;
    struct diag_l1_event last_spike, last_regression;
};

static double jitter(uint64_t k)
{
    return 1 + 0.02 * sin((double)k * 1.7) * cos((double)k * 0.3);
}

static void feed(struct diag_l1 *l, uint64_t k, double t, struct tally *y)
{
    struct diag_l1_event ev;

    diag_l1_step(l, k, t, (uint32_t)k % 8, &ev);
    if (ev.spike) {
        y->spikes++;
        y->last_spike = ev;
    }
    if (ev.regression) {
        y->regressions++;
        y->last_regression = ev;
        diag_l1_rebase(l);
    }
}

static void test_healthy_noise_is_quiet(void **state)
{
    struct diag_l1_options o = {0};
    struct diag_l1 l;
    struct tally y = {0};

    diag_l1_init(&l, &o);
    for (uint64_t k = 0; k < 200; k++)
        feed(&l, k, 100e6 * jitter(k), &y);
    assert_int_equal(y.spikes, 0);
    assert_int_equal(y.regressions, 0);
}

/* A job on a shared machine: steps wobble +-30% (log T spread about 0.2),
 * two steps of 1.6x its median now and then are its own jitter, not a
 * spike; the same two steps of a steady job are one. One slow step of 2x is
 * every job's wobble; one of 5x is a spike. */
static void test_wobble_within_jitter_is_quiet(void **state)
{
    struct diag_l1_options o = {0};
    struct diag_l1 noisy, steady;
    struct tally yn = {0}, ys = {0};

    diag_l1_init(&noisy, &o);
    diag_l1_init(&steady, &o);
    for (uint64_t k = 0; k < 200; k++) {
        double wob = exp(0.3 * sin((double)k * 2.3) * cos((double)k * 0.7));
        double big = k > 40 && (k % 37 == 20 || k % 37 == 21) ? 1.6 : 1;
        feed(&noisy, k, 100e6 * wob * big, &yn);
        big = k % 37 == 5 ? 2 : big;
        feed(&steady, k, 100e6 * jitter(k) * big, &ys);
    }
    assert_int_equal(yn.spikes, 0);
    assert_int_equal(ys.spikes, 4);
    feed(&steady, 200, 100e6 * 5, &ys);
    feed(&steady, 201, 100e6, &ys);
    assert_int_equal(ys.spikes, 5);
}

static void test_spikes_are_windows(void **state)
{
    struct diag_l1_options o = {0};
    struct diag_l1 l;
    struct tally y = {0};

    diag_l1_init(&l, &o);
    for (uint64_t k = 0; k < 100; k++) {
        double t = 100e6 * jitter(k);
        if (k == 30)
            t *= 40; /* a JIT compile */
        if (k == 60 || k == 61)
            t *= 3; /* a two-step stall */
        feed(&l, k, t, &y);
        if (k == 31) {
            assert_int_equal(y.spikes, 1); /* closed when T came back */
            assert_int_equal(y.last_spike.spike_from, 30);
            assert_int_equal(y.last_spike.spike_to, 30);
            assert_float_equal(y.last_spike.spike_peak_ns / y.last_spike.spike_median_ns, 40, 2);
            assert_int_equal(y.last_spike.spike_rank, 30 % 8);
        }
    }
    assert_int_equal(y.spikes, 2);
    assert_int_equal(y.last_spike.spike_from, 60);
    assert_int_equal(y.last_spike.spike_to, 61);
    assert_int_equal(y.regressions, 0); /* spikes are winsorised */
}

static void test_level_shift_is_one_regression(void **state)
{
    struct diag_l1_options o = {0};
    struct diag_l1 l;
    struct tally y = {0};

    diag_l1_init(&l, &o);
    for (uint64_t k = 0; k < 150; k++)
        feed(&l, k, 100e6 * jitter(k) * (k >= 60 ? 1.3 : 1), &y);
    assert_int_equal(y.regressions, 1);
    assert_int_equal(y.last_regression.regression_from, 60);
    assert_float_equal(y.last_regression.regression_ratio, 1.3, 0.03);
    assert_int_equal(y.spikes, 0); /* a shift is not a spike */
    /* 2x shift: the first steps look like a spike but it lasts. */
    y = (struct tally){0};
    diag_l1_init(&l, &o);
    for (uint64_t k = 0; k < 150; k++)
        feed(&l, k, 100e6 * jitter(k) * (k >= 60 ? 2 : 1), &y);
    assert_int_equal(y.regressions, 1);
    assert_int_equal(y.spikes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthy_noise_is_quiet),
        cmocka_unit_test(test_wobble_within_jitter_is_quiet),
        cmocka_unit_test(test_spikes_are_windows),
        cmocka_unit_test(test_level_shift_is_one_regression),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
