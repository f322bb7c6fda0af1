/* collector/alerts: an alert resolves as soon as diagnosis says its
 * suspects recovered (alert_book_recovered: not flagged for one window),
 * not clear_steps closed steps after the last report that named them; a
 * node alert only when all its ranks did; a recovery of another cause or
 * job changes nothing. And the level as alerts carry it: "L2", in the
 * state, the labels Alertmanager gets, and read back from states stored
 * with the proto name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/alert_json.h"
#include "collector/alerts/sinks/alertmanager.h"
#include "common/causes.h"

#define SEC 1000000000ull

struct seen {
    int resolved;
    const struct alert *last;
};

static void on_change(void *ctx, const struct alert *a, bool forgotten)
{
    struct seen *s = ctx;

    if (!forgotten && a->status == ALERT_RESOLVED)
        s->resolved++;
}

/* A report of job1 naming ranks[0..n) of node-1 with cause, paging. */
static void observe(struct alert_book *b, const uint32_t *ranks, size_t n, Argus__V1__Cause cause,
                    uint64_t steps)
{
    Argus__V1__Report r;
    Argus__V1__Suspect s[4], *ps[4];

    argus__v1__report__init(&r);
    r.id = "rep-1";
    r.job = "job1";
    r.summary = "a straggler";
    for (size_t i = 0; i < n; i++) {
        argus__v1__suspect__init(&s[i]);
        s[i].rank = ranks[i];
        s[i].node = "node-1";
        s[i].group = "";
        s[i].gpu = (int32_t)ranks[i];
        s[i].cause = cause;
        s[i].level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE;
        s[i].pages = true;
        ps[i] = &s[i];
    }
    r.suspects = ps;
    r.n_suspects = n;
    Argus__V1__Report *reps[1] = {&r};
    assert_int_equal(alert_book_observe(b, "job1", reps, 1, steps, steps * SEC), 0);
}

static struct alert_book *book(struct seen *s)
{
    struct alert_book_options o = {.clear_steps = 60, .job_idle_ns = 3600 * SEC};

    memset(s, 0, sizeof(*s));
    return alert_book_new(&o, on_change, s);
}

static void take_first(void *ctx, const struct alert *a, bool forgotten)
{
    const struct alert **out = ctx;

    (void)forgotten;
    if (!*out)
        *out = a;
}

static void test_rank_alert_resolves_on_recovery(void **state)
{
    struct seen s;
    struct alert_book *b = book(&s);
    const uint32_t r5[] = {5};
    const struct alert *a = NULL;
    uint32_t compute = 1u << ARGUS__V1__CAUSE__CAUSE_COMPUTE;

    (void)state;
    observe(b, r5, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE, 10);
    alert_book_foreach(b, take_first, &a);
    assert_non_null(a);
    assert_int_equal(a->status, ALERT_FIRING);
    /* 41 clean steps later: the book alone would wait for 60 */
    assert_int_equal(alert_book_observe(b, "job1", NULL, 0, 51, 51 * SEC), 0);
    assert_int_equal(a->status, ALERT_FIRING);
    assert_int_equal(alert_book_recovered(b, "job1", 5, 1u << ARGUS__V1__CAUSE__CAUSE_LINK, 0), 0);
    assert_int_equal(alert_book_recovered(b, "job2", 5, compute, 0), 0);
    assert_int_equal(alert_book_recovered(b, "job1", 6, compute, 0), 0);
    assert_int_equal(a->status, ALERT_FIRING);
    assert_int_equal(alert_book_recovered(b, "job1", 5, compute, 52 * SEC), 1);
    assert_int_equal(a->status, ALERT_RESOLVED);
    assert_int_equal(a->resolved_ns, 52 * SEC);
    assert_int_equal(a->n_ranks, 1); /* it still says whom it was about */
    assert_int_equal(a->ranks[0], 5);
    assert_int_equal(s.resolved, 1);
    alert_book_free(b);
}

/* Two ranks of a node (node-wide evidence: one node alert): it resolves
 * when both recovered. */
static void test_node_alert_waits_for_every_rank(void **state)
{
    struct seen s;
    struct alert_book *b = book(&s);
    const uint32_t r56[] = {5, 6};
    const struct alert *a = NULL;
    uint32_t compute = 1u << ARGUS__V1__CAUSE__CAUSE_COMPUTE;

    (void)state;
    observe(b, r56, 2, ARGUS__V1__CAUSE__CAUSE_COMPUTE, 10);
    alert_book_foreach(b, take_first, &a);
    assert_non_null(a);
    assert_string_equal(a->subject, "node:node-1");
    assert_int_equal(alert_book_recovered(b, "job1", 5, compute, 50 * SEC), 0);
    assert_int_equal(a->status, ALERT_FIRING);
    assert_int_equal(a->n_ranks, 1);
    assert_int_equal(a->ranks[0], 6);
    assert_int_equal(alert_book_recovered(b, "job1", 6, compute, 51 * SEC), 1);
    assert_int_equal(a->status, ALERT_RESOLVED);
    assert_int_equal(a->n_ranks, 1);
    alert_book_free(b);
}

/* The level is "L2" in the state and in Alertmanager's labels; a state
 * stored with the proto name reads back as the same level. */
static void test_level_label(void **state)
{
    struct seen s;
    struct alert_book *b = book(&s);
    const uint32_t r5[] = {5};
    const struct alert *a = NULL;
    struct alert got;
    struct json_object *l;

    (void)state;
    observe(b, r5, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE, 10);
    alert_book_foreach(b, take_first, &a);
    struct json_object *o = alert_to_json(a);
    assert_string_equal(json_object_get_string(json_object_object_get(o, "level")), "L2");
    assert_true(json_object_object_get_ex(o, "labels", &l));
    assert_string_equal(json_object_get_string(json_object_object_get(l, "level")), "L2");
    json_object_object_add(o, "level", json_object_new_string("LEVEL_L3_KERNEL"));
    json_object_object_add(l, "level", json_object_new_string("LEVEL_L2_PHASE"));
    assert_int_equal(alert_from_json(o, &got), 0);
    assert_int_equal(got.level, ARGUS__V1__LEVEL__LEVEL_L3_KERNEL);
    assert_int_equal(got.fired_level, ARGUS__V1__LEVEL__LEVEL_L2_PHASE);
    free(got.job);
    json_object_put(o);

    char *ev = alert_event_json(a, "");
    struct json_object *e = json_tokener_parse(ev), *am = json_object_new_array();
    assert_int_equal(alert_sink_alertmanager_append(am, e, 11 * SEC, 240 * SEC), 0);
    assert_true(json_object_object_get_ex(json_object_array_get_idx(am, 0), "labels", &l));
    assert_string_equal(json_object_get_string(json_object_object_get(l, "level")), "L2");
    json_object_put(e);
    json_object_put(am);
    free(ev);
    assert_string_equal(causes_level_label(ARGUS__V1__LEVEL__LEVEL_L1_ITERATION), "L1");
    assert_string_equal(causes_level_label(ARGUS__V1__LEVEL__LEVEL_L3_KERNEL), "L3");
    assert_string_equal(causes_level_label(ARGUS__V1__LEVEL__LEVEL_SILENT), "silent");
    assert_string_equal(causes_level_label(99), "unknown");
    assert_int_equal(causes_level_by_label("l1"), ARGUS__V1__LEVEL__LEVEL_L1_ITERATION);
    assert_int_equal(causes_level_by_label("bogus"), 0);
    alert_book_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_alert_resolves_on_recovery),
        cmocka_unit_test(test_node_alert_waits_for_every_rank),
        cmocka_unit_test(test_level_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
