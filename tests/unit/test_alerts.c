/* collector/alerts: the lifecycle (pending, firing, resolved after clean
 * steps or when the job ends), grouping by node and peer group (subjects
 * from the evidence: tests/unit/test_alert_subjects.c), the per-job
 * rate limit, a diagnosis restart, and the JSON the sinks get. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/alert_json.h"
#include "collector/alerts/sinks/alertmanager.h"

#define SEC 1000000000ull

struct changes {
    int n, forgotten;
    enum alert_status last;
    char last_id[48], last_subject[160];
    uint32_t last_ranks;
};

static void on_change(void *ctx, const struct alert *a, bool forgotten)
{
    struct changes *c = ctx;

    if (forgotten) {
        c->forgotten++;
        return;
    }
    c->n++;
    c->last = a->status;
    snprintf(c->last_id, sizeof(c->last_id), "%s", a->id);
    snprintf(c->last_subject, sizeof(c->last_subject), "%s", a->subject);
    c->last_ranks = a->n_ranks;
}

/* One report of n suspects; suspects[i] filled by the caller. */
struct fake_report {
    Argus__V1__Report r;
    Argus__V1__Suspect s[4];
    Argus__V1__Suspect *ps[4];
};

static void fake_suspect(struct fake_report *f, uint32_t rank, const char *node, const char *group,
                         Argus__V1__Cause cause, bool pages)
{
    Argus__V1__Suspect *s = &f->s[f->r.n_suspects];

    argus__v1__suspect__init(s);
    s->rank = rank;
    s->node = (char *)node;
    s->group = (char *)group;
    s->gpu = (int32_t)(rank % 8);
    s->cause = cause;
    s->level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE;
    s->pages = pages;
    s->evidence = "forward 2 x median";
    f->ps[f->r.n_suspects++] = s;
    f->r.suspects = f->ps;
}

static void fake_init(struct fake_report *f, const char *job)
{
    memset(f, 0, sizeof(*f));
    argus__v1__report__init(&f->r);
    f->r.id = "rep-1";
    f->r.job = (char *)job;
    f->r.summary = "a straggler";
}

static struct alert_book *book_new(struct changes *c, uint32_t rate_limit)
{
    struct alert_book_options o = {
        .clear_steps = 60,
        .job_idle_ns = 30 * SEC,
        .rate_limit = rate_limit,
        .rate_window_ns = 3600 * SEC,
        .keep_resolved_ns = 100 * SEC,
    };

    memset(c, 0, sizeof(*c));
    return alert_book_new(&o, on_change, c);
}

static void observe(struct alert_book *b, struct fake_report *f, uint64_t steps, uint64_t now)
{
    Argus__V1__Report *reps[1] = {f ? &f->r : NULL};

    assert_int_equal(alert_book_observe(b, "job1", reps, f ? 1 : 0, steps, now), 0);
}

static void test_lifecycle(void **state)
{
    struct changes c;
    struct alert_book *b = book_new(&c, 0);
    struct fake_report f;

    fake_init(&f, "job1");
    fake_suspect(&f, 5, "node-1", "pp=0,tp=1", ARGUS__V1__CAUSE__CAUSE_COMPUTE, false);
    observe(b, &f, 10, 1 * SEC);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.last, ALERT_PENDING);
    assert_string_equal(c.last_subject, "rank:5"); /* one rank of its node: its own */
    f.s[0].pages = true;
    observe(b, &f, 30, 2 * SEC);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.last, ALERT_FIRING);
    observe(b, &f, 50, 3 * SEC); /* re-reported: no change */
    assert_int_equal(c.n, 2);
    observe(b, NULL, 100, 4 * SEC); /* 50 clean steps: not yet (60) */
    assert_int_equal(c.last, ALERT_FIRING);
    observe(b, NULL, 109, 5 * SEC);
    assert_int_equal(c.last, ALERT_FIRING);
    observe(b, NULL, 110, 6 * SEC); /* 60 clean */
    assert_int_equal(c.n, 3);
    assert_int_equal(c.last, ALERT_RESOLVED);
    observe(b, &f, 120, 7 * SEC); /* back: a new alert, new id */
    assert_int_equal(c.n, 5);
    assert_int_equal(c.last, ALERT_FIRING);
    alert_book_free(b);
}

struct seen {
    int n;
    char subjects[8][160];
    uint32_t ranks[8][2];
};

static void on_each(void *ctx, const struct alert *a, bool forgotten)
{
    struct seen *seen = ctx;

    snprintf(seen->subjects[seen->n], 160, "%s", a->subject);
    seen->ranks[seen->n][0] = a->ranks[0];
    seen->ranks[seen->n][1] = a->n_ranks > 1 ? a->ranks[1] : 0;
    seen->n++;
}

static void take_first(void *ctx, const struct alert *a, bool forgotten)
{
    const struct alert **first = ctx;

    if (!*first)
        *first = a;
}

static void test_grouping(void **state)
{
    struct changes c;
    struct alert_book *b = book_new(&c, 0);
    struct fake_report f;

    fake_init(&f, "job1");
    fake_suspect(&f, 5, "node-1", "pp=0,tp=1", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    fake_suspect(&f, 3, "node-1", "pp=0,tp=0", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    fake_suspect(&f, 9, "node-2", "tp=1", ARGUS__V1__CAUSE__CAUSE_LINK, true);
    fake_suspect(&f, 12, "node-2", "tp=1", ARGUS__V1__CAUSE__CAUSE_LINK, true);
    observe(b, &f, 10, 1 * SEC);
    assert_int_equal(c.n, 4); /* two alerts, each pending then firing */
    fake_init(&f, "job1");
    fake_suspect(&f, 40, "", "", ARGUS__V1__CAUSE__CAUSE_DATA_SKEW, false);
    fake_suspect(&f, UINT32_MAX, "", "job", ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION, false);
    observe(b, &f, 11, 2 * SEC);
    assert_int_equal(c.n, 4); /* data skew and job regression make no alert */
    fake_init(&f, "job1");
    fake_suspect(&f, 17, "", "", ARGUS__V1__CAUSE__CAUSE_HOST, false);
    fake_suspect(&f, UINT32_MAX, "node-7", "", ARGUS__V1__CAUSE__CAUSE_SILENT, true);
    observe(b, &f, 12, 3 * SEC);
    assert_int_equal(c.n, 7);
    assert_string_equal(c.last_subject, "node:node-7");
    assert_int_equal(c.last_ranks, 0); /* a node finding names no rank */

    struct seen seen = {0};
    alert_book_foreach(b, on_each, &seen);
    assert_int_equal(seen.n, 4);
    assert_string_equal(seen.subjects[0], "node:node-1");
    assert_int_equal(seen.ranks[0][0], 3); /* ranks sorted */
    assert_int_equal(seen.ranks[0][1], 5);
    assert_string_equal(seen.subjects[1], "group:tp=1");
    assert_int_equal(seen.ranks[1][1], 12);
    assert_string_equal(seen.subjects[2], "rank:17");
    alert_book_free(b);
}

static void test_rate_limit_and_job_end(void **state)
{
    struct changes c;
    struct alert_book *b = book_new(&c, 1);
    struct fake_report f;

    fake_init(&f, "job1");
    fake_suspect(&f, 1, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    fake_suspect(&f, 9, "node-2", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    observe(b, &f, 10, 1 * SEC);
    assert_int_equal(c.n, 3); /* two pending, one firing */
    assert_int_equal(alert_book_rate_limited(b), 1);
    observe(b, &f, 20, 3601 * SEC); /* the hour has passed: the second fires */
    assert_int_equal(c.n, 4);
    assert_int_equal(c.last, ALERT_FIRING);
    alert_book_sweep(b, 3620 * SEC); /* idle 19 s: still on */
    assert_int_equal(c.n, 4);
    alert_book_sweep(b, 3632 * SEC); /* idle 31 s: the job ended */
    assert_int_equal(c.n, 6);
    assert_int_equal(c.last, ALERT_RESOLVED);
    assert_int_equal(c.forgotten, 0);
    alert_book_sweep(b, 3800 * SEC); /* resolved 168 s ago: forgotten */
    assert_int_equal(c.forgotten, 2);
    alert_book_free(b);
}

static void test_diagnosis_restart(void **state)
{
    struct changes c;
    struct alert_book *b = book_new(&c, 0);
    struct fake_report f;

    fake_init(&f, "job1");
    fake_suspect(&f, 1, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    observe(b, &f, 500, 1 * SEC);
    observe(b, NULL, 5, 2 * SEC);  /* a new engine: 5 closed, not 500 - 5 */
    observe(b, NULL, 64, 3 * SEC); /* 64 clean: over 60 */
    assert_int_equal(c.last, ALERT_RESOLVED);
    alert_book_free(b);
}

static void test_json(void **state)
{
    struct changes c;
    struct alert_book *b = book_new(&c, 0);
    struct fake_report f;
    struct alert got;
    const struct alert *firing = NULL;

    fake_init(&f, "job1");
    fake_suspect(&f, 5, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    fake_suspect(&f, 6, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    observe(b, &f, 10, 1700000000 * SEC);
    alert_book_foreach(b, take_first, &firing);
    assert_non_null(firing);

    struct json_object *o = alert_to_json(firing);
    assert_int_equal(alert_from_json(o, &got), 0);
    assert_string_equal(got.id, firing->id);
    assert_string_equal(got.job, "job1");
    assert_int_equal(got.status, ALERT_FIRING);
    assert_int_equal(got.n_ranks, 2);
    assert_string_equal(got.fired_ranks, "5,6"); /* labels fixed when it fired */
    assert_int_equal(got.firing_ns, 1700000000 * SEC);
    free(got.job);
    json_object_put(o);

    char *ev = alert_event_json(firing, "https://argus/r/{id}?j={job}");
    struct json_object *e = json_tokener_parse(ev), *am = json_object_new_array(), *v, *l;
    assert_non_null(e);
    assert_true(json_object_object_get_ex(e, "schema", &v));
    assert_string_equal(json_object_get_string(v), "argus.alert.v1");
    assert_true(json_object_object_get_ex(e, "report_url", &v));
    assert_string_equal(json_object_get_string(v), "https://argus/r/rep-1?j=job1");
    assert_int_equal(alert_sink_alertmanager_append(am, e, 1700000100 * SEC, 240 * SEC), 0);
    v = json_object_array_get_idx(am, 0);
    assert_true(json_object_object_get_ex(v, "labels", &l));
    assert_string_equal(json_object_get_string(json_object_object_get(l, "ranks")), "5,6");
    assert_null(json_object_object_get(l, "gpu")); /* two GPUs: no gpu label */
    assert_string_equal(json_object_get_string(json_object_object_get(l, "cause")), "compute");
    assert_string_equal(json_object_get_string(json_object_object_get(l, "severity")), "page");
    assert_string_equal(json_object_get_string(json_object_object_get(v, "startsAt")),
                        "2023-11-14T22:13:20.000Z");
    assert_string_equal(json_object_get_string(json_object_object_get(v, "endsAt")),
                        "2023-11-14T22:19:00.000Z");
    json_object_object_add(e, "schema", json_object_new_string("other"));
    assert_int_equal(alert_sink_alertmanager_append(am, e, 0, 0), -EINVAL);
    json_object_put(e);
    json_object_put(am);
    free(ev);
    alert_book_free(b);
}

/* An alert's GPU-hours lost: its suspects' costs summed over the reports
 * that named them, a report seen again (amended) counted once, kept in its
 * JSON and sent as the Alertmanager annotation gpu_hours_lost. */
static void test_cost(void **state)
{
    struct changes c;
    struct alert_book *b = book_new(&c, 0);
    struct fake_report f;
    const struct alert *a = NULL;

    fake_init(&f, "job1");
    fake_suspect(&f, 5, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    fake_suspect(&f, 6, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    f.s[0].gpu_hours_lost = 1.5;
    f.s[1].gpu_hours_lost = 0.5;
    observe(b, &f, 10, 1700000000 * SEC);
    alert_book_foreach(b, take_first, &a);
    assert_non_null(a);
    assert_float_equal(a->gpu_hours_lost, 2.0, 1e-9);
    f.s[0].gpu_hours_lost = 1.75; /* the same report amended: replaces, not adds */
    observe(b, &f, 11, 1700000001 * SEC);
    assert_float_equal(a->gpu_hours_lost, 2.25, 1e-9);
    fake_init(&f, "job1");
    f.r.id = "rep-2";
    fake_suspect(&f, 5, "node-1", "", ARGUS__V1__CAUSE__CAUSE_COMPUTE, true);
    f.s[0].gpu_hours_lost = 1.0;
    observe(b, &f, 50, 1700000040 * SEC);
    assert_float_equal(a->gpu_hours_lost, 3.25, 1e-9);

    struct json_object *o = alert_to_json(a);
    struct alert got;
    assert_int_equal(alert_from_json(o, &got), 0);
    assert_float_equal(got.gpu_hours_lost, 3.25, 1e-9);
    free(got.job);
    json_object_put(o);
    char *ev = alert_event_json(a, "");
    struct json_object *e = json_tokener_parse(ev), *am = json_object_new_array(), *ann;
    assert_int_equal(alert_sink_alertmanager_append(am, e, 1700000100 * SEC, 240 * SEC), 0);
    assert_true(json_object_object_get_ex(json_object_array_get_idx(am, 0), "annotations", &ann));
    assert_string_equal(json_object_get_string(json_object_object_get(ann, "gpu_hours_lost")),
                        "3.25");
    json_object_put(e);
    json_object_put(am);
    free(ev);
    alert_book_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_grouping),
        cmocka_unit_test(test_rate_limit_and_job_end),
        cmocka_unit_test(test_diagnosis_restart),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
