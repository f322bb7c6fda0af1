/* The diagnosis queue with a real worker thread: batches are fed in the
 * order they came and released after; a full queue drops (and counts)
 * without blocking the pusher; lag per job follows what waits, with one
 * warning over diag.lag_warn and one recovery. The feed callback can be
 * held shut (a gate) to make diagnosis "slow" deterministically. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diagq.h"
#include "common/clock.h"

#define MAX_FED 64

/* What the feed saw, and a gate that holds it. */
struct feed_log {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
    size_t n;
    uint64_t seqs[MAX_FED], recvs[MAX_FED];
    size_t released;
};

static void feed(void *ctx, const Argus__V1__Batch *b, uint64_t recv)
{
    struct feed_log *l = ctx;

    pthread_mutex_lock(&l->lock);
    while (!l->open)
        pthread_cond_wait(&l->cond, &l->lock);
    if (l->n < MAX_FED) {
        l->seqs[l->n] = b->seq;
        l->recvs[l->n] = recv;
    }
    l->n++;
    pthread_mutex_unlock(&l->lock);
}

/* A batch of one step record of job, in its own allocation (the owner). */
struct owned {
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    struct feed_log *log;
};

static struct owned *owned_new(struct feed_log *l, const char *job, uint64_t seq)
{
    struct owned *o = calloc(1, sizeof(*o));

    argus__v1__batch__init(&o->b);
    argus__v1__step_record__init(&o->s);
    o->s.job = (char *)job;
    o->sp = &o->s;
    o->b.agent_id = "a";
    o->b.epoch = 1;
    o->b.seq = seq;
    o->b.n_steps = 1;
    o->b.steps = &o->sp;
    o->log = l;
    return o;
}

static void release(void *owner)
{
    struct owned *o = owner;
    struct feed_log *l = o->log;

    pthread_mutex_lock(&l->lock);
    l->released++;
    pthread_mutex_unlock(&l->lock);
    free(o);
}

static void gate(struct feed_log *l, bool open)
{
    pthread_mutex_lock(&l->lock);
    l->open = open;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static size_t released(struct feed_log *l)
{
    pthread_mutex_lock(&l->lock);
    size_t n = l->released;
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* Wait (generously) until want batches were released. */
static void wait_released(struct feed_log *l, size_t want)
{
    for (int i = 0; i < 3000 && released(l) < want; i++)
        clock_sleep_ns(10 * NSEC_PER_MSEC);
    assert_int_equal(released(l), want);
}

static struct feed_log *log_new(bool open)
{
    struct feed_log *l = calloc(1, sizeof(*l));

    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->open = open;
    return l;
}

static void log_free(struct feed_log *l)
{
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* Push one batch of job (seq, received at recv seconds) holding bytes. */
static int push(struct diagq *q, struct feed_log *l, const char *job, uint64_t seq, uint64_t recv,
                size_t bytes)
{
    struct owned *o = owned_new(l, job, seq);

    return diagq_push(q, &o->b, recv * NSEC_PER_SEC, bytes, release, o);
}

struct lag_got {
    size_t n;
    char job[4][16];
    double lag[4];
};

static void lag_cb(void *ctx, const char *job, double lag)
{
    struct lag_got *g = ctx;

    if (g->n < 4) {
        strncpy(g->job[g->n], job, sizeof(g->job[0]) - 1);
        g->lag[g->n++] = lag;
    }
}

static double lag_of(struct diagq *q, const char *job)
{
    struct lag_got g = {0};

    diagq_foreach_lag(q, lag_cb, &g);
    for (size_t i = 0; i < g.n; i++)
        if (strcmp(g.job[i], job) == 0)
            return g.lag[i];
    return -1;
}

static void test_order_and_release(void **state)
{
    struct feed_log *l = log_new(true);
    struct diagq_options o = {.max_bytes = 1 << 20};
    struct diagq *q = diagq_new(&o, feed, l);
    struct diagq_stats st;

    assert_non_null(q);
    for (uint64_t i = 1; i <= 40; i++)
        assert_int_equal(push(q, l, "j", i, 1000 + i, 100), 0);
    wait_released(l, 40);
    for (uint64_t i = 0; i < 40; i++) {
        assert_int_equal(l->seqs[i], i + 1);
        assert_int_equal(l->recvs[i], (1001 + i) * NSEC_PER_SEC);
    }
    diagq_get_stats(q, &st);
    assert_int_equal(st.fed_batches, 40);
    assert_int_equal(st.fed_records, 40);
    assert_int_equal(st.queued_batches, 0);
    assert_int_equal(st.queued_bytes, 0);
    assert_int_equal(st.dropped_batches, 0);
    assert_int_equal(lag_of(q, "j"), 0);
    diagq_free(q);
    log_free(l);
}

/* Diagnosis held: the queue fills to its bound, then drops and counts at
 * once; nothing queued is lost; the batch being fed and the queued ones are
 * fed once the gate opens. */
static void test_full_queue_drops(void **state)
{
    struct feed_log *l = log_new(false);
    struct diagq_options o = {.max_bytes = 1000};
    struct diagq *q = diagq_new(&o, feed, l);
    struct diagq_stats st;
    int queued = 0, dropped = 0;

    /* 10 batches of 200 bytes: the first is taken by the (held) worker or
     * waits; at most 1000 bytes wait, the rest is dropped */
    for (uint64_t i = 1; i <= 10; i++) {
        int r = push(q, l, "j", i, 1000 + i, 200);
        assert_true(r == 0 || r == -ENOBUFS);
        queued += r == 0;
        dropped += r == -ENOBUFS;
    }
    assert_true(queued >= 5 && queued <= 6);
    assert_int_equal(released(l), (size_t)dropped); /* dropped: released at once */
    diagq_get_stats(q, &st);
    assert_int_equal(st.dropped_batches, dropped);
    assert_int_equal(st.dropped_records, dropped);
    assert_true(st.queued_bytes <= 1000 + 200);
    gate(l, true);
    wait_released(l, 10);
    assert_int_equal(l->n, queued);
    for (size_t i = 1; i < l->n; i++)
        assert_true(l->seqs[i] > l->seqs[i - 1]);
    diagq_get_stats(q, &st);
    assert_int_equal(st.fed_batches, queued);
    assert_int_equal(st.queued_bytes, 0);
    diagq_free(q);
    log_free(l);
}

/* Lag: receive time of the newest batch of the job minus the last one fed,
 * while some wait; one warning past lag_warn, and another after it caught
 * up and fell behind again. A batch larger than the bound is taken when
 * nothing is held. */
static void test_lag(void **state)
{
    struct feed_log *l = log_new(false);
    struct diagq_options o = {.max_bytes = 1 << 20, .lag_warn_ns = 3 * NSEC_PER_SEC};
    struct diagq *q = diagq_new(&o, feed, l);
    struct diagq_stats st;

    for (uint64_t i = 1; i <= 6; i++)
        assert_int_equal(push(q, l, "j", i, 100 + (i > 1 ? i : 0), 10), 0);
    assert_int_equal(push(q, l, "other", 7, 104, 10), 0);
    assert_true(lag_of(q, "j") >= 6 - 0.001 && lag_of(q, "j") <= 6 + 0.001); /* 106 - 100 */
    assert_int_equal(lag_of(q, "other"), 0); /* only one of its batches, none fed */
    diagq_tick(q, clock_mono_ns());
    diagq_tick(q, clock_mono_ns());
    diagq_get_stats(q, &st);
    assert_int_equal(st.lag_warnings, 1);
    gate(l, true);
    wait_released(l, 7);
    assert_int_equal(lag_of(q, "j"), 0);
    diagq_tick(q, clock_mono_ns());
    /* held again and falling behind again: a second warning */
    gate(l, false);
    for (uint64_t i = 8; i <= 12; i++)
        assert_int_equal(push(q, l, "j", i, 200 + i, 10), 0);
    diagq_tick(q, clock_mono_ns());
    diagq_get_stats(q, &st);
    assert_int_equal(st.lag_warnings, 2);
    gate(l, true);
    wait_released(l, 12);
    /* one batch over the bound goes through when nothing is held, and
     * nothing goes next to it */
    gate(l, false);
    assert_int_equal(push(q, l, "j", 13, 300, 2 << 20), 0);
    assert_int_equal(push(q, l, "j", 14, 301, 10), -ENOBUFS);
    gate(l, true);
    wait_released(l, 14);
    diagq_free(q);
    log_free(l);
}

struct progress_log {
    size_t calls, n;
    uint32_t ranks[16];
    uint64_t steps[16];
    char agent[16];
};
static struct progress_log plog;

static void progress(void *ctx, const char *job, const char *agent, const struct diagq_progress *p,
                     size_t n, uint64_t recv)
{
    plog.calls++;
    strncpy(plog.agent, agent, sizeof(plog.agent) - 1);
    for (size_t i = 0; i < n && plog.n < 16; i++) {
        plog.ranks[plog.n] = p[i].rank;
        plog.steps[plog.n++] = p[i].step;
    }
}

/* A batch the full queue does not take still gives its ranks' highest
 * steps to progress (after what was queued before it), and is counted both
 * as dropped and as noted. */
static void test_full_queue_notes_progress(void **state)
{
    struct feed_log *l = log_new(false);
    struct diagq_options o = {.max_bytes = 1000, .progress = progress};
    struct diagq *q = diagq_new(&o, feed, l);
    struct diagq_stats st;
    struct owned *big = owned_new(l, "j", 9);
    Argus__V1__StepRecord s2, *sp[2] = {&big->s, &s2};

    memset(&plog, 0, sizeof(plog));
    assert_int_equal(push(q, l, "j", 1, 100, 900), 0);
    /* two records of ranks 3 (steps 7, 5): one note, step 7 */
    big->s.rank = 3;
    big->s.step = 7;
    s2 = big->s;
    s2.step = 5;
    big->b.n_steps = 2;
    big->b.steps = sp;
    assert_int_equal(diagq_push(q, &big->b, 101 * NSEC_PER_SEC, 900, release, big), -ENOBUFS);
    diagq_get_stats(q, &st);
    assert_int_equal(st.dropped_batches, 1);
    assert_int_equal(st.noted_batches, 1);
    assert_int_equal(st.queued_batches, 2);
    assert_int_equal(diagq_job_clock(q, "j", 500 * NSEC_PER_SEC), 100 * NSEC_PER_SEC);
    gate(l, true);
    wait_released(l, 2);
    for (int i = 0; i < 3000 && diagq_job_clock(q, "j", 1) != 1; i++)
        clock_sleep_ns(10 * NSEC_PER_MSEC);
    assert_int_equal(l->n, 1);
    assert_int_equal(plog.calls, 1);
    assert_int_equal(plog.n, 1);
    assert_int_equal(plog.ranks[0], 3);
    assert_int_equal(plog.steps[0], 7);
    assert_string_equal(plog.agent, "a");
    diagq_free(q);
    log_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_release),
        cmocka_unit_test(test_full_queue_drops),
        cmocka_unit_test(test_lag),
        cmocka_unit_test(test_full_queue_notes_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
