/* collector/diag/diagnosis: a job fed nothing for job_idle is flushed and its
 * state freed (a collector that sees many jobs end does not grow without
 * bound), its counters stay in the totals, and a job fed again starts anew. */
#include <unistd.h>

#include "tests/unit/store_fixture.h"

#include "collector/diag/diagnosis.h"

#define IDLE (1 * NSEC_PER_SEC)

static struct diagnosis *new_diag(struct fix *f, uint32_t max_jobs)
{
    struct diagnosis_options o = {.job_idle_ns = IDLE, .max_jobs = max_jobs};
    struct diagnosis *d = diagnosis_new(f->s, &o);

    assert_non_null(d);
    return d;
}

static void feed(struct diagnosis *d, const char *job, uint64_t seq, uint64_t first_step)
{
    struct tbatch *t = tbatch_new("node-a", seq, job, 0, 4, first_step, 3, clock_real_ns());

    diagnosis_feed(d, &t->b, clock_real_ns());
    tbatch_free(t);
}

static struct diagnosis_stats stats_at(struct diagnosis *d, uint64_t now)
{
    struct diagnosis_stats s;

    diagnosis_tick(d, now);
    diagnosis_get_stats(d, &s);
    return s;
}

static void test_idle_job_retired(void **state)
{
    struct fix *f = *state;
    struct diagnosis *d = new_diag(f, 0);
    struct diagnosis_stats s;

    feed(d, "job-a", 1, 0);
    feed(d, "job-b", 1, 0);
    s = stats_at(d, clock_real_ns());
    assert_int_equal(s.jobs, 2);
    assert_int_equal(s.jobs_retired, 0);
    assert_int_equal(s.records, 24);

    /* job-b goes on; job-a stays quiet. tb is no later than job-b's feed,
     * and job-a was fed at least 0.7 s before it: at tb + 0.9 s job-a has
     * been quiet longer than job_idle, job-b not. */
    usleep(700 * 1000);
    uint64_t tb = clock_real_ns();
    feed(d, "job-b", 2, 3);
    s = stats_at(d, tb + IDLE * 9 / 10);
    assert_int_equal(s.jobs, 1);
    assert_int_equal(s.jobs_retired, 1);
    s = stats_at(d, clock_real_ns() + IDLE + IDLE / 2);
    assert_int_equal(s.jobs_retired, 2);
    assert_int_equal(s.jobs, 0);
    assert_int_equal(s.records, 36); /* counters never go back */
    assert_true(s.steps_closed >= 6);
    assert_int_equal(s.open_steps, 0);

    /* a job fed again starts a new engine */
    feed(d, "job-a", 2, 3);
    s = stats_at(d, clock_real_ns());
    assert_int_equal(s.jobs, 1);
    assert_int_equal(s.records, 48);
    diagnosis_free(d);
}

static void test_max_jobs_retires_oldest(void **state)
{
    struct fix *f = *state;
    struct diagnosis *d = new_diag(f, 2);
    struct diagnosis_stats s;

    feed(d, "job-a", 1, 0);
    feed(d, "job-b", 1, 0);
    feed(d, "job-c", 1, 0);
    s = stats_at(d, clock_real_ns());
    assert_int_equal(s.jobs, 2);
    assert_int_equal(s.jobs_retired, 1);
    assert_int_equal(s.records, 36);
    diagnosis_free(d);
}

/* Over max_bytes (all jobs' steps) the least recently fed jobs go, counted,
 * never the one fed last; under it nothing goes. */
static void test_max_bytes_retires_least_recent(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {.job_idle_ns = 3600 * NSEC_PER_SEC, .max_bytes = 1};
    struct diagnosis *d = diagnosis_new(f->s, &o);
    struct diagnosis_stats s;

    assert_non_null(d);
    feed(d, "job-a", 1, 0);
    usleep(2000);
    feed(d, "job-b", 1, 0);
    usleep(2000);
    feed(d, "job-c", 1, 0);
    s = stats_at(d, clock_real_ns()); /* measures each job's memory */
    assert_int_equal(s.jobs, 3);
    assert_true(s.open_bytes > 0);
    s = stats_at(d, clock_real_ns()); /* over the bound: a and b go */
    assert_int_equal(s.jobs, 1);
    assert_int_equal(s.jobs_retired, 2);
    assert_int_equal(s.jobs_retired_memory, 2);
    assert_int_equal(s.records, 36);
    s = stats_at(d, clock_real_ns()); /* the last one stays */
    assert_int_equal(s.jobs, 1);
    diagnosis_free(d);

    o.max_bytes = 1ULL << 40; /* far over what three jobs hold */
    d = diagnosis_new(f->s, &o);
    feed(d, "job-a", 1, 0);
    feed(d, "job-b", 1, 0);
    stats_at(d, clock_real_ns());
    s = stats_at(d, clock_real_ns());
    assert_int_equal(s.jobs, 2);
    assert_int_equal(s.jobs_retired_memory, 0);
    diagnosis_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idle_job_retired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_jobs_retires_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_bytes_retires_least_recent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
