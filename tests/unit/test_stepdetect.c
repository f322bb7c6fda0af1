/* agent/steps/stepdetect.c on synthetic collective sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/stepdetect.h"

#define MS 1000000ull

static uint64_t scratch[2 * 4096];
static struct stepdetect_step steps[512];

/* steps x (compute gap, then k calls of `coll` ns each with names a/b). */
static size_t make_job(struct stepdetect_call *c, int nsteps, int k, uint64_t compute,
                       uint64_t coll, int distinct, uint64_t jitter_seed)
{
    uint64_t t = 1000 * MS;
    size_t n = 0;

    srand((unsigned)jitter_seed);
    for (int s = 0; s < nsteps; s++) {
        t += compute + (jitter_seed ? (uint64_t)(rand() % 1000) * 1000 : 0);
        for (int i = 0; i < k; i++) {
            c[n].ts_ns = t;
            c[n].end_ns = t + coll;
            c[n].name_id = distinct ? 100 + (uint64_t)i : 7;
            c[n].bytes = distinct ? 4096u << i : 0;
            n++;
            t += coll + 10000; /* 10 us between calls of a burst */
        }
    }
    return n;
}

static void test_distinct_burst(void **state)
{
    struct stepdetect_call c[400];
    struct stepdetect_info info;
    size_t n = make_job(c, 30, 4, 80 * MS, 2 * MS, 1, 0);
    int k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);

    assert_int_equal(info.period, 4);
    assert_int_equal(k, 28); /* 30 bursts: the first has no burst before it, the last none after */
    for (int i = 0; i < k; i++) {
        const struct stepdetect_call *first = &c[steps[i].first_call];

        assert_int_equal(steps[i].first_call % 4, 0);
        /* starts at the return of the previous burst's last call */
        assert_int_equal(steps[i].start_ns, c[steps[i].first_call - 1].end_ns);
        assert_true(first->ts_ns - steps[i].start_ns == 80 * MS + 10000);
        /* step = 80 ms compute + 4 x (2 ms + 10 us) */
        assert_int_equal(steps[i].step_ns, 80 * MS + 4 * (2 * MS + 10000));
        assert_int_equal(steps[i].compute_ns, 80 * MS + 10000);
        assert_int_equal(steps[i].collective_ns, steps[i].step_ns - steps[i].compute_ns);
        assert_int_equal(steps[i].ncalls, 4);
    }
}

static void test_identical_names_found_by_gaps(void **state)
{
    struct stepdetect_call c[400];
    struct stepdetect_info info;
    size_t n = make_job(c, 30, 6, 50 * MS, 5 * MS, 0, 42);
    int k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);

    assert_int_equal(info.period, 6);
    assert_int_equal(k, 28);
    assert_int_equal(steps[0].first_call, 6); /* cut before the compute gap */
    for (int i = 0; i < k; i++)
        assert_true(steps[i].step_ns > 80 * MS && steps[i].step_ns < 82 * MS);
}

static void test_one_call_per_step(void **state)
{
    struct stepdetect_call c[100];
    struct stepdetect_info info;
    size_t n = make_job(c, 40, 1, 100 * MS, 1 * MS, 0, 0);
    int k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);

    assert_int_equal(info.period, 1);
    assert_int_equal(k, 38);
    assert_int_equal(steps[3].step_ns, 101 * MS + 10000);
}

static void test_warmup_prefix_and_phase(void **state)
{
    struct stepdetect_call c[400];
    struct stepdetect_info info;
    size_t n;
    int k;

    /* a broadcast at start, then the steady job */
    c[0] = (struct stepdetect_call){500 * MS, 501 * MS, 999, 1};
    n = 1 + make_job(c + 1, 30, 3, 60 * MS, 1 * MS, 1, 0);
    k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);
    assert_int_equal(info.period, 3);
    assert_true(k >= 28);
    assert_int_equal(c[steps[1].first_call].name_id, 100); /* steps open at the first call */
}

static void test_ddp_like_prefix_one_call(void **state)
{
    struct stepdetect_call c[64];
    struct stepdetect_info info;
    size_t n = 0;
    int k;

    for (int i = 0; i < 6; i++) /* allgather, broadcasts...: a warm-up prefix */
        c[n++] = (struct stepdetect_call){(uint64_t)(i + 1) * MS, 0, 500 + (uint64_t)(i % 3), 0};
    srand(3);
    for (int i = 0; i < 30; i++) { /* then one allreduce per ~90 ms step, noisy */
        uint64_t t = 20 * MS + (uint64_t)i * 90 * MS + (uint64_t)(rand() % 9000) * 1000;

        c[n++] = (struct stepdetect_call){t, t + 100000, 7, 0};
    }
    k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);
    assert_int_equal(info.period, 1);
    assert_true(k >= 28);
    assert_int_equal(steps[0].first_call, 7); /* no step touches the prefix */
}

/* DDP's two bucket all-reduces per step (identical signatures: gloo gives
 * no bytes), the backward between them a bit shorter than the rest of the
 * step, on a loaded machine: the load drifts over seconds (every gap 1x to
 * 4x) and each gap has 25% noise. Drift correlates the gaps at every lag;
 * still, within each step the compute gap is the longer one: period 2. */
static void test_two_buckets_under_drifting_load(void **state)
{
    struct stepdetect_call c[512];
    struct stepdetect_info info;
    uint64_t t = 1000 * MS;
    size_t n = 0;
    int k;

    (void)state;
    srand(11);
    for (int i = 0; i < 200; i++) {
        double load = 1 + 1.5 * (1 - cos(i / 25.0)), noise = 0.75 + (rand() % 1000) / 2000.0;
        uint64_t gap = (uint64_t)((i % 2 ? 45 : 70) * MS * load * noise);
        t += gap;
        c[n++] = (struct stepdetect_call){t, t + 20000, 7, 0};
    }
    k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);
    assert_int_equal(info.period, 2);
    assert_true(k >= 95);
    for (int i = 0; i < k; i++)
        assert_int_equal(steps[i].first_call % 2, 0); /* after the longer gap */
}

/* One call per step with the same drifting load: no period 2 made up. */
static void test_one_call_under_drifting_load(void **state)
{
    struct stepdetect_call c[512];
    struct stepdetect_info info;
    uint64_t t = 1000 * MS;
    size_t n = 0;

    (void)state;
    for (uint32_t seed = 1; seed <= 20; seed++) {
        srand(seed);
        n = 0;
        for (int i = 0; i < 200; i++) {
            double load = 1 + 1.5 * (1 - cos(i / 25.0)), noise = 0.75 + (rand() % 1000) / 2000.0;
            t += (uint64_t)(100 * MS * load * noise);
            c[n++] = (struct stepdetect_call){t, t + 20000, 7, 0};
        }
        assert_true(stepdetect_find(c, n, NULL, scratch, steps, 512, &info) >= 190);
        assert_int_equal(info.period, 1);
    }
}

static void test_no_period_and_bad_input(void **state)
{
    struct stepdetect_call c[64];

    for (int i = 0; i < 64; i++) /* all different names: nothing repeats */
        c[i] = (struct stepdetect_call){(uint64_t)i * 10 * MS, 0, (uint64_t)i + 1, 0};
    assert_int_equal(stepdetect_find(c, 64, NULL, scratch, steps, 512, NULL), 0);
    assert_int_equal(stepdetect_find(c, 3, NULL, scratch, steps, 512, NULL), 0);
    c[5].ts_ns = 0; /* unsorted */
    assert_int_equal(stepdetect_find(c, 64, NULL, scratch, steps, 512, NULL), -EINVAL);
    assert_int_equal(stepdetect_find(NULL, 64, NULL, scratch, steps, 512, NULL), -EINVAL);
}

static void test_max_steps_bound(void **state)
{
    struct stepdetect_call c[400];
    size_t n = make_job(c, 30, 2, 50 * MS, 1 * MS, 1, 0);

    assert_int_equal(stepdetect_find(c, n, NULL, scratch, steps, 5, NULL), 5);
}

static void test_large_window(void **state)
{
    static struct stepdetect_call c[4096];
    struct stepdetect_info info;
    size_t n = make_job(c, 512, 8, 30 * MS, 1 * MS, 1, 7);
    int k = stepdetect_find(c, n, NULL, scratch, steps, 512, &info);

    assert_int_equal(n, 4096);
    assert_int_equal(info.period, 8);
    assert_int_equal(k, 510);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distinct_burst),
        cmocka_unit_test(test_identical_names_found_by_gaps),
        cmocka_unit_test(test_one_call_per_step),
        cmocka_unit_test(test_warmup_prefix_and_phase),
        cmocka_unit_test(test_ddp_like_prefix_one_call),
        cmocka_unit_test(test_two_buckets_under_drifting_load),
        cmocka_unit_test(test_one_call_under_drifting_load),
        cmocka_unit_test(test_no_period_and_bad_input),
        cmocka_unit_test(test_max_steps_bound),
        cmocka_unit_test(test_large_window),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
