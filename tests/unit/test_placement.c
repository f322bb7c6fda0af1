/* common/placement: rendezvous hashing of jobs over collectors. Pinned
 * weights (agents and collectors of different versions must agree), an
 * even spread, about 1/N of the jobs moving when a member joins (all to
 * it), only a leaving member's jobs moving (each to its standby), the
 * list's order and duplicates not mattering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "common/placement.h"

#define JOBS 3000

static const char *job_name(int i)
{
    static char buf[8][32];
    static int at;

    at = (at + 1) % 8;
    snprintf(buf[at], sizeof(buf[at]), "torch-10.0.%d.%d:29500", i / 250, i % 250);
    return buf[at];
}

/* The weights never change: these were computed when the function was
 * written, and a placement computed by another version must agree. */
static void test_pinned(void **state)
{
    const char *set[] = {"collector-0", "collector-1", "collector-2"};
    size_t out[2];

    (void)state;
    assert_int_equal(placement_weight("job-a", "collector-0"), 0x7d3727bbf4f8fc88ULL);
    assert_int_equal(placement_weight("job-a", "collector-1"), 0xda5471e99302312cULL);
    assert_int_equal(placement_pick("job-a", set, 3, out, 2), 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    /* "jo" + "b-a" is not "job" + "-a": the separator counts */
    assert_int_not_equal(placement_weight("jo", "b-acollector-0"),
                         placement_weight("job-a", "collector-0"));
}

static void test_spread_and_standby(void **state)
{
    const char *set[] = {"c0", "c1", "c2"};
    int primary[3] = {0}, standby[3] = {0};
    size_t out[3];

    (void)state;
    for (int i = 0; i < JOBS; i++) {
        assert_int_equal(placement_pick(job_name(i), set, 3, out, 2), 2);
        assert_int_not_equal(out[0], out[1]);
        primary[out[0]]++;
        standby[out[1]]++;
    }
    for (int m = 0; m < 3; m++) {
        assert_true(primary[m] > JOBS / 3 * 85 / 100 && primary[m] < JOBS / 3 * 115 / 100);
        assert_true(standby[m] > JOBS / 3 * 85 / 100 && standby[m] < JOBS / 3 * 115 / 100);
    }
    /* k over the set: every member once; none at all from an empty set */
    assert_int_equal(placement_pick("j", set, 3, out, 3), 3);
    assert_int_equal(out[0] + out[1] + out[2], 0 + 1 + 2);
    assert_int_equal(placement_pick("j", set, 0, out, 2), 0);
}

static void test_join_and_leave(void **state)
{
    const char *three[] = {"c0", "c1", "c2"}, *four[] = {"c0", "c1", "c2", "c3"};
    int moved = 0;
    size_t a[2], b[2];

    (void)state;
    for (int i = 0; i < JOBS; i++) {
        placement_pick(job_name(i), three, 3, a, 2);
        placement_pick(job_name(i), four, 4, b, 2);
        if (a[0] != b[0]) {
            moved++;
            assert_int_equal(b[0], 3); /* a moved job goes to the new member only */
        }
        /* c3 leaves again: only its jobs move, each to its standby */
        if (b[0] == 3)
            assert_int_equal(a[0], b[1]);
    }
    assert_true(moved > JOBS / 4 * 80 / 100 && moved < JOBS / 4 * 120 / 100);
}

static void test_order_and_duplicates(void **state)
{
    const char *set[] = {"c0", "c1", "c2", "c3"}, *shuffled[] = {"c2", "c0", "c3", "c1"};
    const char *dup[] = {"c1", "c1", "", NULL, "c0"};
    size_t a[2], b[2];

    (void)state;
    for (int i = 0; i < 500; i++) {
        placement_pick(job_name(i), set, 4, a, 2);
        placement_pick(job_name(i), shuffled, 4, b, 2);
        assert_string_equal(set[a[0]], shuffled[b[0]]);
        assert_string_equal(set[a[1]], shuffled[b[1]]);
        /* a name twice counts once, empty and NULL names never */
        assert_int_equal(placement_pick(job_name(i), dup, 5, a, 3), 2);
        assert_string_not_equal(dup[a[0]], dup[a[1]]);
        assert_true(a[0] == 0 || a[0] == 4);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_spread_and_standby),
        cmocka_unit_test(test_join_and_leave),
        cmocka_unit_test(test_order_and_duplicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
