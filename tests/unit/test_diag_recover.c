/* Recovery of a firing suspect (collector/diag/diag_persist.h,
 * diag_engine_take_recovered): a (rank, cause) that fired stops firing, and
 * is queued as recovered, once it was not flagged in any step of a whole
 * persistence window; never before, and only once. End to end, a compute
 * straggler of the argus-sim scenario that ends at a step recovers within
 * one window (diag.window steps) of the fault's end: its alert resolves
 * then (docs/operations.md, "Alerts"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_hw.h"
#include "collector/diag/diag_persist.h"
#include "tools/argus-sim/diag_scenario.h"

/* One step of p's history with (rank 1, COMPUTE) flagged or not. */
static void step(struct diag_persist *p, bool flagged)
{
    struct diag_flag flags[2 * DIAG_CAUSE_N] = {0};

    flags[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set = flagged;
    diag_persist_step(p, flags, 2);
}

static void test_settle(void **state)
{
    struct diag_persist p;
    struct diag_persist_recovery r[4];

    (void)state;
    diag_persist_init(&p, 4, 3);
    assert_int_equal(diag_persist_reserve(&p, 2), 0);
    for (int k = 0; k < 3; k++) {
        step(&p, true);
        diag_persist_settle(&p, 1, DIAG_CAUSE_COMPUTE);
    }
    assert_true(p.firing[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE]);
    for (int k = 0; k < 3; k++) { /* healthy, but a flag is still in the window */
        step(&p, false);
        assert_true(diag_persist_settle(&p, 1, DIAG_CAUSE_COMPUTE));
        assert_int_equal(diag_persist_take_recovered(&p, r, 4), 0);
    }
    step(&p, false); /* healthy for the whole window: recovered, once */
    assert_true(diag_persist_settle(&p, 1, DIAG_CAUSE_COMPUTE));
    assert_false(diag_persist_settle(&p, 1, DIAG_CAUSE_COMPUTE));
    assert_int_equal(diag_persist_take_recovered(&p, r, 4), 1);
    assert_int_equal(r[0].rank, 1);
    assert_int_equal(r[0].cause, DIAG_CAUSE_COMPUTE);
    assert_int_equal(diag_persist_take_recovered(&p, r, 4), 0);
    /* never firing: no recovery */
    diag_persist_settle(&p, 0, DIAG_CAUSE_LINK);
    assert_int_equal(diag_persist_take_recovered(&p, r, 4), 0);
    diag_persist_free(&p);
}

static void test_causes(void **state)
{
    (void)state;
    assert_int_equal(diag_hw_causes(DIAG_CAUSE_COMPUTE),
                     (1u << ARGUS__V1__CAUSE__CAUSE_COMPUTE) |
                         (1u << ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED));
    assert_int_equal(diag_hw_causes(DIAG_CAUSE_LINK), 1u << ARGUS__V1__CAUSE__CAUSE_LINK);
}

/* The engine on a compute straggler that lasts steps 20-69: the rank
 * recovers, and no later than one window after step 70. */
static void test_engine_recovers_within_a_window(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                .tp = 2,
                                .seed = 2,
                                .fault_rank = 37,
                                .fault_start = 20,
                                .fault_end = 70};
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_options opt = {.step_timeout_ns = 2000000000ULL, .window = 40};
    uint64_t end = 0, recovered_at = 0;
    size_t nres;

    (void)state;
    assert_non_null(s);
    opt.name = diag_scn_name;
    opt.name_ctx = s;
    struct diag_engine *e = diag_engine_new(&opt);
    assert_non_null(e);
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    for (uint64_t k = 0; k < 160; k++) {
        Argus__V1__StepRecord *const *recs;
        Argus__V1__Report **reps;
        struct diag_persist_recovery r[8];
        size_t n = diag_scn_next(s, &recs, &end);
        for (size_t i = 0; i < n; i++)
            assert_true(diag_engine_add_step(e, recs[i], end + i) >= 0);
        assert_true(diag_engine_tick(e, end + 1000) >= 0);
        n = diag_engine_take_reports(e, &reps);
        for (size_t i = 0; i < n; i++)
            diag_report_free(reps[i]);
        free(reps);
        n = diag_engine_take_recovered(e, r, 8);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(r[i].rank, 37);
            assert_int_equal(r[i].cause, DIAG_CAUSE_COMPUTE);
            assert_int_equal(recovered_at, 0); /* once */
            recovered_at = diag_engine_steps_closed(e);
        }
    }
    printf("    fault ended at step 70, recovered at step %llu\n",
           (unsigned long long)recovered_at);
    assert_true(recovered_at > 70);
    assert_true(recovered_at <= 70 + 40 + 2); /* a window, and the steps still open */
    diag_engine_free(e);
    diag_scn_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settle),
        cmocka_unit_test(test_causes),
        cmocka_unit_test(test_engine_recovers_within_a_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
