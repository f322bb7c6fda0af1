/* collector/diag/diagnosis: rank statuses through the adapter. A rank killed
 * is one EXITED report after the grace, the job FAILED in its JobInfo, and
 * the others' findings after it are dropped; a higher attempt is a new epoch
 * (RESTARTING); a hang is HUNG with one HANG report; every rank ending
 * cleanly is ENDED with no report. */
#include "tests/unit/store_fixture.h"

#include "collector/diag/diagnosis.h"

#define COMM 0x1234ULL

struct sts {
    Argus__V1__RankStatus st[8], *sp[8];
    Argus__V1__CommProgress c[8], *cp[8];
};

/* Job's ranks 0..n-1 stored and fed (3 steps), so JobInfo exists. */
static struct tbatch *start_job(struct fix *f, struct diagnosis *d, const char *job, uint32_t n,
                                uint64_t now)
{
    struct tbatch *t = tbatch_new("node-a", 1, job, 0, n, 0, 3, now - 10 * NSEC_PER_SEC);
    char err[256];

    assert_true(store_ingest(f->s, &t->b, err, sizeof(err)) >= 0);
    diagnosis_feed(d, &t->b, now);
    return t;
}

/* A batch of t's job carrying only the statuses ss[0..n). */
static void feed_statuses(struct diagnosis *d, struct tbatch *t, struct sts *ss, size_t n,
                          uint64_t seq, uint64_t recv)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;

    b.agent_id = "node-a";
    b.epoch = 7;
    b.seq = seq;
    for (size_t i = 0; i < n; i++)
        ss->sp[i] = &ss->st[i];
    b.n_statuses = n;
    b.statuses = ss->sp;
    (void)t;
    diagnosis_feed(d, &b, recv);
}

static void exit_status(struct sts *ss, int i, const char *job, uint32_t rank, uint64_t at,
                        int code, int sig)
{
    Argus__V1__RankStatus *s = &ss->st[i];

    argus__v1__rank_status__init(s);
    s->job = (char *)job;
    s->rank = rank;
    s->at_unix_ns = at;
    s->exited = true;
    s->exit_unix_ns = at;
    s->exit_code = code;
    s->exit_signal = sig;
    s->state = ARGUS__V1__PROC_STATE__PROC_STATE_EXITED;
}

static void wait_status(struct sts *ss, int i, const char *job, uint32_t rank, uint64_t at,
                        uint64_t entered_ns, uint64_t seq, uint64_t done)
{
    Argus__V1__RankStatus *s = &ss->st[i];

    argus__v1__rank_status__init(s);
    argus__v1__comm_progress__init(&ss->c[i]);
    s->job = (char *)job;
    s->rank = rank;
    s->at_unix_ns = at;
    s->state = ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING;
    ss->c[i].comm_id = COMM;
    ss->c[i].entered_seq = seq;
    ss->c[i].entered_unix_ns = entered_ns;
    ss->c[i].done_seq = done;
    ss->c[i].done_unix_ns = done >= seq ? entered_ns + 1000 : entered_ns - 1000;
    ss->cp[i] = &ss->c[i];
    s->n_comms = 1;
    s->comms = &ss->cp[i];
}

static int report_causes(struct store *s, const char *job, int cause)
{
    struct got g = {0};
    int n = 0;

    assert_int_equal(store_scan_reports(s, job, 0, 0, collect, &g), 0);
    for (size_t i = 0; i < g.n; i++) {
        Argus__V1__Report *r = argus__v1__report__unpack(NULL, g.len[i], g.bytes[i]);
        assert_non_null(r);
        for (size_t k = 0; k < r->n_suspects; k++)
            n += r->suspects[k]->cause == (Argus__V1__Cause)cause;
        argus__v1__report__free_unpacked(r, NULL);
    }
    got_free(&g);
    return n;
}

static void expect_state(struct store *s, const char *job, int state, const char *reason,
                         uint32_t restart)
{
    Argus__V1__JobInfo *ji = job_info(s, job);

    assert_non_null(ji);
    if ((int)ji->state != state)
        fail_msg("job %s state %d (%s), want %d", job, ji->state, ji->state_reason, state);
    if (reason && !strstr(ji->state_reason, reason))
        fail_msg("reason '%s' lacks '%s'", ji->state_reason, reason);
    assert_int_equal(ji->restart, restart);
    argus__v1__job_info__free_unpacked(ji, NULL);
}

static void test_killed_failed_then_restarted(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {0};
    struct diagnosis *d = diagnosis_new(f->s, &o);
    uint64_t now = clock_real_ns();
    struct tbatch *t = start_job(f, d, "dj", 4, now);
    struct diagnosis_stats st;
    struct sts ss;

    diagnosis_tick(d, now);
    expect_state(f->s, "dj", ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING, NULL, 0);
    exit_status(&ss, 0, "dj", 2, now, -1, 9);
    feed_statuses(d, t, &ss, 1, 2, now);
    diagnosis_tick(d, now + NSEC_PER_SEC); /* within the grace */
    expect_state(f->s, "dj", ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING, NULL, 0);
    exit_status(&ss, 0, "dj", 0, now + NSEC_PER_SEC, 1, 0);
    exit_status(&ss, 1, "dj", 1, now + NSEC_PER_SEC, 1, 0);
    exit_status(&ss, 2, "dj", 3, now + NSEC_PER_SEC, 1, 0);
    feed_statuses(d, t, &ss, 3, 3, now + NSEC_PER_SEC);
    diagnosis_tick(d, now + 3 * NSEC_PER_SEC);
    expect_state(f->s, "dj", ARGUS__V1__JOB_STATE__JOB_STATE_FAILED, "rank 2 killed by SIGKILL", 0);
    assert_int_equal(report_causes(f->s, "dj", ARGUS__V1__CAUSE__CAUSE_EXITED), 1);
    diagnosis_tick(d, now + 40 * NSEC_PER_SEC); /* silence of the survivors: not reported */
    assert_int_equal(report_causes(f->s, "dj", ARGUS__V1__CAUSE__CAUSE_SILENT), 0);
    diagnosis_get_stats(d, &st);
    assert_int_equal(st.deaths, 1);
    assert_int_equal(st.statuses, 4);
    /* torchelastic starts attempt 1 */
    t->res[0].restart = 1;
    t->b.seq = 9;
    t->b.n_steps = 0;
    diagnosis_feed(d, &t->b, now + 41 * NSEC_PER_SEC);
    diagnosis_tick(d, now + 41 * NSEC_PER_SEC);
    expect_state(f->s, "dj", ARGUS__V1__JOB_STATE__JOB_STATE_RESTARTING, "new attempt", 1);
    diagnosis_get_stats(d, &st);
    assert_int_equal(st.deaths, 1); /* the counters go on over epochs */
    assert_int_equal(st.jobs_by_state[ARGUS__V1__JOB_STATE__JOB_STATE_RESTARTING], 1);
    tbatch_free(t);
    diagnosis_free(d);
}

/* torchrun restarts faster than the grace: attempt 1's ranks arrive a
 * second after rank 1 exited with code 3, before the others' exits came.
 * The death that made the restart is reported all the same. */
static void test_restart_within_the_grace(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {0};
    struct diagnosis *d = diagnosis_new(f->s, &o);
    uint64_t now = clock_real_ns();
    struct tbatch *t = start_job(f, d, "qj", 4, now);
    struct sts ss;

    diagnosis_tick(d, now);
    exit_status(&ss, 0, "qj", 1, now, 3, 0);
    feed_statuses(d, t, &ss, 1, 2, now);
    diagnosis_tick(d, now + NSEC_PER_SEC / 2);
    assert_int_equal(report_causes(f->s, "qj", ARGUS__V1__CAUSE__CAUSE_EXITED), 0);
    t->res[0].restart = 1;
    t->b.seq = 9;
    t->b.n_steps = 0;
    diagnosis_feed(d, &t->b, now + NSEC_PER_SEC);
    diagnosis_tick(d, now + NSEC_PER_SEC);
    assert_int_equal(report_causes(f->s, "qj", ARGUS__V1__CAUSE__CAUSE_EXITED), 1);
    expect_state(f->s, "qj", ARGUS__V1__JOB_STATE__JOB_STATE_RESTARTING, NULL, 1);
    tbatch_free(t);
    diagnosis_free(d);
}

static void test_hang_and_clean_end(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {.hang_after_ns = 20 * NSEC_PER_SEC};
    struct diagnosis *d = diagnosis_new(f->s, &o);
    uint64_t now = clock_real_ns();
    struct tbatch *t = start_job(f, d, "hj", 4, now);
    struct sts ss;

    for (uint32_t r = 0; r < 4; r++)
        wait_status(&ss, (int)r, "hj", r, now, now - 5 * NSEC_PER_SEC, r == 1 ? 6 : 7, 6);
    feed_statuses(d, t, &ss, 4, 2, now);
    diagnosis_tick(d, now + 10 * NSEC_PER_SEC);
    expect_state(f->s, "hj", ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING, NULL, 0);
    diagnosis_tick(d, now + 16 * NSEC_PER_SEC); /* 5 s + 16 s > 20 s */
    expect_state(f->s, "hj", ARGUS__V1__JOB_STATE__JOB_STATE_HUNG, "rank 1 never entered it", 0);
    assert_int_equal(report_causes(f->s, "hj", ARGUS__V1__CAUSE__CAUSE_HANG), 1);
    diagnosis_tick(d, now + 30 * NSEC_PER_SEC);
    assert_int_equal(report_causes(f->s, "hj", ARGUS__V1__CAUSE__CAUSE_HANG), 1);
    for (uint32_t r = 0; r < 4; r++)
        exit_status(&ss, (int)r, "hj", r, now + 31 * NSEC_PER_SEC, 0, 0);
    feed_statuses(d, t, &ss, 4, 3, now + 31 * NSEC_PER_SEC);
    diagnosis_tick(d, now + 31 * NSEC_PER_SEC);
    expect_state(f->s, "hj", ARGUS__V1__JOB_STATE__JOB_STATE_ENDED, "cleanly", 0);
    assert_int_equal(report_causes(f->s, "hj", ARGUS__V1__CAUSE__CAUSE_EXITED), 0);
    tbatch_free(t);
    diagnosis_free(d);
}

/* Ranks 0, 1 and 3 wait in a collective for rank 2 (stopped) for 40 s and
 * their agent says so every 5 s (of rank 2 too); rank 2 resumes and its
 * records come first.
 * The waiters did not stop reporting: none of them is SILENT. */
static void test_stalled_ranks_not_silent(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {.hang_after_ns = 300 * NSEC_PER_SEC};
    struct diagnosis *d = diagnosis_new(f->s, &o);
    uint64_t now = clock_real_ns();
    struct tbatch *t = start_job(f, d, "sj", 4, now), *late;
    struct sts ss;

    for (uint64_t s = 5; s <= 40; s += 5) {
        for (uint32_t r = 0; r < 4; r++) {
            wait_status(&ss, (int)r, "sj", r, now + s * NSEC_PER_SEC, now, r == 2 ? 6 : 7, 6);
            ss.st[r].has_step = true;
            ss.st[r].last_step = 2;
        }
        ss.st[2].state = ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED;
        feed_statuses(d, t, &ss, 4, 1 + s, now + s * NSEC_PER_SEC);
        diagnosis_tick(d, now + s * NSEC_PER_SEC);
    }
    late = tbatch_new("node-a", 100, "sj", 2, 1, 3, 1, now);
    diagnosis_feed(d, &late->b, now + 41 * NSEC_PER_SEC);
    diagnosis_tick(d, now + 45 * NSEC_PER_SEC);
    assert_int_equal(report_causes(f->s, "sj", ARGUS__V1__CAUSE__CAUSE_SILENT), 0);
    tbatch_free(late);
    tbatch_free(t);
    diagnosis_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_killed_failed_then_restarted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_within_the_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang_and_clean_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_ranks_not_silent, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
