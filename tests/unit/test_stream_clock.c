/* The per-agent clock offset estimate on hand-built arrival sequences: a node
 * 8 days behind is estimated and flagged once; a node in sync with jittery
 * delivery never is; a spool replay (batches sealed long ago, sent fast) is
 * not a skew; a fixed clock recovers once; idle streams are forgotten and
 * the stream bound holds. Times are synthetic: no sleeping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/ingest/stream_clock.h"
#include "common/clock.h"

#define T0 (UINT64_C(1796000000) * NSEC_PER_SEC)
#define MS NSEC_PER_MSEC
#define S NSEC_PER_SEC

static struct stream_clock *clock_new(void)
{
    struct stream_clock_options o = {.skew_warn_ns = 2 * S, .window_ns = 10 * S};
    struct stream_clock *c = stream_clock_new(&o);

    assert_non_null(c);
    return c;
}

/* A deterministic delay in [10 ms, 410 ms): 10 ms every fifth batch. */
static uint64_t delay(uint64_t i)
{
    return 10 * MS + (i % 5 ? i * 7919 % 400 : 0) * MS;
}

/* Send n batches, one a second from `from`, of an agent whose clock is
 * offset from ours; returns how many FLAGGED and RECOVERED events came. */
static void stream(struct stream_clock *c, const char *agent, int64_t offset, uint64_t from, int n,
                   int *flagged, int *recovered, int64_t *last)
{
    for (int i = 0; i < n; i++) {
        uint64_t created = from + (uint64_t)i * S; /* collector time of sealing */
        uint64_t recv = created + delay((uint64_t)i);
        enum stream_clock_event ev =
            stream_clock_observe(c, agent, created + (uint64_t)offset, recv, last);

        *flagged += ev == STREAM_CLOCK_FLAGGED;
        *recovered += ev == STREAM_CLOCK_RECOVERED;
    }
}

static void test_days_behind_flagged_once(void **state)
{
    struct stream_clock *c = clock_new();
    const int64_t behind = -(int64_t)(8 * 86400 * S);
    struct stream_clock_stats st;
    int flagged = 0, recovered = 0;
    int64_t est = 0;

    stream(c, "node-behind", behind, T0, 60, &flagged, &recovered, &est);
    assert_int_equal(flagged, 1);
    assert_int_equal(recovered, 0);
    /* the least-delayed batch: offset minus 10 ms at the most */
    assert_true(est <= behind && est >= behind - (int64_t)(20 * MS));
    stream_clock_get_stats(c, &st);
    assert_int_equal(st.streams, 1);
    assert_int_equal(st.flagged, 1);
    assert_int_equal(st.flags_total, 1);
    stream_clock_free(c);
}

static void test_in_sync_never_flagged(void **state)
{
    struct stream_clock *c = clock_new();
    int flagged = 0, recovered = 0;
    int64_t est = 0;

    stream(c, "node-ok", 0, T0, 120, &flagged, &recovered, &est);
    /* +1.5 s: within the 2 s bound */
    stream(c, "node-close", (int64_t)(1500 * MS), T0, 120, &flagged, &recovered, &est);
    assert_int_equal(flagged, 0);
    assert_true(est > (int64_t)(1400 * MS) && est <= (int64_t)(1500 * MS));
    stream_clock_free(c);
}

/* An agent back from a 5 minute outage replays its spool: 300 batches
 * sealed a second apart, sent within 30 s, then live ones again. */
static void test_replay_is_not_skew(void **state)
{
    struct stream_clock *c = clock_new();
    int flagged = 0, recovered = 0;
    int64_t est = 0;

    stream(c, "node-r", 0, T0, 20, &flagged, &recovered, &est);
    for (int i = 0; i < 300; i++) {
        uint64_t created = T0 + 20 * S + (uint64_t)i * S;
        uint64_t recv = T0 + 320 * S + (uint64_t)i * 100 * MS;
        flagged += stream_clock_observe(c, "node-r", created, recv, &est) == STREAM_CLOCK_FLAGGED;
    }
    stream(c, "node-r", 0, T0 + 351 * S, 30, &flagged, &recovered, &est);
    assert_int_equal(flagged, 0);
    assert_true(est <= 0 && est > -(int64_t)(20 * MS));
    stream_clock_free(c);
}

static void test_fixed_clock_recovers_once(void **state)
{
    struct stream_clock *c = clock_new();
    int flagged = 0, recovered = 0;
    int64_t est = 0;

    stream(c, "node-f", (int64_t)(30 * S), T0, 40, &flagged, &recovered, &est);
    stream(c, "node-f", 0, T0 + 40 * S, 40, &flagged, &recovered, &est);
    assert_int_equal(flagged, 1);
    assert_int_equal(recovered, 1);
    assert_true(est <= 0 && est > -(int64_t)(20 * MS));
    stream_clock_free(c);
}

struct seen {
    int n;
    bool flagged;
};

static void each(void *ctx, const char *agent, int64_t offset, bool flagged)
{
    struct seen *s = ctx;

    s->n++;
    s->flagged |= flagged;
}

static void test_idle_forgotten_and_bound(void **state)
{
    struct stream_clock_options o = {.skew_warn_ns = 2 * S, .window_ns = 10 * S, .max_streams = 2};
    struct stream_clock *c = stream_clock_new(&o);
    struct stream_clock_stats st;
    struct seen seen = {0};

    stream_clock_observe(c, "a", T0, T0 + MS, NULL);
    stream_clock_observe(c, "b", T0, T0 + MS, NULL);
    stream_clock_observe(c, "c", T0, T0 + MS, NULL); /* over the bound */
    stream_clock_get_stats(c, &st);
    assert_int_equal(st.streams, 2);
    assert_int_equal(st.untracked, 1);
    stream_clock_observe(c, "b", T0 + 3000 * S, T0 + 3000 * S + MS, NULL);
    stream_clock_tick(c, T0 + 3700 * S); /* a: idle over an hour */
    stream_clock_foreach(c, each, &seen);
    assert_int_equal(seen.n, 1);
    assert_false(seen.flagged);
    stream_clock_get_stats(c, &st);
    assert_int_equal(st.streams, 1);
    stream_clock_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_days_behind_flagged_once),
        cmocka_unit_test(test_in_sync_never_flagged),
        cmocka_unit_test(test_replay_is_not_skew),
        cmocka_unit_test(test_fixed_clock_recovers_once),
        cmocka_unit_test(test_idle_forgotten_and_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
