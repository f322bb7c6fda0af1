/* collector/series/series with collector/diag/diagnosis: a job's closed steps give its
 * step time (median and max over ranks) and the rest of its per-job series,
 * with low-cardinality labels; the text exposition groups each metric under
 * one HELP/TYPE; a retired job's series are gone. */
#include <math.h>

#include "tests/unit/store_fixture.h"

#include "collector/diag/diagnosis.h"
#include "collector/diag/diag_blind.h"
#include "collector/series/series.h"
#include "common/causes.h"
#include "common/http.h"

static struct diagnosis *fed_job(struct fix *f, const char *job, uint64_t *fed_at)
{
    struct diagnosis_options o = {.job_idle_ns = 60 * NSEC_PER_SEC};
    struct diagnosis *d = diagnosis_new(f->s, &o);
    /* 4 ranks, steps 0..5; rank r of step k takes 500 ms + 7 r + k ns */
    struct tbatch *t = tbatch_new("node-a", 1, job, 0, 4, 0, 6, clock_real_ns());

    assert_non_null(d);
    *fed_at = clock_real_ns();
    diagnosis_feed(d, &t->b, *fed_at);
    tbatch_free(t);
    diagnosis_tick(d, *fed_at + 20 * NSEC_PER_SEC); /* past the step timeout: all close */
    return d;
}

static const struct series_sample *find(const struct series_set *s, enum series_metric m,
                                        const char *cause)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].metric == m && (!cause || strcmp(s->v[i].label_values[0], cause) == 0))
            return &s->v[i];
    return NULL;
}

static void test_step_times(void **state)
{
    uint64_t t;
    struct diagnosis *d = fed_job(*state, "job-a", &t);
    struct series_set s = {0};

    /* 3 step series, one per cause, the lag, one per shedding reason (not
     * degraded; nothing shed: no shed counter); no suspect: no top straggler */
    assert_int_equal(series_collect(d, &s), 3 + causes_count() + 1 + DIAG_BLIND_N);
    const struct series_sample *degraded = find(&s, SERIES_DIAG_DEGRADED, NULL);
    assert_non_null(degraded);
    assert_string_equal(degraded->label_names[1], "reason");
    assert_int_equal((int)degraded->value, 0);
    const struct series_sample *last = find(&s, SERIES_LAST_STEP, NULL);
    assert_non_null(last);
    assert_string_equal(last->label_names[0], "job");
    assert_string_equal(last->label_values[0], "job-a");
    assert_int_equal((int)last->value, 5);
    /* step 5: 500 ms + {0, 7, 14, 21} + 5 ns */
    assert_true(fabs(find(&s, SERIES_STEP_P50, NULL)->value - (0.5 + 15.5e-9)) < 1e-12);
    assert_true(fabs(find(&s, SERIES_STEP_MAX, NULL)->value - (0.5 + 26e-9)) < 1e-12);
    const struct series_sample *compute = find(&s, SERIES_SUSPECTS, "compute");
    assert_non_null(compute);
    assert_string_equal(compute->label_names[0], "cause");
    assert_string_equal(compute->label_names[1], "job");
    assert_int_equal((int)compute->value, 0);
    assert_null(find(&s, SERIES_TOP_STRAGGLER, NULL));
    assert_non_null(find(&s, SERIES_DIAGNOSIS_LAG, NULL));
    series_set_clear(&s);

    /* idle past job_idle: retired, its series gone */
    diagnosis_tick(d, t + 120 * NSEC_PER_SEC);
    assert_int_equal(series_collect(d, &s), 0);
    assert_int_equal(s.n, 0);
    series_set_clear(&s);
    diagnosis_free(d);
}

/* Each metric's HELP and TYPE once, its samples right after. */
static void test_text(void **state)
{
    struct series_set s = {0};
    struct http_buf b = {0};

    assert_int_equal(series_add(&s, SERIES_SUSPECTS, "cause", "link", "job", "j\"1", 2), 0);
    assert_int_equal(series_add(&s, SERIES_DIAGNOSIS_LAG, "job", "j2", NULL, NULL, 0.5), 0);
    assert_int_equal(series_add(&s, SERIES_SUSPECTS, "cause", "host", "job", "j2", 1), 0);
    series_write_text(&s, &b);
    assert_false(b.failed);
    const char *want = "# HELP argus_job_suspects ";
    char *p = strstr(b.data, want);
    assert_non_null(p);
    assert_null(strstr(p + 1, want));
    assert_non_null(strstr(b.data, "argus_job_suspects{cause=\"link\",job=\"j\\\"1\"} 2\n"
                                   "argus_job_suspects{cause=\"host\",job=\"j2\"} 1\n"));
    assert_non_null(strstr(b.data, "# TYPE argus_job_diagnosis_lag_seconds gauge\n"
                                   "argus_job_diagnosis_lag_seconds{job=\"j2\"} 0.5\n"));
    free(b.data);
    series_set_clear(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_step_times, setup, teardown),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
