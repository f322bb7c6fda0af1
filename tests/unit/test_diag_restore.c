/* collector/diag/diag_restore: a job the store saw lately comes back with
 * its ranks' placement (the latest attempt's Resources) and its reports'
 * suspects; an old or unknown job does not. And through diagnosis: a
 * restarted collector (diagnosis_restore) takes the running job back at
 * start, with its top straggler in the per-job series before any batch. */
#include "tests/unit/store_fixture.h"

#include "collector/diag/diag_restore.h"
#include "collector/diag/diagnosis.h"

#define IDLE (60 * NSEC_PER_SEC)

/* A report of job naming rank as a paging compute suspect on node. */
static void put_suspect_report(struct store *s, const char *id, const char *job, uint32_t rank,
                               const char *node, double score, uint64_t to_step)
{
    Argus__V1__Report r = ARGUS__V1__REPORT__INIT;
    Argus__V1__Suspect sus = ARGUS__V1__SUSPECT__INIT, *ptr = &sus;
    char err[256];

    sus.rank = rank;
    sus.node = (char *)node;
    sus.gpu = 3;
    sus.cause = ARGUS__V1__CAUSE__CAUSE_COMPUTE;
    sus.pages = true;
    sus.score = score;
    sus.slowdown = 1.0 + score / 10; /* the series rank by slowdown */
    r.id = (char *)id;
    r.job = (char *)job;
    r.created_unix_ns = clock_real_ns();
    r.to_step = to_step;
    r.summary = "test";
    r.suspects = &ptr;
    r.n_suspects = 1;
    r.pages = true;
    assert_int_equal(store_put_report(s, &r, err, sizeof(err)), 0);
}

/* ranks of job on node, attempt restart, received now. */
static void put_ranks(struct store *s, uint64_t seq, const char *job, uint32_t ranks,
                      const char *node, uint32_t restart)
{
    struct tbatch *t = tbatch_new("agent-a", seq, job, 0, ranks, 0, 1, clock_real_ns());
    char err[256];

    for (uint32_t r = 0; r < ranks; r++) {
        t->res[r].node = (char *)node;
        t->res[r].gpu = (int32_t)r;
        t->res[r].restart = restart;
    }
    assert_true(store_ingest(s, &t->b, err, sizeof(err)) >= 0);
    tbatch_free(t);
}

static struct diag_engine *engine_of(const char *job)
{
    struct diag_options o = {.job = job};
    struct diag_engine *e = diag_engine_new(&o);

    assert_non_null(e);
    return e;
}

static void test_running_job_comes_back(void **state)
{
    struct fix *f = *state;
    struct diag_engine *e = engine_of("run");
    struct recent_suspects recent = {0};
    struct diag_restored got;
    struct diag_silence_where w = {0};

    put_ranks(f->s, 1, "run", 4, "nodeB", 0);
    put_suspect_report(f->s, "r1", "run", 2, "nodeB", 3.5, 40);
    assert_int_equal(diag_restore_job(f->s, "run", clock_real_ns(), IDLE, e, &recent, &got), 0);
    assert_int_equal(got.ranks, 4);
    assert_int_equal(got.restart, 0);
    assert_int_equal(got.reports, 1);
    diag_engine_where(e, 2, &w);
    assert_non_null(w.node);
    assert_string_equal(w.node, "nodeB");
    assert_int_equal(w.gpu, 2);
    assert_int_equal(recent.n, 1);
    assert_int_equal(recent.v[0].rank, 2);
    diag_engine_free(e);
}

/* Only the latest attempt's ranks: a torchelastic restart moved the job. */
static void test_latest_attempt_only(void **state)
{
    struct fix *f = *state;
    struct diag_engine *e = engine_of("moved");
    struct recent_suspects recent = {0};
    struct diag_restored got;
    struct diag_silence_where w = {0};

    put_ranks(f->s, 1, "moved", 4, "nodeA", 0);
    put_ranks(f->s, 2, "moved", 2, "nodeC", 1);
    assert_int_equal(diag_restore_job(f->s, "moved", clock_real_ns(), IDLE, e, &recent, &got), 0);
    assert_int_equal(got.restart, 1);
    assert_int_equal(got.ranks, 2);
    diag_engine_where(e, 1, &w);
    assert_string_equal(w.node, "nodeC");
    diag_engine_free(e);
}

/* A job the store last saw longer ago than idle, or never: nothing. */
static void test_old_or_unknown_job_starts_clean(void **state)
{
    struct fix *f = *state;
    struct diag_engine *e = engine_of("old");
    struct recent_suspects recent = {0};
    struct diag_restored got;
    struct diag_silence_where w = {0};

    put_ranks(f->s, 1, "old", 4, "nodeB", 0);
    put_suspect_report(f->s, "r1", "old", 2, "nodeB", 3.5, 40);
    assert_int_equal(
        diag_restore_job(f->s, "old", clock_real_ns() + 2 * IDLE, IDLE, e, &recent, &got), 0);
    assert_int_equal(got.ranks + got.reports + got.restart, 0);
    assert_int_equal(recent.n, 0);
    diag_engine_where(e, 2, &w);
    assert_true(!w.node || !*w.node);
    assert_int_equal(diag_restore_job(f->s, "nope", clock_real_ns(), IDLE, e, &recent, &got), 0);
    assert_int_equal(got.ranks + got.reports, 0);
    diag_engine_free(e);
}

struct seen {
    int jobs;
    bool has_top;
    uint32_t top_rank;
};

static void on_series(void *ctx, const char *job, const struct diagnosis_job_series *s)
{
    struct seen *x = ctx;

    x->jobs++;
    if (strcmp(job, "run") == 0) {
        x->has_top = s->has_top;
        x->top_rank = s->top_rank;
    }
}

/* A restarted collector: the running job is back at start, its straggler
 * the top of its series before any batch; the old one is not. */
static void test_diagnosis_takes_running_jobs_back(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {.job_idle_ns = IDLE};
    struct diagnosis *d;
    struct diagnosis_stats st;
    struct seen x = {0};

    put_ranks(f->s, 1, "run", 4, "nodeB", 0);
    put_suspect_report(f->s, "r1", "run", 3, "nodeB", 4.0, 40);
    d = diagnosis_new(f->s, &o);
    assert_non_null(d);
    assert_int_equal(diagnosis_restore(d), 0);
    diagnosis_tick(d, clock_real_ns());
    diagnosis_get_stats(d, &st);
    assert_int_equal(st.jobs, 1);
    diagnosis_foreach_series(d, on_series, &x);
    assert_int_equal(x.jobs, 1);
    assert_true(x.has_top);
    assert_int_equal(x.top_rank, 3);
    /* nothing fed for job_idle: retired as any idle job */
    diagnosis_tick(d, clock_real_ns() + 2 * IDLE);
    diagnosis_get_stats(d, &st);
    assert_int_equal(st.jobs, 0);
    diagnosis_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_running_job_comes_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latest_attempt_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_or_unknown_job_starts_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diagnosis_takes_running_jobs_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
