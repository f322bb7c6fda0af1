/* argusctl stragglers as a human reads it: by default only what pages (a
 * persisted rank-level fault), with persisted/window and a count of the
 * findings left out; --all shows the findings (a single-step spike) too;
 * --json stays complete (pages flags, persisted, window). Reports are built
 * with the collector's own builders and paging rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_report.h"
#include "common/pbjson.h"
#include "tools/argusctl/stragglers.h"

struct fixture {
    Argus__V1__StragglersResponse resp;
    Argus__V1__Report *reps[2];
};

/* Report 0: rank 2 CPU-starved, persisted 31 of 40 steps (pages). Report 1:
 * a single-step spike on rank 5 (an L1 finding). */
static void build(struct fixture *x)
{
    argus__v1__stragglers_response__init(&x->resp);
    x->reps[0] = diag_report_new("job-a", 1800000000000000000ULL, 1);
    x->reps[1] = diag_report_new("job-a", 1800000001000000000ULL, 2);
    assert_non_null(x->reps[0]);
    assert_non_null(x->reps[1]);
    assert_int_equal(
        diag_report_add(x->reps[0], diag_suspect_new(2, "node-b", -1, "pp=0,tp=0",
                                                     ARGUS__V1__LEVEL__LEVEL_L2_PHASE,
                                                     ARGUS__V1__CAUSE__CAUSE_HOST, "cpu run queue",
                                                     19, 31, 40, "CPU-starved: threads waited")),
        0);
    assert_int_equal(
        diag_report_add(x->reps[1], diag_suspect_new(5, "node-c", -1, "pp=0,tp=0",
                                                     ARGUS__V1__LEVEL__LEVEL_L1_ITERATION,
                                                     ARGUS__V1__CAUSE__CAUSE_HOST, "step time", 3.2,
                                                     1, 40, "steps 77-77 took up to 3,200 ms")),
        0);
    for (int i = 0; i < 2; i++) {
        diag_report_mark_pages(x->reps[i]);
        assert_int_equal(diag_report_summarize(x->reps[i]), 0);
    }
    x->resp.reports = x->reps;
    x->resp.n_reports = 2;
}

static void release(struct fixture *x)
{
    diag_report_free(x->reps[0]);
    diag_report_free(x->reps[1]);
}

static char *print(const Argus__V1__StragglersResponse *resp, bool all, size_t *shown)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    *shown = stragglers_print(f, resp, all, "job-a");
    fclose(f);
    return buf;
}

static void test_pages_flags(void **state)
{
    struct fixture x;

    build(&x);
    assert_true(x.reps[0]->pages);
    assert_true(x.reps[0]->suspects[0]->pages);
    assert_false(x.reps[1]->pages); /* a spike is a finding */
    assert_false(x.reps[1]->suspects[0]->pages);
    assert_non_null(strstr(x.reps[1]->summary, "1 finding (pages nobody)"));
    assert_non_null(strstr(x.reps[0]->summary, "1 suspect: rank 2 host"));
    release(&x);
}

static void test_default_shows_what_pages(void **state)
{
    struct fixture x;
    size_t shown;

    build(&x);
    char *out = print(&x.resp, false, &shown);
    printf("%s", out);
    assert_int_equal(shown, 1);
    assert_non_null(strstr(out, "PAGES   rank 2 "));
    assert_non_null(strstr(out, "persisted 31/40 steps"));
    assert_non_null(strstr(out, "CPU-starved"));
    assert_null(strstr(out, "rank 5"));
    assert_non_null(strstr(out, "1 report with findings that page nobody not shown"));
    free(out);
    release(&x);
}

static void test_all_shows_findings(void **state)
{
    struct fixture x;
    size_t shown;

    build(&x);
    char *out = print(&x.resp, true, &shown);
    printf("%s", out);
    assert_int_equal(shown, 2);
    assert_non_null(strstr(out, "PAGES   rank 2 "));
    assert_non_null(strstr(out, "finding rank 5 "));
    assert_non_null(strstr(out, "persisted 1/40 steps"));
    assert_null(strstr(out, "not shown"));
    free(out);
    release(&x);
}

static void test_nothing_pages(void **state)
{
    struct fixture x;
    size_t shown;

    build(&x);
    x.resp.reports = &x.reps[1];
    x.resp.n_reports = 1;
    char *out = print(&x.resp, false, &shown);
    assert_int_equal(shown, 0);
    assert_non_null(strstr(out, "nothing pages for job job-a"));
    free(out);
    x.resp.n_reports = 0;
    out = print(&x.resp, false, &shown);
    assert_non_null(strstr(out, "no straggler reports for job job-a"));
    free(out);
    release(&x);
}

/* --json prints the response as it is: both reports, pages flags included. */
static void test_json_complete(void **state)
{
    struct fixture x;

    build(&x);
    struct json_object *o = pbjson_from_message(&x.resp.base, NULL, NULL);
    assert_non_null(o);
    const char *s = json_object_to_json_string(o);
    struct json_object *reps, *r0, *r1, *sus, *v;
    assert_true(json_object_object_get_ex(o, "reports", &reps));
    assert_int_equal(json_object_array_length(reps), 2);
    r0 = json_object_array_get_idx(reps, 0);
    r1 = json_object_array_get_idx(reps, 1);
    assert_true(json_object_object_get_ex(r0, "pages", &v) && json_object_get_boolean(v));
    assert_true(json_object_object_get_ex(r1, "pages", &v) && !json_object_get_boolean(v));
    assert_true(json_object_object_get_ex(r1, "suspects", &sus));
    struct json_object *s1 = json_object_array_get_idx(sus, 0);
    assert_true(json_object_object_get_ex(s1, "pages", &v) && !json_object_get_boolean(v));
    assert_true(json_object_object_get_ex(s1, "persisted", &v) && json_object_get_int(v) == 1);
    assert_true(json_object_object_get_ex(s1, "window", &v) && json_object_get_int(v) == 40);
    assert_non_null(s);
    json_object_put(o);
    release(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_flags),        cmocka_unit_test(test_default_shows_what_pages),
        cmocka_unit_test(test_all_shows_findings), cmocka_unit_test(test_nothing_pages),
        cmocka_unit_test(test_json_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
