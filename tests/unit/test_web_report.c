/* collector/web/: the report page and the job's report pages over a real
 * store: /report/ID renders any stored report (however old: past the job
 * page's newest 50), naming its job and linking back; an unknown id is a
 * 404 saying so; /reports/PAGE/JOB pages back through all of a job's
 * reports, 50 a page, with links both ways; the job page links each
 * report to its own page and to the older ones. */
#include "tests/unit/store_fixture.h"

#include "collector/web/web.h"
#include "common/http.h"

/* GET path: its status and body (a C string, the caller frees). */
static int get(struct store *s, const char *path, char **body)
{
    struct http_response r = {0};

    assert_true(web_handle(s, path, &r));
    *body = strndup(r.body ? r.body : "", r.len);
    free((void *)r.body);
    return r.status;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* job "web/job" (a '/' in its id) with 120 reports r000..r119, oldest first */
static void put_job(struct fix *f)
{
    struct tbatch *t = tbatch_new("node-a", 1, "web/job", 0, 2, 0, 4, T0);
    char err[256], id[16];

    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), 0);
    tbatch_free(t);
    for (int i = 0; i < 120; i++) {
        snprintf(id, sizeof(id), "r%03d", i);
        put_report(f->s, id, "web/job", T0 + (uint64_t)i * NSEC_PER_SEC);
    }
}

static void test_report_page(void **state)
{
    struct fix *f = *state;
    char *body;

    put_job(f);
    /* r003: far past the job page's newest 50 */
    assert_int_equal(get(f->s, "/report/r003", &body), 200);
    assert_non_null(strstr(body, "r003"));
    assert_non_null(strstr(body, "rank 3 is slow"));
    assert_non_null(strstr(body, "href=\"/job/web%2Fjob\""));
    free(body);
    assert_int_equal(get(f->s, "/report/nope", &body), 404);
    assert_non_null(strstr(body, "No report with the id nope"));
    free(body);
}

static void test_pages_of_reports(void **state)
{
    struct fix *f = *state;
    char *body;

    put_job(f);
    assert_int_equal(get(f->s, "/job/web/job", &body), 200);
    assert_int_equal(count(body, "class=\"report\""), 50);
    assert_non_null(strstr(body, "href=\"/report/r119\"")); /* the newest, linked */
    assert_null(strstr(body, "href=\"/report/r069\""));     /* on page 1 */
    assert_non_null(strstr(body, "href=\"/reports/1/web%2Fjob\">older reports"));
    free(body);
    assert_int_equal(get(f->s, "/reports/1/web/job", &body), 200);
    assert_int_equal(count(body, "class=\"report\""), 50);
    assert_non_null(strstr(body, "r069"));
    assert_non_null(strstr(body, "r020"));
    assert_null(strstr(body, "r019"));
    assert_non_null(strstr(body, "href=\"/job/web%2Fjob\">newer reports"));
    assert_non_null(strstr(body, "href=\"/reports/2/web%2Fjob\">older reports"));
    free(body);
    assert_int_equal(get(f->s, "/reports/2/web/job", &body), 200);
    assert_int_equal(count(body, "class=\"report\""), 20);
    assert_non_null(strstr(body, "r000"));
    assert_non_null(strstr(body, "href=\"/reports/1/web%2Fjob\">newer reports"));
    assert_null(strstr(body, "older reports"));
    free(body);
    assert_int_equal(get(f->s, "/reports/9/web/job", &body), 200); /* past the end: none */
    assert_int_equal(count(body, "class=\"report\""), 0);
    free(body);
    assert_int_equal(get(f->s, "/reports/x/web/job", &body), 404);
    free(body);
    assert_int_equal(get(f->s, "/reports/1/no-such-job", &body), 404);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pages_of_reports, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
