/* agent/steps/stepcounters.c: host counter samples go to steps by the share
 * of their time range each step holds; totals survive a full buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/steps/stepcounters.h"

#define MS 1000000ull

/* A 100 ms sample split by steps at 1030 and 1080 ms; the rest waits for
 * the next step. */
static void test_split_by_range(void **state)
{
    static struct stepcounters c;
    uint64_t got[STEPCOUNTERS_N];

    (void)state;
    stepcounters_add(&c, 2, 5 * MS, 1000 * MS); /* first sample: a point */
    stepcounters_add(&c, 2, 100 * MS, 1100 * MS);
    stepcounters_add(&c, 2, 100 * MS, 1100 * MS); /* another thread, same poll */
    stepcounters_add(&c, 1, 0, 1100 * MS);        /* nothing grew: ignored */
    stepcounters_add(&c, 9, 7, 1100 * MS);        /* no such counter: ignored */
    stepcounters_take(&c, 990 * MS, 1030 * MS, got);
    assert_int_equal(got[2], 5 * MS + 60 * MS); /* the point, 30% of 200 ms */
    stepcounters_take(&c, 1030 * MS, 1080 * MS, got);
    assert_int_equal(got[2], 100 * MS);
    assert_int_equal(got[1], 0);
    stepcounters_take(&c, 1080 * MS, 1200 * MS, got);
    assert_int_equal(got[2], 40 * MS);
    assert_int_equal(c.n, 0);
    stepcounters_add(&c, 2, 10 * MS, 1300 * MS);      /* (1100, 1300] */
    stepcounters_take(&c, 1250 * MS, 1400 * MS, got); /* a hole before it: dropped */
    assert_int_equal(got[2], 5 * MS / 2);
}

/* More samples than the buffer holds before a long step is taken: the
 * oldest are merged, nothing is lost. */
static void test_full_keeps_totals(void **state)
{
    static struct stepcounters c;
    uint64_t got[STEPCOUNTERS_N], sum = 0;

    (void)state;
    for (uint64_t t = 1; t <= 3 * STEPCOUNTERS_SAMPLES; t++) {
        stepcounters_add(&c, 1, 3 * MS, t * 100 * MS);
        stepcounters_add(&c, 2, 1 * MS, t * 100 * MS);
    }
    assert_int_equal(c.n, STEPCOUNTERS_SAMPLES);
    stepcounters_take(&c, 0, 400 * STEPCOUNTERS_SAMPLES * MS, got);
    sum = got[1] + got[2];
    assert_int_equal(got[1], 3 * MS * 3 * STEPCOUNTERS_SAMPLES);
    assert_int_equal(sum, 4 * MS * 3 * STEPCOUNTERS_SAMPLES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_by_range),
        cmocka_unit_test(test_full_keeps_totals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
