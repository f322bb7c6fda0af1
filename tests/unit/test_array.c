/* common/array: capacity doubling, content kept, the new tail zeroed, and
 * sizes that would overflow refused with *arr unchanged. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/array.h"

static void test_reserve_doubles(void **state)
{
    uint32_t *a = NULL;
    size_t cap = 0;

    assert_int_equal(array_reserve((void **)&a, &cap, 1, sizeof(*a)), 0);
    assert_int_equal(cap, 64);
    a[63] = 7;
    assert_int_equal(array_reserve((void **)&a, &cap, 64, sizeof(*a)), 0);
    assert_int_equal(cap, 64);
    assert_int_equal(array_reserve((void **)&a, &cap, 300, sizeof(*a)), 0);
    assert_int_equal(cap, 512);
    assert_int_equal(a[63], 7);
    free(a);
}

static void test_grow_zeroed(void **state)
{
    uint64_t *a = NULL, *before;

    assert_int_equal(array_grow_zeroed((void **)&a, 0, 3, sizeof(*a)), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(a[i], 0);
    a[0] = 1, a[1] = 2, a[2] = 3;
    assert_int_equal(array_grow_zeroed((void **)&a, 3, 1000, sizeof(*a)), 0);
    assert_int_equal(a[0], 1);
    assert_int_equal(a[2], 3);
    for (int i = 3; i < 1000; i++)
        assert_int_equal(a[i], 0);
    before = a;
    assert_int_equal(array_grow_zeroed((void **)&a, 1000, SIZE_MAX / 4, sizeof(*a)), -ENOMEM);
    assert_ptr_equal(a, before);
    assert_int_equal(a[2], 3);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_doubles),
        cmocka_unit_test(test_grow_zeroed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
