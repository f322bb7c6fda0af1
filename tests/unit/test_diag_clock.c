/* collector/diag/diagnosis behind collector/diag/diagq: a job's diagnosis ticks at the
 * receive time of what it was fed (diagq_job_clock), not at the wall clock
 * less the lag of its last feed. Here job X's last record for step 10 waits
 * in the queue behind a slow batch of another job (the feed is held shut by
 * a gate) while a minute of wall clock passes: the step must not close by
 * timeout or watermark without it, and once it is fed the step closes
 * complete, nothing late. Without the clock the step timed out with half its
 * ranks and the held record came late. */
#include <pthread.h>

#include "tests/unit/store_fixture.h"

#include "collector/diag/diagnosis.h"
#include "collector/diag/diagq.h"

/* The diagnosis feed behind a gate, counting the batches that entered it. */
struct gated {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
    size_t entered, released;
    struct diagnosis *d;
};

static void gated_feed(void *ctx, const Argus__V1__Batch *b, uint64_t recv)
{
    struct gated *g = ctx;

    pthread_mutex_lock(&g->lock);
    g->entered++;
    pthread_cond_broadcast(&g->cond);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
    diagnosis_feed(g->d, b, recv);
}

static struct gated *gate_of; /* the release callback has only the batch */

static void release(void *owner)
{
    tbatch_free(owner);
    pthread_mutex_lock(&gate_of->lock);
    gate_of->released++;
    pthread_cond_broadcast(&gate_of->cond);
    pthread_mutex_unlock(&gate_of->lock);
}

static void set_gate(struct gated *g, bool open)
{
    pthread_mutex_lock(&g->lock);
    g->open = open;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* Wait (generously: a loaded machine) until *count reaches want. */
static void wait_count(struct gated *g, const size_t *count, size_t want)
{
    pthread_mutex_lock(&g->lock);
    uint64_t deadline = clock_mono_ns() + 60 * NSEC_PER_SEC;
    while (*count < want && clock_mono_ns() < deadline) {
        pthread_mutex_unlock(&g->lock);
        clock_sleep_ns(5 * NSEC_PER_MSEC);
        pthread_mutex_lock(&g->lock);
    }
    size_t got = *count;
    pthread_mutex_unlock(&g->lock);
    assert_int_equal(got, want);
}

/* One step of ranks [first, first + n) of job through agent, received at recv. */
static void push(struct diagq *q, const char *agent, uint64_t seq, const char *job, uint32_t first,
                 uint32_t n, uint64_t step, uint64_t recv)
{
    struct tbatch *t = tbatch_new(agent, seq, job, first, n, step, 1, recv);

    assert_int_equal(diagq_push(q, &t->b, recv, 4096, release, t), 0);
}

static uint64_t clock_of_queue(void *ctx, const char *job, uint64_t now)
{
    return diagq_job_clock(ctx, job, now);
}

static struct diagnosis_stats tick_stats(struct diagnosis *d, uint64_t now)
{
    struct diagnosis_stats s;

    diagnosis_tick(d, now);
    diagnosis_get_stats(d, &s);
    return s;
}

static void test_queue_time_is_not_diagnosis_time(void **state)
{
    struct fix *f = *state;
    struct diagnosis_options o = {.step_timeout_ns = 10 * NSEC_PER_SEC,
                                  .stream_hold_ns = 10 * NSEC_PER_SEC,
                                  .silence_ns = 30 * NSEC_PER_SEC};
    struct gated g = {.open = true};
    struct diagq_options qo = {.max_bytes = 1 << 20};
    struct diagnosis_stats s;
    uint64_t wall = clock_real_ns(), t0 = wall - 300 * NSEC_PER_SEC;

    pthread_mutex_init(&g.lock, NULL);
    pthread_cond_init(&g.cond, NULL);
    gate_of = &g;
    g.d = diagnosis_new(f->s, &o);
    assert_non_null(g.d);
    struct diagq *q = diagq_new(&qo, gated_feed, &g);
    assert_non_null(q);
    diagnosis_set_clock(g.d, clock_of_queue, q);

    /* steps 0-9 of ranks 0-7 (agent a) and 8-16 (agent b), a second apart;
     * step 10 of agent a: all fed */
    for (uint64_t k = 0; k < 10; k++) {
        push(q, "a", k + 1, "x", 0, 8, k, t0 + k * NSEC_PER_SEC);
        push(q, "b", k + 1, "x", 8, 9, k, t0 + k * NSEC_PER_SEC);
    }
    push(q, "a", 11, "x", 0, 8, 10, t0 + 10 * NSEC_PER_SEC);
    wait_count(&g, &g.released, 21);
    s = tick_stats(g.d, t0 + 10 * NSEC_PER_SEC + NSEC_PER_SEC / 5);
    assert_int_equal(s.open_steps, 1);
    assert_int_equal(s.steps_closed, 10);

    /* diagnosis busy with another job's batch; agent b's step 10 waits
     * behind it while a minute of wall clock goes by */
    set_gate(&g, false);
    push(q, "c", 1, "y", 0, 4, 0, t0 + 10 * NSEC_PER_SEC);
    wait_count(&g, &g.entered, 22);
    push(q, "b", 11, "x", 8, 9, 10, t0 + 10 * NSEC_PER_SEC + NSEC_PER_SEC / 2);
    assert_int_equal(diagq_job_clock(q, "x", wall + 60 * NSEC_PER_SEC),
                     t0 + 10 * NSEC_PER_SEC + NSEC_PER_SEC / 2);
    assert_int_equal(diagq_job_clock(q, "nobody", 12345), 12345);
    s = tick_stats(g.d, wall + 60 * NSEC_PER_SEC);
    assert_int_equal(s.open_steps, 1); /* step 10 waits for agent b */
    assert_int_equal(s.closed_by[2], 0);
    assert_int_equal(s.closed_by[1], 0);
    assert_int_equal(s.silent_nodes + s.silent_ranks, 0);

    /* fed: step 10 closes complete, nothing came late */
    set_gate(&g, true);
    wait_count(&g, &g.released, 23);
    s = tick_stats(g.d, wall + 61 * NSEC_PER_SEC);
    assert_int_equal(s.steps_closed, 12); /* and job y's step */
    assert_int_equal(s.closed_by[0], 11); /* job x's, complete */
    assert_int_equal(s.closed_by[2], 0);
    assert_int_equal(s.late, 0);
    assert_int_equal(s.silent_nodes + s.silent_ranks, 0);

    diagq_free(q);
    diagnosis_free(g.d);
    pthread_cond_destroy(&g.cond);
    pthread_mutex_destroy(&g.lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue_time_is_not_diagnosis_time, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
