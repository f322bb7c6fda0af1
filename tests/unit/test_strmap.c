/* common/strmap: put, get, first string wins, growth past many entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/strmap.h"

static void test_put_get(void **state)
{
    struct strmap m = {0};
    char buf[32];

    assert_null(strmap_get(&m, 7));
    assert_int_equal(strmap_put(&m, 7, "gemm"), 1);
    assert_int_equal(strmap_put(&m, 7, "other"), 0);
    assert_string_equal(strmap_get(&m, 7), "gemm");
    assert_int_equal(strmap_put(&m, 0, "x"), -EINVAL);
    assert_int_equal(strmap_put(&m, 8, NULL), -EINVAL);
    strcpy(buf, "copied");
    strmap_put(&m, 9, buf);
    buf[0] = 'X';
    assert_string_equal(strmap_get(&m, 9), "copied");
    strmap_clear(&m);
    assert_null(strmap_get(&m, 7));
}

static void test_many(void **state)
{
    struct strmap m = {0};
    char name[32];

    for (uint64_t i = 1; i <= 20000; i++) {
        snprintf(name, sizeof(name), "k%llu", (unsigned long long)i);
        assert_int_equal(strmap_put(&m, i * 0x10000, name), 1);
    }
    assert_int_equal(m.count, 20000);
    for (uint64_t i = 1; i <= 20000; i += 997) {
        snprintf(name, sizeof(name), "k%llu", (unsigned long long)i);
        assert_string_equal(strmap_get(&m, i * 0x10000), name);
    }
    assert_null(strmap_get(&m, 12345));
    strmap_clear(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
