/* common/u64set: add, has, duplicates, key 0, growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/u64set.h"

static void test_set(void **state)
{
    struct u64set s = {0};

    assert_false(u64set_has(&s, 5));
    assert_int_equal(u64set_add(&s, 5), 1);
    assert_int_equal(u64set_add(&s, 5), 0);
    assert_int_equal(u64set_add(&s, 0), -EINVAL);
    assert_true(u64set_has(&s, 5));
    for (uint64_t i = 1; i <= 50000; i++)
        assert_true(u64set_add(&s, i << 20) >= 0);
    assert_int_equal(s.count, 50001);
    assert_true(u64set_has(&s, 777ull << 20));
    assert_false(u64set_has(&s, (777ull << 20) + 1));
    u64set_clear(&s);
    assert_false(u64set_has(&s, 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_set)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
