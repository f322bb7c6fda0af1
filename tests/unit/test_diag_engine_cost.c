/* The diagnosis engine's cost on generated jobs (TP=8, PP=4, a compute
 * straggler): time per closed step, per record fed, and the engine's heap,
 * at 1,024 and 10,240 ranks. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_report.h"
#include "tools/argus-sim/diag_scenario.h"

/* Cost per closed step with ranks ranks (TP=8, PP=4). */
static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void measure(uint32_t ranks, uint32_t steps, double *avg_ms, double *max_ms,
                    double *ingest_us, double *heap_mb)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                .ranks = ranks,
                                .tp = 8,
                                .pp = 4,
                                .seed = 11,
                                .fault_rank = ranks / 3,
                                .fault_start = 2};
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_options opt = {0};
    struct diag_engine_stats st;
    size_t nres;
    uint64_t end;

    assert_non_null(s);
    struct mallinfo2 mi = mallinfo2();
    size_t heap0 = mi.uordblks + mi.hblkhd; /* small chunks + mmap'd big ones */
    struct diag_engine *e = diag_engine_new(&opt);
    assert_non_null(e);
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    double add_ns = 0;
    for (uint32_t k = 0; k < steps; k++) {
        Argus__V1__StepRecord *const *recs;
        size_t n = diag_scn_next(s, &recs, &end);
        double t0 = now_ns();
        for (size_t i = 0; i < n; i++)
            assert_true(diag_engine_add_step(e, recs[i], end) >= 0);
        add_ns += now_ns() - t0;
    }
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed, steps);
    *avg_ms = (double)st.close_ns_total / st.steps_closed / 1e6;
    *max_ms = (double)st.close_ns_max / 1e6;
    mi = mallinfo2();
    *heap_mb = (double)(mi.uordblks + mi.hblkhd - heap0) / (1 << 20); /* the engine's heap */
    /* add_step time includes the closes it triggered. */
    *ingest_us = (add_ns - (double)st.close_ns_total) / ((double)steps * ranks) / 1e3;
    Argus__V1__Report **reps;
    size_t nr = diag_engine_take_reports(e, &reps);
    for (size_t i = 0; i < nr; i++)
        diag_report_free(reps[i]);
    free(reps);
    diag_engine_free(e);
    diag_scn_free(s);
}

static void test_cost_per_closed_step(void **state)
{
    double avg, max, ingest, heap;

    measure(1024, 12, &avg, &max, &ingest, &heap);
    printf("  1,024 ranks: %.2f ms per closed step (max %.2f ms), ingest %.2f us per record, "
           "heap %.1f MiB\n",
           avg, max, ingest, heap);
    assert_true(max < 1000);
    /* DIAG_BENCH_STEPS=n measures n steps at 10,240 ranks (default 6). */
    uint32_t steps = getenv("DIAG_BENCH_STEPS") ? (uint32_t)atoi(getenv("DIAG_BENCH_STEPS")) : 6;
    measure(10240, steps ? steps : 6, &avg, &max, &ingest, &heap);
    printf("  10,240 ranks: %.2f ms per closed step (max %.2f ms), ingest %.2f us per record, "
           "heap %.1f MiB\n",
           avg, max, ingest, heap);
    assert_true(max < 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_per_closed_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
