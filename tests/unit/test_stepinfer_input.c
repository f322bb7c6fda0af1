/* agent/steps/stepinfer.c on bad input: calls of an untracked pid, a pid
 * tracked twice, calls far older than the reorder window, untracking twice,
 * freeing NULL. Nothing is emitted and the late call is counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/steps/stepinfer.h"

static struct clock_offset zero_clock = {.n = 1}; /* UNIX time = monotonic */
static size_t nouts;

static void on_step(void *ctx, uint32_t pid, const Argus__V1__StepRecord *st)
{
    (void)ctx, (void)pid, (void)st;
    nouts++;
}

static void test_bad_input(void **state)
{
    struct stepinfer *si = stepinfer_new(on_step, NULL, &zero_clock);
    struct stepinfer_call c = {1000, 2000, 7, 0, 1, 5, 0, 0};
    struct stepinfer_stats st;

    (void)state;
    nouts = 0;
    stepinfer_call(si, 42, &c); /* untracked pid: kept until it is tracked */
    assert_int_equal(stepinfer_track(si, 42, "j", 0), 0);
    assert_int_equal(stepinfer_track(si, 42, "j", 0), 0); /* again: no second rank */
    stepinfer_call(si, 42, &c);
    for (int i = 0; i < 20; i++) { /* far older than the reorder window */
        c.enter_ns = 1000 + (uint64_t)i * 100000000;
        stepinfer_call(si, 42, &c);
    }
    c.enter_ns = 10;
    stepinfer_call(si, 42, &c);
    stepinfer_tick(si, NULL, NULL);
    stepinfer_get_stats(si, &st);
    assert_int_equal(st.late_calls, 1);
    assert_int_equal(nouts, 0);
    stepinfer_untrack(si, 42, true);
    stepinfer_untrack(si, 42, true);
    stepinfer_free(si);
    stepinfer_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
