/* collector/actions/action_book: idempotence per (node, cause) while a drain
 * stands, dry runs apart from real ones, failed drains not standing; the
 * breaker: max real runs per window, the next trips it, it stays open past
 * the window until reset, dry runs never count; the breaker's stored form
 * round-trips; the memory cap keeps standing records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/actions/action_book.h"

#define S UINT64_C(1000000000)
#define COMPUTE ARGUS__V1__CAUSE__CAUSE_COMPUTE
#define LINK ARGUS__V1__CAUSE__CAUSE_LINK

static Argus__V1__Action *rec(const char *id, const char *node, int cause, const char *outcome,
                              bool dry_run)
{
    Argus__V1__Action *a = malloc(sizeof(*a));

    argus__v1__action__init(a);
    a->id = strdup(id);
    a->kind = strdup("drain");
    a->node = strdup(node);
    a->cause = cause;
    a->outcome = strdup(outcome);
    a->dry_run = dry_run;
    return a;
}

static void test_idempotent(void **state)
{
    struct action_book b;

    action_book_init(&b, 3, 3600 * S);
    assert_int_equal(action_book_decide(&b, "n1", COMPUTE, false, 10 * S), ACTION_RUN);
    assert_int_equal(action_book_add(&b, rec("1", "n1", COMPUTE, "done", false)), 0);
    /* the same node and cause again: it stands */
    assert_int_equal(action_book_decide(&b, "n1", COMPUTE, false, 20 * S), ACTION_STANDING);
    /* another cause or node acts */
    assert_int_equal(action_book_decide(&b, "n1", LINK, false, 20 * S), ACTION_RUN);
    assert_int_equal(action_book_decide(&b, "n2", COMPUTE, false, 20 * S), ACTION_RUN);
    /* a dry-run record does not stand for a real run, nor a real one for a dry run */
    assert_int_equal(action_book_decide(&b, "n1", COMPUTE, true, 20 * S), ACTION_RUN);
    assert_int_equal(action_book_add(&b, rec("2", "n3", COMPUTE, "would_run", true)), 0);
    assert_int_equal(action_book_decide(&b, "n3", COMPUTE, true, 20 * S), ACTION_STANDING);
    assert_int_equal(action_book_decide(&b, "n3", COMPUTE, false, 20 * S), ACTION_RUN);
    /* a failed drain does not stand: the next report tries again */
    assert_int_equal(action_book_add(&b, rec("3", "n4", COMPUTE, "failed", false)), 0);
    assert_int_equal(action_book_decide(&b, "n4", COMPUTE, false, 20 * S), ACTION_RUN);
    /* undone: it no longer stands */
    action_book_find(&b, "1")->undone = true;
    assert_int_equal(action_book_decide(&b, "n1", COMPUTE, false, 30 * S), ACTION_RUN);
    assert_null(action_book_find(&b, "9"));
    action_book_clear(&b);
}

static void test_breaker(void **state)
{
    struct action_book b;

    action_book_init(&b, 3, 100 * S);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(action_book_decide(&b, "n", COMPUTE, false, (10 + i) * S), ACTION_RUN);
        action_book_note_run(&b, (10 + i) * S);
    }
    /* the fourth within the window trips; dry runs never do */
    assert_int_equal(action_book_decide(&b, "x", COMPUTE, false, 50 * S), ACTION_TRIP);
    assert_int_equal(action_book_decide(&b, "x", COMPUTE, true, 50 * S), ACTION_RUN);
    action_book_trip(&b, "too many", 50 * S);
    assert_true(b.open);
    assert_int_equal(action_book_decide(&b, "y", COMPUTE, false, 51 * S), ACTION_BREAKER);
    /* open past the window: only a reset closes it */
    assert_int_equal(action_book_decide(&b, "y", COMPUTE, false, 1000 * S), ACTION_BREAKER);
    action_book_trip(&b, "again", 60 * S); /* open already: reason kept */
    assert_string_equal(b.reason, "too many");
    assert_true(action_book_reset(&b));
    assert_false(action_book_reset(&b));
    assert_int_equal(action_book_decide(&b, "y", COMPUTE, false, 1001 * S), ACTION_RUN);
    action_book_clear(&b);
}

static void test_window_slides(void **state)
{
    struct action_book b;

    action_book_init(&b, 2, 100 * S);
    action_book_note_run(&b, 10 * S);
    action_book_note_run(&b, 60 * S);
    assert_int_equal(action_book_decide(&b, "n", COMPUTE, false, 109 * S), ACTION_TRIP);
    /* the run at 10 s left the window at 110 s */
    assert_int_equal(action_book_decide(&b, "n", COMPUTE, false, 110 * S), ACTION_RUN);
    action_book_note_run(&b, 110 * S);
    assert_int_equal(b.nruns, 2);
    action_book_clear(&b);
}

static void test_breaker_round_trip(void **state)
{
    struct action_book b, c;
    Argus__V1__ActionBreaker m;
    uint8_t buf[256];
    size_t len;
    Argus__V1__ActionBreaker *back;

    action_book_init(&b, 2, 100 * S);
    action_book_init(&c, 2, 100 * S);
    action_book_note_run(&b, 10 * S);
    action_book_trip(&b, "why", 20 * S);
    action_book_breaker(&b, &m);
    len = argus__v1__action_breaker__pack(&m, buf);
    back = argus__v1__action_breaker__unpack(NULL, len, buf);
    assert_non_null(back);
    action_book_set_breaker(&c, back);
    argus__v1__action_breaker__free_unpacked(back, NULL);
    assert_true(c.open);
    assert_string_equal(c.reason, "why");
    assert_int_equal(c.opened_ns, 20 * S);
    assert_int_equal(c.nruns, 1);
    assert_int_equal(c.runs[0], 10 * S);
    assert_int_equal(action_book_decide(&c, "n", COMPUTE, false, 30 * S), ACTION_BREAKER);
    /* a closed breaker with no runs (what a reset stores) round-trips too */
    action_book_reset(&b);
    action_book_breaker(&b, &m);
    len = argus__v1__action_breaker__pack(&m, buf);
    back = argus__v1__action_breaker__unpack(NULL, len, buf);
    assert_non_null(back);
    action_book_set_breaker(&c, back);
    argus__v1__action_breaker__free_unpacked(back, NULL);
    assert_false(c.open);
    assert_int_equal(c.nruns, 0);
    action_book_clear(&b);
    action_book_clear(&c);
}

static void test_cap_keeps_standing(void **state)
{
    struct action_book b;
    char id[16];

    action_book_init(&b, 0, S); /* max 0 is clamped to 1 */
    assert_int_equal(b.max, 1);
    assert_int_equal(action_book_add(&b, rec("0", "keep", COMPUTE, "done", false)), 0);
    for (unsigned i = 1; i <= ACTION_BOOK_KEEP + 5; i++) {
        snprintf(id, sizeof(id), "%u", i);
        assert_int_equal(action_book_add(&b, rec(id, "n", COMPUTE, "failed", false)), 0);
    }
    assert_int_equal(b.n, ACTION_BOOK_KEEP);
    assert_non_null(action_book_find(&b, "0")); /* it stands: kept */
    assert_null(action_book_find(&b, "1"));     /* the oldest that did not: gone */
    assert_int_equal(action_book_decide(&b, "keep", COMPUTE, false, S), ACTION_STANDING);
    action_book_clear(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idempotent),         cmocka_unit_test(test_breaker),
        cmocka_unit_test(test_window_slides),      cmocka_unit_test(test_breaker_round_trip),
        cmocka_unit_test(test_cap_keeps_standing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
