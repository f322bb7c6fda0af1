/* NVTX range projection (agent/sources/source_cupti_proj.c): ranges longer than the
 * pairing window, kernels before their launch records, other threads'
 * launches, the busiest stream, when a range settles, overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agent/sources/source_cupti_proj.h"

struct got {
    int n;
    uint64_t name[8], start[8], dur[8];
    uint32_t stream[8];
};

static void on_phase(void *ctx, uint64_t name_id, uint64_t start, uint64_t dur, uint32_t stream)
{
    struct got *g = ctx;

    if (g->n < 8) {
        g->name[g->n] = name_id, g->start[g->n] = start, g->dur[g->n] = dur;
        g->stream[g->n] = stream;
    }
    g->n++;
}

static void test_range_longer_than_window(void **state)
{
    struct cupti_proj *p = cupti_proj_new();
    struct got g = {0};
    const uint32_t n = 300000; /* launches in one step: > CUPTI_PROJ_WINDOW */

    assert_non_null(p);
    cupti_proj_open(p, 1, 0xabc, 7, 1000);
    for (uint32_t c = 1; c <= n; c++) {
        cupti_proj_launch(p, c, 7, 1000 + c);
        if (c > 1000) /* kernels trail their launches by 1000 */
            cupti_proj_kernel(p, c - 1000, 3, 10000 + (uint64_t)(c - 1000) * 10,
                              10005 + (uint64_t)(c - 1000) * 10);
    }
    cupti_proj_close(p, 1, 1000 + n + 1);
    for (uint32_t c = n - 999; c <= n; c++)
        cupti_proj_kernel(p, c, 3, 10000 + (uint64_t)c * 10, 10005 + (uint64_t)c * 10);
    assert_int_equal(cupti_proj_settle(p, false, 1000000000, on_phase, &g), 0); /* still waiting */
    cupti_proj_launch(p, n + 1, 7, 5000000);
    cupti_proj_kernel(p, n + 1, 3, 20000000, 20000010); /* a later launch's kernel */
    assert_int_equal(cupti_proj_settle(p, false, 1000000000, on_phase, &g), 1);
    assert_int_equal(g.name[0], 0xabc);
    assert_int_equal(g.start[0], 10010);
    assert_int_equal(g.dur[0], (10005 + (uint64_t)n * 10) - 10010);
    assert_int_equal(g.stream[0], 3);
    cupti_proj_free(p);
}

static void test_kernel_before_launch_other_threads_busiest_stream(void **state)
{
    struct cupti_proj *p = cupti_proj_new();
    struct got g = {0};

    cupti_proj_open(p, 9, 0x1, 5, 100);
    cupti_proj_kernel(p, 1, 7, 300, 400); /* its launch record comes after */
    cupti_proj_launch(p, 1, 5, 110);
    cupti_proj_launch(p, 2, 6, 120); /* another thread: not this range's */
    cupti_proj_kernel(p, 2, 7, 50, 5000);
    cupti_proj_launch(p, 3, 5, 130);
    cupti_proj_kernel(p, 3, 7, 500, 600);
    cupti_proj_kernel(p, 3, 9, 350, 360); /* same launch, another stream, less busy */
    cupti_proj_close(p, 9, 200);
    cupti_proj_launch(p, 4, 5, 210); /* after the end: not this range's */
    cupti_proj_kernel(p, 4, 7, 700, 9000);
    assert_int_equal(cupti_proj_settle(p, false, 1000000, on_phase, &g), 1);
    assert_int_equal(g.start[0], 300);
    assert_int_equal(g.dur[0], 300);
    assert_int_equal(g.stream[0], 7);
    cupti_proj_free(p);
}

static void test_settle_by_horizon_or_all_and_overflow(void **state)
{
    struct cupti_proj *p = cupti_proj_new();
    struct got g = {0};

    cupti_proj_open(p, 1, 0x1, 5, 100);
    cupti_proj_launch(p, 10, 5, 110);
    cupti_proj_kernel(p, 10, 2, 150, 160);
    cupti_proj_close(p, 1, 200);
    assert_int_equal(cupti_proj_settle(p, false, 1000, on_phase, &g), 0);
    cupti_proj_kernel(p, 9, 2, 5000, 5001); /* GPU time passes the horizon */
    assert_int_equal(cupti_proj_settle(p, false, 1000, on_phase, &g), 1);
    cupti_proj_open(p, 2, 0x2, 5, 6000);
    cupti_proj_launch(p, 11, 5, 6001);
    cupti_proj_kernel(p, 11, 2, 6100, 6200);
    cupti_proj_close(p, 2, 6300);
    cupti_proj_open(p, 3, 0x3, 5, 6400); /* no kernels: nothing emitted */
    cupti_proj_close(p, 3, 6500);
    assert_int_equal(cupti_proj_settle(p, true, 1000000, on_phase, &g), 1);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.dur[1], 100);
    for (uint32_t i = 0; i < CUPTI_PROJ_RANGES + 1; i++)
        cupti_proj_open(p, 100 + i, 0x9, 5, 7000 + i);
    assert_int_equal(cupti_proj_overflows(p), 1);
    cupti_proj_close(p, 12345, 1); /* unknown id: ignored */
    cupti_proj_free(p);
    cupti_proj_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_longer_than_window),
        cmocka_unit_test(test_kernel_before_launch_other_threads_busiest_stream),
        cmocka_unit_test(test_settle_by_horizon_or_all_and_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
