/* argusctl stragglers as a human reads it: by default only what pages (a
 * persisted rank-level fault), with persisted/window and a count of the
 * findings left out; --all shows the findings (a single-step spike) too;
 * --json stays complete (pages flags, persisted, window). Reports are built
 * with the collector's own builders and paging rule. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/diag/diag_report.h"
#include "common/pbjson.h"
#include "tools/argusctl/collector_address.h"
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

/* Report 0 gets a second suspect: rank 9 compute-bound on node-c, paging. */
static void build_mixed(struct fixture *x)
{
    build(x);
    assert_int_equal(
        diag_report_add(x->reps[0], diag_suspect_new(9, "node-c", 3, "pp=0,tp=1",
                                                     ARGUS__V1__LEVEL__LEVEL_L3_KERNEL,
                                                     ARGUS__V1__CAUSE__CAUSE_COMPUTE, "gemm", 8.5,
                                                     30, 40, "gemm 4x slower")),
        0);
    diag_report_mark_pages(x->reps[0]);
}

static void test_filter_view(void **state)
{
    struct fixture x;
    struct stragglers_filter f = {0};
    char err[256];
    Argus__V1__StragglersResponse *v;

    build_mixed(&x);
    assert_int_equal(stragglers_parse_causes("compute", &f, err, sizeof(err)), 0);
    v = stragglers_view(&x.resp, &f);
    assert_non_null(v);
    assert_int_equal(v->n_reports, 1);
    assert_int_equal(v->reports[0]->n_suspects, 1);
    assert_int_equal(v->reports[0]->suspects[0]->rank, 9);
    assert_true(v->reports[0]->pages);
    stragglers_view_free(v);

    f = (struct stragglers_filter){.node = "node-c"}; /* report 0's rank 9, report 1's rank 5 */
    v = stragglers_view(&x.resp, &f);
    assert_int_equal(v->n_reports, 2);
    assert_int_equal(v->reports[0]->n_suspects, 1);
    assert_int_equal(v->reports[1]->n_suspects, 1);
    assert_false(v->reports[1]->pages); /* the spike alone still pages nobody */
    stragglers_view_free(v);

    assert_int_equal(stragglers_parse_causes("host", &f, err, sizeof(err)), 0);
    f.node = "node-b"; /* host AND node-b: report 0's rank 2 only */
    v = stragglers_view(&x.resp, &f);
    assert_int_equal(v->n_reports, 1);
    assert_int_equal(v->reports[0]->suspects[0]->rank, 2);
    stragglers_view_free(v);

    f.node = "node-z";
    v = stragglers_view(&x.resp, &f);
    assert_int_equal(v->n_reports, 0);
    stragglers_view_free(v);

    f = (struct stragglers_filter){0};
    assert_true(stragglers_filter_empty(&f));
    v = stragglers_view(&x.resp, &f);
    assert_int_equal(v->n_reports, 2);
    assert_int_equal(v->reports[0]->n_suspects, 2);
    stragglers_view_free(v);
    assert_int_equal(x.reps[0]->n_suspects, 2); /* the response itself is untouched */
    release(&x);
}

static void test_parse_causes(void **state)
{
    struct stragglers_filter f;
    char err[256];

    assert_int_equal(stragglers_parse_causes("host,LINK", &f, err, sizeof(err)), 0);
    assert_int_equal(f.causes,
                     (1u << ARGUS__V1__CAUSE__CAUSE_HOST) | (1u << ARGUS__V1__CAUSE__CAUSE_LINK));
    assert_int_equal(stragglers_parse_causes("CAUSE_SILENT,data_skew", &f, err, sizeof(err)), 0);
    assert_int_equal(f.causes, (1u << ARGUS__V1__CAUSE__CAUSE_SILENT) |
                                   (1u << ARGUS__V1__CAUSE__CAUSE_DATA_SKEW));
    /* a prefixed name other than SILENT (the prefix's length) is one name too */
    assert_int_equal(
        stragglers_parse_causes("CAUSE_HOST,cause_job_regression", &f, err, sizeof(err)), 0);
    assert_int_equal(f.causes, (1u << ARGUS__V1__CAUSE__CAUSE_HOST) |
                                   (1u << ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION));
    assert_int_equal(stragglers_parse_causes("", &f, err, sizeof(err)), 0);
    assert_int_equal(f.causes, 0);
    assert_int_equal(stragglers_parse_causes("CAUSE_gpu", &f, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unknown cause 'gpu'"));
    assert_int_equal(stragglers_parse_causes("host,slow", &f, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unknown cause 'slow'"));
    assert_non_null(strstr(err, "JOB_REGRESSION"));
}

static void test_parse_since(void **state)
{
    const uint64_t now = 1800000000ULL * 1000000000ULL;
    struct tm tm = {.tm_year = 2026 - 1900, .tm_mon = 11, .tm_mday = 3, .tm_hour = 12};
    uint64_t noon = (uint64_t)timegm(&tm) * 1000000000ULL, t;

    assert_int_equal(stragglers_parse_since("10m", now, &t), 0);
    assert_true(t == now - 600ULL * 1000000000ULL);
    assert_int_equal(stragglers_parse_since("2026-12-03T12:00:00Z", now, &t), 0);
    assert_true(t == noon);
    assert_int_equal(stragglers_parse_since("2026-12-03T13:00:00.25+01:00", now, &t), 0);
    assert_true(t == noon + 250000000ULL);
    assert_int_equal(stragglers_parse_since("2026-12-03T10:30:00-01:30", now, &t), 0);
    assert_true(t == noon);
    assert_int_equal(stragglers_parse_since("yesterday", now, &t), -EINVAL);
    assert_int_equal(stragglers_parse_since("2026-12-03T12:00:00", now, &t), -EINVAL); /* zone */
    assert_int_equal(stragglers_parse_since("2026-12-03T12:00:00+25:00", now, &t), -EINVAL);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* --collector, then ARGUSCTL_COLLECTOR, then the user's file, then the
 * system's, then the default (marked as a fallback). */
static void test_collector_address(void **state)
{
    char dir[] = "/tmp/argus-test-ctl-XXXXXX", user[128], sys[128], err[512];
    struct collector_address a;

    assert_non_null(mkdtemp(dir));
    snprintf(user, sizeof(user), "%s/user.conf", dir);
    snprintf(sys, sizeof(sys), "%s/system.conf", dir);
    write_text(user, "# mine\ncollector = 10.0.0.1:7700\n");
    write_text(sys, "collector = \"10.0.0.2:7700\"\n");

    assert_int_equal(
        collector_address_resolve("10.0.0.9:1", "10.0.0.8:1", user, sys, &a, err, sizeof(err)), 0);
    assert_string_equal(a.address, "10.0.0.9:1");
    assert_string_equal(a.source, "--collector");
    assert_int_equal(collector_address_resolve("", "10.0.0.8:1", user, sys, &a, err, sizeof(err)),
                     0);
    assert_string_equal(a.source, "ARGUSCTL_COLLECTOR");
    assert_int_equal(collector_address_resolve(NULL, NULL, user, sys, &a, err, sizeof(err)), 0);
    assert_string_equal(a.address, "10.0.0.1:7700");
    assert_string_equal(a.source, user);
    assert_int_equal(collector_address_resolve(NULL, "", "/nonexistent", sys, &a, err, sizeof(err)),
                     0);
    assert_string_equal(a.address, "10.0.0.2:7700");
    assert_false(a.fallback);
    assert_int_equal(
        collector_address_resolve(NULL, NULL, "/nonexistent", NULL, &a, err, sizeof(err)), 0);
    assert_string_equal(a.address, "127.0.0.1:7700");
    assert_true(a.fallback);
    assert_non_null(strstr(collector_address_hint(), "--collector"));
    assert_non_null(strstr(collector_address_hint(), "ARGUSCTL_COLLECTOR"));
    assert_non_null(strstr(collector_address_hint(), "/etc/argus/argusctl.conf"));

    assert_int_equal(collector_address_resolve(NULL, "nope", user, sys, &a, err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, "ARGUSCTL_COLLECTOR: collector: 'nope' is not an address"));
    write_text(user, "collector = 10.0.0.1:7700\njson = true\n");
    assert_int_equal(collector_address_resolve(NULL, NULL, user, sys, &a, err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, ":2: unknown key 'json'"));
    write_text(user, "collector = bad\n");
    assert_int_equal(collector_address_resolve(NULL, NULL, user, sys, &a, err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, "user.conf:1: collector: 'bad' is not an address"));
    unlink(user);
    unlink(sys);
    rmdir(dir);
}

/* 64-bit integers: numbers while jq holds them exactly, strings past 2^53. */
static void test_json_big_integers(void **state)
{
    struct fixture x;
    struct json_object *o, *v;
    Argus__V1__JobInfo j = ARGUS__V1__JOB_INFO__INIT;

    build(&x);
    o = pbjson_from_message(&x.reps[0]->base, NULL, NULL);
    assert_true(json_object_object_get_ex(o, "created_unix_ns", &v));
    assert_true(json_object_is_type(v, json_type_string));
    assert_string_equal(json_object_get_string(v), "1800000000000000000");
    json_object_put(o);
    j.job = "j";
    j.last_step = 1ULL << 53;
    j.rank_steps = (1ULL << 53) + 1;
    o = pbjson_from_message(&j.base, NULL, NULL);
    assert_true(json_object_object_get_ex(o, "last_step", &v));
    assert_true(json_object_is_type(v, json_type_int));
    assert_true(json_object_get_uint64(v) == 1ULL << 53);
    assert_true(json_object_object_get_ex(o, "rank_steps", &v));
    assert_string_equal(json_object_get_string(v), "9007199254740993");
    json_object_put(o);
    release(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_flags),        cmocka_unit_test(test_default_shows_what_pages),
        cmocka_unit_test(test_all_shows_findings), cmocka_unit_test(test_nothing_pages),
        cmocka_unit_test(test_json_complete),      cmocka_unit_test(test_filter_view),
        cmocka_unit_test(test_parse_causes),       cmocka_unit_test(test_parse_since),
        cmocka_unit_test(test_collector_address),  cmocka_unit_test(test_json_big_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
