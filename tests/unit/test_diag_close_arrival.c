/* collector/diag/diag_engine: a step closes when the last of its ranks'
 * records arrives, in the batch that brings it (no tick, no timeout): a
 * step is never held open for a periodic tick (issue 33 item 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "tools/argus-sim/diag_scenario.h"

static uint64_t closed(const struct diag_engine *e)
{
    struct diag_engine_stats st;

    diag_engine_get_stats(e, &st);
    return st.steps_closed;
}

static void test_step_closes_when_its_last_rank_arrives(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_HEALTHY, .seed = 3};
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_options o = {0};
    struct diag_engine *e = diag_engine_new(&o);
    Argus__V1__Resource *const *res;
    size_t nres;

    (void)state;
    assert_non_null(s);
    assert_non_null(e);
    res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    for (uint64_t k = 0; k < 5; k++) {
        Argus__V1__StepRecord *const *recs;
        uint64_t end;
        size_t n = diag_scn_next(s, &recs, &end);
        assert_true(n == nres);
        /* every rank but the last: the step stays open */
        assert_int_equal(diag_engine_begin_batch(e, "node-a", end), 0);
        for (size_t i = 0; i + 1 < n; i++)
            assert_int_equal(diag_engine_add_step(e, recs[i], end), 0);
        diag_engine_end_batch(e, end);
        assert_int_equal(closed(e), k);
        /* its last rank, a millisecond later, in a batch of its own */
        assert_int_equal(diag_engine_begin_batch(e, "node-b", end + 1000000), 0);
        assert_int_equal(diag_engine_add_step(e, recs[n - 1], end + 1000000), 0);
        diag_engine_end_batch(e, end + 1000000);
        assert_int_equal(closed(e), k + 1);
    }
    diag_engine_free(e);
    diag_scn_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_closes_when_its_last_rank_arrives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
