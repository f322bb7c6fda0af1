/* Which agents the collector hears (collector/ingest/links.c): unknown is
 * up, down from the end of the last stream until one carries a batch again,
 * and up since when. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collector/ingest/links.h"

static void test_up_down(void **state)
{
    struct links *l = links_new();
    uint64_t since;

    assert_true(links_is_up(l, "never-seen", &since)); /* unknown: as before */
    assert_int_equal(since, 0);
    assert_int_equal(links_up(l, "agent-a", 100), 0);
    assert_int_equal(links_up(l, "agent-a", 150), 0); /* a second stream of it */
    assert_true(links_is_up(l, "agent-a", &since));
    assert_int_equal(since, 100);
    links_down(l, "agent-a", 200);
    assert_true(links_is_up(l, "agent-a", &since)); /* one stream left */
    assert_int_equal(links_unreachable(l), 0);
    links_down(l, "agent-a", 210);
    assert_false(links_is_up(l, "agent-a", &since));
    assert_int_equal(links_unreachable(l), 1);
    assert_int_equal(links_up(l, "agent-a", 300), 0);
    assert_true(links_is_up(l, "agent-a", &since));
    assert_int_equal(since, 300);
    assert_int_equal(links_unreachable(l), 0);
    links_down(l, "agent-b", 400); /* never up: nothing */
    assert_int_equal(links_unreachable(l), 0);
    links_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_up_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
