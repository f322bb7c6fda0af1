/* The cost of a job's suspects (collector/diag/diag_cost.h): the what-if of
 * one step, each step of a rank costed once across re-issued reports, and
 * the estimate against a replay: argus-sim's compute straggler run with and
 * without its fault (same seed, so the same noise), the estimate of the
 * engine's reports within 10% of the time the fault really cost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_cost.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_report.h"
#include "tools/argus-sim/diag_scenario.h"

static void test_whatif(void **state)
{
    (void)state;
    float own[] = {10, 12, 30, -1, 25}, ref[] = {11, 11, 11, 5, 11};
    bool fix[5] = {0};

    assert_true(diag_cost_whatif(own, ref, fix, 5) == 0); /* nobody brought down */
    fix[0] = true; /* a rank under its reference stays as it was */
    assert_true(diag_cost_whatif(own, ref, fix, 5) == 0);
    fix[0] = false;
    fix[2] = true; /* the slowest at its peers': the next slowest sets the step */
    assert_float_equal(diag_cost_whatif(own, ref, fix, 5), 5, 1e-6);
    fix[4] = true; /* both: the healthy ranks set it */
    assert_float_equal(diag_cost_whatif(own, ref, fix, 5), 18, 1e-6);
    fix[2] = false; /* the second slowest alone: the slowest still sets it */
    assert_float_equal(diag_cost_whatif(own, ref, fix, 5), 0, 1e-6);
    fix[3] = true; /* an absent rank changes nothing */
    fix[4] = false;
    assert_float_equal(diag_cost_whatif(own, ref, fix, 5), 0, 1e-6);
}

/* Four ranks of one group; rank 2 takes slow_ns more than the others and
 * waits for nobody, they wait for it (their waits are what it adds). */
static void note(struct diag_cost *c, struct diag_groups *g, uint64_t step, double slow_ns)
{
    struct diag_frame f = {0};
    double wait[4];

    assert_int_equal(diag_frame_reserve(&f, 4), 0);
    diag_frame_reset(&f, step, 1);
    for (uint32_t r = 0; r < 4; r++) {
        f.ranks[r].present = true;
        f.ranks[r].duration_ns = (uint64_t)(100e6 + slow_ns + r * 1e6); /* 100-103 ms */
        wait[r] = r == 2 ? 0 : slow_ns;
    }
    assert_int_equal(diag_cost_note_step(c, &f, wait, 4, g), 0);
    diag_frame_free(&f);
}

static Argus__V1__Report *report_of(uint32_t rank)
{
    Argus__V1__Report *rep = diag_report_new("job", 1, 1);
    assert_non_null(rep);
    assert_int_equal(
        diag_report_add(rep,
                        diag_suspect_new(rank, "n", 0, "g", ARGUS__V1__LEVEL__LEVEL_L2_PHASE,
                                         ARGUS__V1__CAUSE__CAUSE_COMPUTE, "fwd", 9, 8, 10, "")),
        0);
    assert_int_equal(
        diag_report_add(rep, diag_suspect_new(DIAG_RANK_NONE, "", -1, "job",
                                              ARGUS__V1__LEVEL__LEVEL_L1_ITERATION,
                                              ARGUS__V1__CAUSE__CAUSE_DATA_SKEW, "", 1, 1, 10, "")),
        0);
    return rep;
}

static void test_steps_costed_once(void **state)
{
    (void)state;
    struct diag_coord co[4];
    struct diag_groups g = {0};
    struct diag_cost c;

    for (uint32_t r = 0; r < 4; r++)
        co[r] = (struct diag_coord){.known = true, .present = true, .dp = r};
    assert_int_equal(diag_groups_build(&g, co, 4, DIAG_GROUP_WORK), 0);
    diag_cost_init(&c);
    for (uint64_t k = 0; k < 30; k++)
        note(&c, &g, k, k >= 5 ? 50e6 : 0); /* rank 2: 50 ms slower from step 5 */
    Argus__V1__Report *rep = report_of(2);
    assert_int_equal(diag_cost_report(&c, rep, 19, 10), 0); /* steps 10-19 */
    /* own: 100, 101, 152, 103 ms; rank 2's peers' median (100, 101, 103)
     * is 101 ms; without it the step is 103 ms: 49 ms a step. */
    assert_float_equal(rep->seconds_lost, 10 * 0.049, 1e-4);
    assert_float_equal(rep->gpu_hours_lost, 10 * 0.049 * 4 / 3600, 1e-7);
    assert_float_equal(rep->suspects[0]->gpu_hours_lost, rep->gpu_hours_lost, 1e-9);
    assert_true(rep->suspects[1]->gpu_hours_lost == 0); /* a job finding: not estimated */
    /* slowdown: own 152 ms over the peers' median 101 ms; none for a job finding */
    assert_float_equal(rep->suspects[0]->slowdown, 152.0 / 101.0, 1e-4);
    assert_true(rep->suspects[1]->slowdown == 0);
    assert_float_equal(diag_cost_slowdown(&c, 2, 7, 5), (2 * 102.0 + 3 * 152.0) / (5 * 101.0),
                       1e-4);                            /* steps 3-7: healthy until 5 */
    assert_true(diag_cost_slowdown(&c, 9, 19, 10) == 0); /* no such rank */
    double again = rep->seconds_lost;
    assert_int_equal(diag_cost_report(&c, rep, 19, 10), 0); /* the same report (amended) */
    assert_float_equal(rep->seconds_lost, again, 1e-9);
    assert_int_equal(diag_cost_report(&c, rep, 24, 10), 0); /* the next: 20-24 only */
    assert_float_equal(rep->seconds_lost, 5 * 0.049, 1e-4);
    assert_int_equal(diag_cost_report(&c, rep, 22, 10), 0); /* an older window: nothing */
    assert_true(rep->seconds_lost == 0);
    Argus__V1__Report *other = report_of(1); /* a healthy rank costs nothing */
    assert_int_equal(diag_cost_report(&c, other, 29, 10), 0);
    assert_float_equal(other->seconds_lost, 0, 1e-9);
    assert_float_equal(other->suspects[0]->slowdown, 101.0 / 103.0, 1e-4); /* 1.0: healthy */
    diag_report_free(rep);
    diag_report_free(other);
    diag_cost_free(&c);
    diag_groups_free(&g);
}

/* Run the scenario; the job's end time after each step into ends[]; the
 * reports' cost summed into *lost_s and *gpu_h (when e is given). */
static void replay(const struct diag_scn_config *cfg, uint32_t steps, double *ends, double *lost_s,
                   double *gpu_h, bool diagnose)
{
    struct diag_scn *s = diag_scn_new(cfg);
    struct diag_options opt = {.step_timeout_ns = 2000000000ULL};
    uint64_t end = 0;
    size_t nres;

    assert_non_null(s);
    opt.name = diag_scn_name;
    opt.name_ctx = s;
    struct diag_engine *e = diagnose ? diag_engine_new(&opt) : NULL;
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; e && i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    *lost_s = *gpu_h = 0;
    for (uint32_t k = 0; k < steps; k++) {
        Argus__V1__StepRecord *const *recs;
        size_t n = diag_scn_next(s, &recs, &end);
        ends[k] = (double)end;
        for (size_t i = 0; e && i < n; i++)
            assert_true(diag_engine_add_step(e, recs[i], end + i) >= 0);
        if (e)
            assert_true(diag_engine_tick(e, end + 1000) >= 0);
    }
    if (e) {
        Argus__V1__Report **reps;
        diag_engine_flush(e, end + 10000000000ULL);
        size_t n = diag_engine_take_reports(e, &reps);
        for (size_t i = 0; i < n; i++) {
            *lost_s += reps[i]->seconds_lost;
            *gpu_h += reps[i]->gpu_hours_lost;
            diag_report_free(reps[i]);
        }
        free(reps);
    }
    diag_engine_free(e);
    diag_scn_free(s);
}

/* argus-sim's compute-straggler (rank 5 of 64, TP 2) from step 20 to 80 at
 * severity sev: the actual loss is the job's end time with the fault less
 * without it (the same seed draws the same noise). */
static void check_replay(double sev)
{
    enum { STEPS = 140 };
    struct diag_scn_config c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                .ranks = 64,
                                .tp = 2,
                                .fault_rank = 5,
                                .fault_start = 20,
                                .fault_end = 80,
                                .seed = 7,
                                .factor = sev};
    static double faulty[STEPS], healthy[STEPS];
    double lost_s, gpu_h, none_s, none_h;

    replay(&c, STEPS, faulty, &lost_s, &gpu_h, true);
    c.fault = DIAG_SCN_HEALTHY;
    replay(&c, STEPS, healthy, &none_s, &none_h, false);
    double actual_s = (faulty[STEPS - 1] - healthy[STEPS - 1]) / 1e9;
    printf("  severity %.2f: estimated %.3f s (%.4f GPU-hours), actual %.3f s, error %+.1f%%\n",
           sev, lost_s, gpu_h, actual_s, 100 * (lost_s - actual_s) / actual_s);
    assert_true(actual_s > 0);
    assert_true(lost_s > 0.9 * actual_s && lost_s < 1.1 * actual_s);
    assert_float_equal(gpu_h, lost_s * 64 / 3600, 1e-3 * gpu_h);
}

static void test_replay_compute_straggler(void **state)
{
    (void)state;
    check_replay(1.6);
    check_replay(1.3);
}

static void test_replay_healthy_costs_nothing(void **state)
{
    (void)state;
    struct diag_scn_config c = {.fault = DIAG_SCN_HEALTHY, .ranks = 64, .tp = 2, .seed = 7};
    static double ends[100];
    double lost_s, gpu_h;

    replay(&c, 100, ends, &lost_s, &gpu_h, true);
    assert_true(lost_s == 0); /* no report, no cost */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whatif),
        cmocka_unit_test(test_steps_costed_once),
        cmocka_unit_test(test_replay_compute_straggler),
        cmocka_unit_test(test_replay_healthy_costs_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
