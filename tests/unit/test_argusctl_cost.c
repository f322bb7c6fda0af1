/* argusctl cost (tools/argusctl/cost.h): the GPU-hours of reports ranked by
 * node, cause and job, a report counted once per row however many of its
 * suspects fall in it, the costliest reports first, nothing from findings
 * that were not estimated, and --by checked. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/argusctl/cost.h"

struct fake {
    Argus__V1__Report r;
    Argus__V1__Suspect s[3], *ps[3];
};

static void fake(struct fake *f, const char *id, const char *job, double report_hours)
{
    memset(f, 0, sizeof(*f));
    argus__v1__report__init(&f->r);
    f->r.id = (char *)id;
    f->r.job = (char *)job;
    f->r.gpu_hours_lost = report_hours;
    f->r.suspects = f->ps;
}

static void suspect(struct fake *f, const char *node, Argus__V1__Cause cause, double hours)
{
    Argus__V1__Suspect *s = &f->s[f->r.n_suspects];

    argus__v1__suspect__init(s);
    s->rank = (uint32_t)f->r.n_suspects;
    s->node = (char *)node;
    s->cause = cause;
    s->gpu_hours_lost = hours;
    f->ps[f->r.n_suspects++] = s;
}

/* Three reports: r1 (job a) node-1 compute 2 + node-1 host 1; r2 (job a)
 * node-2 link 4; r3 (job b) node-1 compute 0.5, plus a job finding. */
static void add_all(struct cost_table *t)
{
    struct fake f;

    fake(&f, "r1", "a", 2.8);
    suspect(&f, "node-1", ARGUS__V1__CAUSE__CAUSE_COMPUTE, 2);
    suspect(&f, "node-1", ARGUS__V1__CAUSE__CAUSE_HOST, 1);
    assert_int_equal(cost_add(t, &f.r), 0);
    fake(&f, "r2", "a", 4);
    suspect(&f, "node-2", ARGUS__V1__CAUSE__CAUSE_LINK, 4);
    assert_int_equal(cost_add(t, &f.r), 0);
    fake(&f, "r3", "b", 0.5);
    suspect(&f, "node-1", ARGUS__V1__CAUSE__CAUSE_COMPUTE, 0.5);
    suspect(&f, "", ARGUS__V1__CAUSE__CAUSE_DATA_SKEW, 0); /* not estimated */
    assert_int_equal(cost_add(t, &f.r), 0);
    fake(&f, "r4", "c", 0); /* costs nothing: no row */
    suspect(&f, "node-3", ARGUS__V1__CAUSE__CAUSE_IMBALANCE, 0);
    assert_int_equal(cost_add(t, &f.r), 0);
    cost_sort(t);
}

static void test_by_node(void **state)
{
    (void)state;
    struct cost_table t = {.by = COST_BY_NODE};

    add_all(&t);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.rows[0].key, "node-2");
    assert_float_equal(t.rows[0].gpu_hours, 4, 1e-9);
    assert_string_equal(t.rows[1].key, "node-1");
    assert_float_equal(t.rows[1].gpu_hours, 3.5, 1e-9);
    assert_int_equal(t.rows[1].reports, 2); /* r1 once, though two of its suspects */
    assert_int_equal(t.rows[1].n_top, 2);
    assert_string_equal(t.rows[1].top[0].id, "r1");
    assert_float_equal(t.rows[1].top[0].gpu_hours, 3, 1e-9);
    assert_string_equal(t.rows[1].top[1].id, "r3");
    assert_float_equal(t.gpu_hours, 7.5, 1e-9);
    assert_int_equal(t.reports, 3);

    char buf[2048];
    FILE *out = fmemopen(buf, sizeof(buf), "w");
    cost_print(out, &t, "7d");
    fclose(out);
    assert_non_null(strstr(buf, "NODE"));
    assert_non_null(strstr(buf, "node-2"));
    assert_non_null(strstr(buf, "r1, r3"));
    assert_non_null(strstr(buf, "7.50"));
    struct json_object *o = cost_json(&t), *rows;
    assert_non_null(o);
    assert_string_equal(json_object_get_string(json_object_object_get(o, "by")), "node");
    assert_true(json_object_object_get_ex(o, "rows", &rows));
    assert_int_equal(json_object_array_length(rows), 2);
    json_object_put(o);
    cost_free(&t);
}

static void test_by_cause_and_job(void **state)
{
    (void)state;
    struct cost_table t = {.by = COST_BY_CAUSE};

    add_all(&t);
    assert_int_equal(t.n, 3);
    assert_string_equal(t.rows[0].key, "LINK");
    assert_string_equal(t.rows[1].key, "COMPUTE");
    assert_float_equal(t.rows[1].gpu_hours, 2.5, 1e-9);
    assert_string_equal(t.rows[2].key, "HOST");
    cost_free(&t);
    t.by = COST_BY_JOB; /* the reports' own figure: all their suspects together */
    add_all(&t);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.rows[0].key, "a");
    assert_float_equal(t.rows[0].gpu_hours, 6.8, 1e-9);
    assert_string_equal(t.rows[0].top[0].id, "r2");
    assert_string_equal(t.rows[1].key, "b");
    cost_free(&t);
}

static void test_empty_and_by(void **state)
{
    (void)state;
    struct cost_table t = {.by = COST_BY_NODE};
    enum cost_by by;
    char buf[256];

    FILE *out = fmemopen(buf, sizeof(buf), "w");
    cost_print(out, &t, "24h");
    fclose(out);
    assert_non_null(strstr(buf, "no GPU-hours lost to stragglers since 24h"));
    assert_int_equal(cost_parse_by("cause", &by), 0);
    assert_int_equal(by, COST_BY_CAUSE);
    assert_int_equal(cost_parse_by("rank", &by), -EINVAL);
    assert_int_equal(cost_parse_by(NULL, &by), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_node),
        cmocka_unit_test(test_by_cause_and_job),
        cmocka_unit_test(test_empty_and_by),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
