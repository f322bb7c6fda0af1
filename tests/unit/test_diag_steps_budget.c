/* collector/diag/diag_steps: the memory budget of a job's steps follows its
 * ranks (DIAG_STEPS_BYTES_PER_RANK each), never below the configured size
 * and at most DIAG_STEPS_GROWTH times it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collector/diag/diag_steps.h"

#define MiB ((size_t)1 << 20)

static void test_budget_follows_ranks(void **state)
{
    struct diag_steps w;

    (void)state;
    assert_int_equal(diag_steps_init(&w, 256 * MiB, 40), 0);
    assert_int_equal(w.max_bytes, 256 * MiB);
    assert_int_equal(diag_steps_reserve(&w, 1024), 0); /* 32 MiB: the configured size */
    assert_int_equal(w.max_bytes, 256 * MiB);
    assert_int_equal(diag_steps_reserve(&w, 20480), 0); /* 640 MiB */
    assert_int_equal(w.max_bytes, (size_t)20480 * DIAG_STEPS_BYTES_PER_RANK);
    assert_int_equal(diag_steps_reserve(&w, 65536), 0); /* 2 GiB: at most 4 x 256 MiB */
    assert_int_equal(w.max_bytes, DIAG_STEPS_GROWTH * 256 * MiB);
    assert_int_equal(diag_steps_reserve(&w, 16), 0); /* ranks never shrink */
    assert_int_equal(w.max_bytes, DIAG_STEPS_GROWTH * 256 * MiB);
    diag_steps_free(&w);
    /* a small configured size grows at most 4 times */
    assert_int_equal(diag_steps_init(&w, 1 * MiB, 40), 0);
    assert_int_equal(diag_steps_reserve(&w, 1024), 0);
    assert_int_equal(w.max_bytes, DIAG_STEPS_GROWTH * MiB);
    diag_steps_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_follows_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
