/* collector/diag/diag_blind: an episode begins at the first tick that sheds
 * (a step closed early for memory, a late record dropped, a batch the full
 * queue kept out), is reported again every window closed steps while it
 * lasts, and ends after window clean steps; the suspect it gives pages as
 * ArgusBlind about the job as a whole and says what was shed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_blind.h"
#include "collector/diag/diag_report.h"
#include "common/causes.h"

#define WINDOW 10

/* Counts after `closed` steps with `records` diagnosed, plus shedding. */
static struct diag_blind_counts at(uint64_t closed, uint64_t records, uint64_t budget,
                                   uint64_t memory, uint64_t horizon, uint64_t queue)
{
    return (struct diag_blind_counts){records, closed, budget, {memory, horizon, queue}};
}

static void test_quiet_without_shedding(void **state)
{
    struct diag_blind b = {0};
    struct diag_blind_counts c;

    (void)state;
    for (uint64_t s = 1; s <= 50; s++) {
        c = at(s, s * 64, 0, 0, 0, 0);
        assert_int_equal(diag_blind_update(&b, &c, s, WINDOW), DIAG_BLIND_QUIET);
    }
    for (int r = 0; r < DIAG_BLIND_N; r++)
        assert_false(diag_blind_degraded(&b, r));
}

static void test_episode(void **state)
{
    struct diag_blind b = {0};
    struct diag_blind_counts c = at(5, 320, 0, 0, 0, 0);
    char line[320];

    (void)state;
    assert_int_equal(diag_blind_update(&b, &c, 4, WINDOW), DIAG_BLIND_QUIET);
    /* 3 steps closed early, 100 late records dropped for memory */
    c = at(8, 420, 3, 100, 0, 0);
    assert_int_equal(diag_blind_update(&b, &c, 7, WINDOW), DIAG_BLIND_PAGE);
    assert_true(diag_blind_degraded(&b, DIAG_BLIND_MEMORY));
    assert_false(diag_blind_degraded(&b, DIAG_BLIND_QUEUE));
    diag_blind_describe(&b, line, sizeof(line));
    assert_non_null(strstr(line, "memory: 3 of 3 steps closed early"));
    assert_non_null(strstr(line, "50% of records not diagnosed (100 of 200) since step 7"));
    assert_non_null(strstr(line, "diag.max_open_bytes"));
    /* it goes on: the queue sheds too; a report again once window more steps closed */
    c = at(12, 500, 3, 100, 0, 40);
    assert_int_equal(diag_blind_update(&b, &c, 11, WINDOW), DIAG_BLIND_QUIET);
    assert_true(diag_blind_degraded(&b, DIAG_BLIND_QUEUE));
    c = at(18, 600, 3, 100, 0, 50);
    assert_int_equal(diag_blind_update(&b, &c, 17, WINDOW), DIAG_BLIND_PAGE_AGAIN);
    diag_blind_describe(&b, line, sizeof(line));
    assert_non_null(strstr(line, "memory+queue_full: "));
    assert_int_equal(b.shed[DIAG_BLIND_MEMORY], 100);
    assert_int_equal(b.shed[DIAG_BLIND_QUEUE], 50);
    /* window clean steps: it ends; the totals stay */
    c = at(22, 700, 3, 100, 0, 50);
    assert_int_equal(diag_blind_update(&b, &c, 21, WINDOW), DIAG_BLIND_QUIET);
    c = at(28, 800, 3, 100, 0, 50);
    assert_int_equal(diag_blind_update(&b, &c, 27, WINDOW), DIAG_BLIND_ENDED);
    assert_false(diag_blind_degraded(&b, DIAG_BLIND_MEMORY));
    assert_int_equal(b.shed[DIAG_BLIND_QUEUE], 50);
    /* a new engine (a new epoch) counts from 0 again: not a shed */
    c = at(2, 100, 0, 0, 0, 50);
    assert_int_equal(diag_blind_update(&b, &c, 1, WINDOW), DIAG_BLIND_QUIET);
    c = at(4, 150, 0, 0, 7, 50);
    assert_int_equal(diag_blind_update(&b, &c, 3, WINDOW), DIAG_BLIND_PAGE);
    assert_true(diag_blind_degraded(&b, DIAG_BLIND_HORIZON));
    assert_int_equal(b.shed[DIAG_BLIND_HORIZON], 7);
}

static void test_suspect_pages_for_the_job(void **state)
{
    struct diag_blind b = {0};
    struct diag_blind_counts c = at(10, 100, 4, 300, 0, 0);
    Argus__V1__Suspect *s;

    (void)state;
    assert_int_equal(diag_blind_update(&b, &c, 9, WINDOW), DIAG_BLIND_PAGE);
    s = diag_blind_suspect(&b, WINDOW);
    assert_non_null(s);
    assert_int_equal(s->cause, ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND);
    assert_int_equal(s->rank, DIAG_RANK_NONE);
    assert_true(diag_suspect_pages(s));
    assert_true(s->score > 0.74 && s->score < 0.76); /* 300 of 400 shed */
    assert_non_null(strstr(s->evidence, "75% of records not diagnosed"));
    diag_suspect_free(s);
}

/* An episode that sheds under DIAG_BLIND_PAGE_SHARE is said (BEGAN) but
 * pages only once it reaches it: a few records of a catch-up page nobody. */
static void test_pages_at_the_share(void **state)
{
    struct diag_blind b = {0};
    struct diag_blind_counts c = at(10, 1000, 0, 0, 0, 0);

    (void)state;
    assert_int_equal(diag_blind_update(&b, &c, 9, WINDOW), DIAG_BLIND_QUIET);
    c = at(12, 1200, 0, 5, 0, 0); /* 5 of 205: 2% */
    assert_int_equal(diag_blind_update(&b, &c, 11, WINDOW), DIAG_BLIND_BEGAN);
    assert_true(diag_blind_degraded(&b, DIAG_BLIND_MEMORY));
    assert_false(b.paged);
    c = at(13, 1250, 0, 25, 0, 0); /* 25 of 275: 9% */
    assert_int_equal(diag_blind_update(&b, &c, 12, WINDOW), DIAG_BLIND_PAGE);
    assert_true(b.paged);
    c = at(30, 1250 + 17 * 100, 0, 25, 0, 0); /* clean past the window */
    assert_int_equal(diag_blind_update(&b, &c, 29, WINDOW), DIAG_BLIND_ENDED);
    assert_true(b.paged); /* the caller unmarks the job */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_without_shedding),
        cmocka_unit_test(test_episode),
        cmocka_unit_test(test_pages_at_the_share),
        cmocka_unit_test(test_suspect_pages_for_the_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
