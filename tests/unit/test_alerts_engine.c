/* collector/alerts on the real diagnosis engine: a generated job whose
 * compute straggler recovers (the straggler scenario for 100 steps, then the
 * same job healthy) fires exactly one alert, keeps it firing between the
 * engine's periodic re-reports (every window steps), and resolves it
 * diag.window + resolve_after clean steps after the last report naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/alerts/alert_book.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_report.h"
#include "tools/argus-sim/diag_scenario.h"

#define SICK_STEPS 100
#define WELL_STEPS 140
#define WINDOW 40
#define RESOLVE_AFTER 20

struct track {
    int fired, resolved;
    uint64_t fired_step, resolved_step, last_named_step;
    uint64_t step; /* being fed */
    uint32_t rank;
};

static void on_change(void *ctx, const struct alert *a, bool forgotten)
{
    struct track *t = ctx;

    if (a->status == ALERT_FIRING) {
        t->fired++;
        t->fired_step = t->step;
        t->rank = a->ranks[0];
    } else if (a->status == ALERT_RESOLVED && a->fired) {
        t->resolved++;
        t->resolved_step = t->step;
    }
}

/* Feed one generated step (its step number shifted by offset) and hand the
 * reports to the book. */
static void feed_step(struct diag_engine *e, struct diag_scn *s, uint64_t offset,
                      struct alert_book *b, struct track *t)
{
    Argus__V1__StepRecord *const *recs;
    Argus__V1__Report **reps;
    struct diag_engine_stats st;
    uint64_t end;
    size_t n = diag_scn_next(s, &recs, &end);

    for (size_t i = 0; i < n; i++) {
        recs[i]->step += offset;
        assert_true(diag_engine_add_step(e, recs[i], end + i) >= 0);
    }
    assert_true(diag_engine_tick(e, end + 1000) >= 0);
    n = diag_engine_take_reports(e, &reps);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < reps[i]->n_suspects; k++)
            if (reps[i]->suspects[k]->rank == 5 &&
                reps[i]->suspects[k]->cause == ARGUS__V1__CAUSE__CAUSE_COMPUTE)
                t->last_named_step = t->step;
    diag_engine_get_stats(e, &st);
    assert_int_equal(alert_book_observe(b, "recovers", reps, n, st.steps_closed, end), 0);
    for (size_t i = 0; i < n; i++)
        diag_report_free(reps[i]);
    free(reps);
    t->step++;
}

static void test_straggler_recovers(void **state)
{
    struct diag_scn_config sick = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                   .ranks = 64,
                                   .tp = 2,
                                   .pp = 1,
                                   .fault_rank = 5,
                                   .fault_start = 0,
                                   .seed = 7,
                                   .job = "recovers"};
    struct diag_scn_config well = sick;
    struct diag_options opt = {.step_timeout_ns = 2000000000ULL, .window = WINDOW};
    struct alert_book_options bo = {.clear_steps = WINDOW + RESOLVE_AFTER,
                                    .job_idle_ns = 3600000000000ULL};
    struct track t = {0};
    struct diag_scn *s = diag_scn_new(&sick), *h;
    struct alert_book *b = alert_book_new(&bo, on_change, &t);
    Argus__V1__StepRecord *const *recs;
    size_t nres;
    uint64_t end;

    assert_non_null(s);
    opt.name = diag_scn_name;
    opt.name_ctx = s;
    struct diag_engine *e = diag_engine_new(&opt);
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    for (int k = 0; k < SICK_STEPS; k++)
        feed_step(e, s, 0, b, &t);
    assert_int_equal(t.fired, 1);
    assert_int_equal(t.rank, 5);
    assert_int_equal(t.resolved, 0); /* still firing across the periodic re-reports */

    /* the same job, healthy, going on where the sick one stopped */
    diag_scn_next(s, &recs, &end);
    well.fault = DIAG_SCN_HEALTHY;
    well.base_unix_ns = end + 1000000000ULL;
    h = diag_scn_new(&well);
    assert_non_null(h);
    for (int k = 0; k < WELL_STEPS; k++)
        feed_step(e, h, SICK_STEPS + 1, b, &t);
    assert_int_equal(t.fired, 1); /* no flapping */
    assert_int_equal(t.resolved, 1);
    assert_true(t.last_named_step >= SICK_STEPS); /* re-reported after it recovered */
    assert_in_range(t.resolved_step, t.last_named_step + WINDOW + RESOLVE_AFTER - 5,
                    t.last_named_step + WINDOW + RESOLVE_AFTER + 5);
    printf("fired at step %llu, last named at %llu, resolved at %llu\n",
           (unsigned long long)t.fired_step, (unsigned long long)t.last_named_step,
           (unsigned long long)t.resolved_step);
    alert_book_free(b);
    diag_engine_free(e);
    diag_scn_free(s);
    diag_scn_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_straggler_recovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
