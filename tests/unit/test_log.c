/* Logging: levels, line format, arguments not evaluated below the level, and
 * the rate limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"

static int evaluated;

static int side_effect(void)
{
    return ++evaluated;
}

static void test_levels_and_format(void **state)
{
    char buf[1024] = {0};
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

    unsetenv("JOURNAL_STREAM");
    log_set_stream(f);
    log_set_ident("argus-test");
    log_set_level(LOG_LEVEL_WARN);
    log_info("spool", "not shown %d", side_effect());
    log_warn("spool", "segment %d corrupt", 7);
    log_set_level(LOG_LEVEL_DEBUG);
    log_debug("spool", "now shown");
    fclose(f);
    log_set_stream(NULL);
    assert_int_equal(evaluated, 0);
    assert_string_equal(buf, "argus-test warn spool: segment 7 corrupt\n"
                             "argus-test debug spool: now shown\n");
}

static void test_level_parse(void **state)
{
    enum log_level l;

    assert_int_equal(log_level_parse("debug", &l), 0);
    assert_int_equal(l, LOG_LEVEL_DEBUG);
    assert_int_equal(log_level_parse("loud", &l), -EINVAL);
}

static void test_ratelimit(void **state)
{
    struct log_ratelimit rl = {.interval_ns = 1000, .burst = 3};
    uint64_t suppressed;
    int allowed = 0;

    for (int i = 0; i < 10; i++)
        allowed += log_ratelimit_allow(&rl, 100 + (uint64_t)i, &suppressed);
    assert_int_equal(allowed, 3);
    assert_int_equal(rl.suppressed, 7);
    /* next window: allowed again, and told how many were dropped */
    assert_true(log_ratelimit_allow(&rl, 1200, &suppressed));
    assert_int_equal(suppressed, 7);
    assert_true(log_ratelimit_allow(&rl, 1201, &suppressed));
    assert_int_equal(suppressed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_and_format),
        cmocka_unit_test(test_level_parse),
        cmocka_unit_test(test_ratelimit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
