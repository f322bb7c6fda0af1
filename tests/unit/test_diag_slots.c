/* Dense slots for rank numbers (collector/diag/diag_slots.h): slots from 1
 * in arrival order whatever the numbers, found again, numbers back, growth
 * past the first table, and rank lists in rank order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_slots.h"

static void test_slots_in_arrival_order(void **state)
{
    struct diag_slots s = {0};
    uint32_t slot;

    (void)state;
    assert_int_equal(diag_slots_find(&s, 0), 0);
    assert_int_equal(diag_slots_get(&s, 65535, &slot), 0);
    assert_int_equal(slot, 1); /* slot 0 is no rank's */
    assert_int_equal(diag_slots_get(&s, 0, &slot), 0);
    assert_int_equal(slot, 2);
    assert_int_equal(diag_slots_get(&s, 65535, &slot), 0);
    assert_int_equal(slot, 1);
    assert_int_equal(diag_slots_find(&s, 0), 2);
    assert_int_equal(diag_slots_find(&s, 7), 0);
    assert_int_equal(diag_slots_rank(&s, 1), 65535);
    assert_int_equal(diag_slots_rank(&s, 2), 0);
    assert_int_equal(diag_slots_rank(&s, UINT32_MAX), UINT32_MAX); /* no slot: as it is */
    assert_int_equal(diag_slots_rank(NULL, 5), 5);                 /* no map: the same */
    assert_int_equal(diag_slots_count(&s), 2);
    diag_slots_free(&s);
    assert_int_equal(diag_slots_count(&s), 0);
}

/* 20,000 ranks from the top down: every one keeps its slot through the
 * table's growth, and memory follows the count. */
static void test_many_ranks(void **state)
{
    struct diag_slots s = {0};
    uint32_t slot;

    (void)state;
    for (uint32_t i = 0; i < 20000; i++) {
        assert_int_equal(diag_slots_get(&s, 65535 - i * 3, &slot), 0);
        assert_int_equal(slot, i + 1);
    }
    for (uint32_t i = 0; i < 20000; i++) {
        assert_int_equal(diag_slots_find(&s, 65535 - i * 3), i + 1);
        assert_int_equal(diag_slots_rank(&s, i + 1), 65535 - i * 3);
    }
    assert_int_equal(diag_slots_find(&s, 65534), 0);
    assert_int_equal(diag_slots_count(&s), 20000);
    assert_true(diag_slots_bytes(&s) <= 20000 * 20);
    diag_slots_free(&s);
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(diag_slots_get(&s, 65535 - i, &slot), 0);
    assert_true(diag_slots_bytes(&s) <= 1000 * 20); /* not 65,536 of anything */
    diag_slots_free(&s);
}

static bool pick_odd_slots(const void *ctx, uint32_t slot)
{
    (void)ctx;
    return slot % 2 == 1;
}

static void test_ranks_text(void **state)
{
    struct diag_slots s = {0};
    uint32_t slot, order[] = {9, 4, 8, 3, 7, 2, 20, 1, 12};
    char buf[64], small[12];

    (void)state;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        assert_int_equal(diag_slots_get(&s, order[i], &slot), 0);
    /* odd slots 1, 3, 5, 7, 9 are ranks 9, 8, 7, 20, 12 */
    assert_int_equal(diag_slots_ranks_text(&s, 10, pick_odd_slots, NULL, buf, sizeof(buf)), 5);
    assert_string_equal(buf, "7-9,12,20");
    assert_int_equal(diag_slots_ranks_text(&s, 10, pick_odd_slots, NULL, small, sizeof(small)), 5);
    assert_string_equal(small, "7-9,12...");
    assert_int_equal(diag_slots_ranks_text(NULL, 6, pick_odd_slots, NULL, buf, sizeof(buf)), 3);
    assert_string_equal(buf, "1,3,5");
    diag_slots_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_in_arrival_order),
        cmocka_unit_test(test_many_ranks),
        cmocka_unit_test(test_ranks_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
