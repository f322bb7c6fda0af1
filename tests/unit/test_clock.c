/* common/clock.h: the monotonic-to-UNIX offset as the realtime clock is set
 * (each time converts with the offset of its own time, both ways; the
 * newest CLOCK_OFFSET_KEEP are kept; refresh sees a set clock, and not the
 * sampling noise of one that was left alone). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"

static void test_offset_history(void **state)
{
    struct clock_offset o;

    (void)state;
    clock_offset_init(&o, 1000);
    assert_int_equal(clock_offset_to_real(&o, 5), 1005);
    clock_offset_set(&o, 100, 5000); /* set 4 us on at monotonic 100 */
    assert_int_equal(clock_offset_to_real(&o, 99), 1099);
    assert_int_equal(clock_offset_to_real(&o, 100), 5100);
    assert_int_equal(clock_offset_to_mono(&o, 1099), 99);
    assert_int_equal(clock_offset_to_mono(&o, 5100), 100);
    for (uint64_t m = 0; m < 400; m += 7)
        assert_int_equal(clock_offset_to_mono(&o, clock_offset_to_real(&o, m)), m);
    assert_int_equal(clock_offset_to_mono(&o, 2000), 100); /* skipped: the set */
    clock_offset_set(&o, 200, 500);                        /* and set back, past the first offset */
    assert_int_equal(clock_offset_to_real(&o, 150), 5150);
    assert_int_equal(clock_offset_to_real(&o, 250), 750);
    assert_int_equal(clock_offset_to_mono(&o, 750), 250);
    assert_int_equal(clock_offset_to_mono(&o, 5150), 4650); /* read twice: the later */
    assert_int_equal(clock_offset_to_mono(&o, 5199 + 1), 4700);
    for (int i = 0; i < CLOCK_OFFSET_KEEP; i++) /* the first two offsets are forgotten */
        clock_offset_set(&o, 1000 + (uint64_t)i, 100000 + i);
    assert_int_equal(o.n, CLOCK_OFFSET_KEEP);
    assert_int_equal(clock_offset_to_real(&o, 5), 100005); /* older: the oldest kept */
    assert_int_equal(clock_offset_to_real(&o, 2000), 2000 + 100000 + CLOCK_OFFSET_KEEP - 1);
}

static void test_refresh(void **state)
{
    struct clock_offset o;
    uint64_t now = clock_mono_ns();
    int64_t real = clock_mono_to_real_offset(), moved;
    int quiet = 0;

    (void)state;
    clock_offset_init(&o, real);
    for (int i = 0; i < 100; i++) /* nobody sets the clock here: nothing moves */
        quiet += clock_offset_refresh(&o, clock_mono_ns()) == 0;
    assert_true(quiet >= 99);
    clock_offset_init(&o, real - (int64_t)NSEC_PER_SEC); /* as if set 1 s on since */
    moved = clock_offset_refresh(&o, now);
    assert_true(moved > (int64_t)(NSEC_PER_SEC - NSEC_PER_MSEC) &&
                moved < (int64_t)(NSEC_PER_SEC + NSEC_PER_MSEC));
    assert_int_equal(o.n, 2);
    assert_int_equal(clock_offset_to_real(&o, now - 1), now - 1 + (uint64_t)real - NSEC_PER_SEC);
    assert_true(clock_offset_to_real(&o, now) - now - (uint64_t)real + NSEC_PER_MSEC <
                2 * NSEC_PER_MSEC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_history),
        cmocka_unit_test(test_refresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
