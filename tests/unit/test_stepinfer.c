/* agent/steps/stepinfer.c on hand-built collective sequences of a whole job:
 * several ranks with jitter, DDP buckets, gradient accumulation, two process
 * groups, set-up collectives, an agent that attaches mid-job. Each test
 * checks the number of steps, that the same real step gets the same number
 * on every rank, and the step time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/stepinfer.h"

#define MS 1000000ull
#define MAX_RANKS 8
#define MAX_STEPS 400
#define MAX_CALLS (MAX_RANKS * MAX_STEPS * 8 + 256)
#define MAX_OUT (MAX_RANKS * MAX_STEPS)

/* A job: every step on every rank is forward, a backward that launches
 * `buckets` all-reduces on group A, an optimizer; with accum = 2 the first
 * micro-step all-reduces nothing (DDP no_sync). Group B (when on) gets one
 * call per step during the forward. `setup` calls on A come before step 0
 * (DDP's broadcasts), and step 1 has two more (DDP's rebuilt buckets). */
struct sim {
    int ranks, steps, buckets, accum;
    uint64_t period_ns;
    int warm_steps, warm_x; /* steps 0..warm_steps-1 take warm_x periods (warm-up) */
    uint32_t jitter_pct;    /* per call and per step, percent of the period */
    bool lib_seq;           /* the library numbers calls (gloo's tag) */
    bool group_b;
    int setup;
    uint64_t attach_ns[MAX_RANKS]; /* the agent sees calls after this (0: all) */
    int flat_rank; /* 1 + a rank whose calls are evenly spaced: its gaps show no step */
    uint64_t seed;
    /* Run-queue time, percent of wall time per rank, before and after
     * runq_change_ns (0: no counters), read as the sched probe does: every
     * 100 ms and at each tick. */
    uint32_t runq_pct[MAX_RANKS], runq_pct_after[MAX_RANKS];
    uint64_t runq_change_ns;
};

struct truth {
    uint64_t start[MAX_RANKS][MAX_STEPS + 1]; /* the job's own step starts per rank */
};

struct fed {
    uint32_t pid;
    struct stepinfer_call c;
};

struct out {
    uint32_t pid;
    uint64_t step, start, dur;
    size_t ncolls;
    uint64_t runq;
};

static struct clock_offset zero_clock = {.n = 1}; /* UNIX time = monotonic */
static struct fed calls[MAX_CALLS];
static size_t ncalls;
static struct out outs[MAX_OUT];
static size_t nouts;
/* test_shared_ids_and_ends: the group id every call must carry, and the
 * calls checked (their end is 30 or 35 us after their arrival) */
static uint64_t want_group;
static size_t ends_checked;
static struct truth truth;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A random fraction of the period in [0, pct%). */
static uint64_t jitter(const struct sim *s, uint64_t *seed)
{
    uint64_t span = s->period_ns / 100 * s->jitter_pct;

    return span ? rnd(seed) % span : 0;
}

#define ALLREDUCE 7
#define BROADCAST 8

/* gloo: an asynchronous enqueue, no bytes */
static void add_op(uint32_t pid, uint64_t at, int64_t seq, uint64_t comm, uint64_t op)
{
    assert_true(ncalls < MAX_CALLS);
    calls[ncalls++] = (struct fed){pid, {at, at + 40000, op, 0, comm, seq, 0, 0}};
}

static void add_call(uint32_t pid, uint64_t at, int64_t seq, uint64_t comm)
{
    add_op(pid, at, seq, comm, ALLREDUCE);
}

static int cmp_fed(const void *a, const void *b)
{
    const struct fed *x = a, *y = b;

    return x->c.enter_ns < y->c.enter_ns ? -1 : x->c.enter_ns > y->c.enter_ns;
}

/* How long step k takes (before jitter). */
static uint64_t sim_period(const struct sim *s, int k)
{
    return k < s->warm_steps ? s->period_ns * (uint64_t)s->warm_x : s->period_ns;
}

/* Calls of one rank's step k (starting at t0). */
static void sim_step(const struct sim *s, int r, int k, uint64_t t0, int64_t *seq_a, int64_t *seq_b,
                     uint64_t *seed)
{
    uint64_t p = sim_period(s, k), micro = p / (uint64_t)s->accum, last = t0 + p - micro;

    if (s->group_b)
        add_call(100 + (uint32_t)r, t0 + p / 10 + jitter(s, seed), (*seq_b)++, 0xb);
    if (k == 1) /* DDP rebuilds its buckets after the first step: two broadcasts */
        for (int i = 0; i < 2; i++)
            add_op(100 + (uint32_t)r, t0 + p / 50 + (uint64_t)i * 100000, (*seq_a)++, 0xa,
                   BROADCAST);
    for (int i = 0; i < s->buckets && s->flat_rank == r + 1; i++)
        add_call(100 + (uint32_t)r, t0 + p * (uint64_t)(2 * i + 1) / (2 * (uint64_t)s->buckets),
                 (*seq_a)++, 0xa);
    for (int i = 0; i < s->buckets && s->flat_rank != r + 1; i++) /* the last backward */
        add_call(100 + (uint32_t)r,
                 last + micro * 35 / 100 + micro * 45 / 100 * (uint64_t)(i + 1) / s->buckets -
                     micro / 20 + jitter(s, seed),
                 (*seq_a)++, 0xa);
}

static void sim_run(const struct sim *s)
{
    uint64_t seed = s->seed ? s->seed : 88172645463325252ull;

    ncalls = nouts = 0;
    memset(&truth, 0, sizeof(truth));
    for (int r = 0; r < s->ranks; r++) {
        int64_t seq_a = 0, seq_b = 0;
        uint64_t t = 1000 * MS, at = 1100 * MS;

        for (int i = 0; i < s->setup; i++)
            add_op(100 + (uint32_t)r, t + (uint64_t)i * MS, seq_a++, 0xa, BROADCAST);
        seq_b = 3; /* group B's own set-up */
        t += 100 * MS;
        for (int k = 0; k <= s->steps; k++) {
            uint64_t step_seed = s->seed + (uint64_t)k * 7919 + 1; /* the same on every rank */
            uint64_t start = at + jitter(s, &step_seed);

            at += sim_period(s, k);
            truth.start[r][k] = start + jitter(s, &seed) / 4;
            if (k < s->steps)
                sim_step(s, r, k, truth.start[r][k], &seq_a, &seq_b, &seed);
        }
    }
    for (size_t i = 0; i < ncalls && !s->lib_seq; i++)
        calls[i].c.lib_seq = -1;
    qsort(calls, ncalls, sizeof(calls[0]), cmp_fed);
}

static void on_step(void *ctx, uint32_t pid, const Argus__V1__StepRecord *st)
{
    (void)ctx;
    assert_true(nouts < MAX_OUT);
    assert_int_equal(st->source, ARGUS__V1__STEP_SOURCE__STEP_SOURCE_INFERRED);
    assert_int_equal(st->n_phases, 2);
    assert_int_equal(st->phases[0]->duration_ns + st->phases[1]->duration_ns, st->duration_ns);
    outs[nouts++] = (struct out){pid,
                                 st->step,
                                 st->start_unix_ns,
                                 st->duration_ns,
                                 st->n_collectives,
                                 st->host ? st->host->runq_ns : 0};
    for (size_t i = 0; want_group && i < st->n_collectives; i++) {
        const Argus__V1__Collective *c = st->collectives[i];
        uint64_t end = c->host_return_unix_ns - c->host_arrival_unix_ns;
        assert_int_equal(c->comm_id, want_group);
        assert_false(c->seq_local);
        assert_true(end == 30000 || end == 35000);
        ends_checked++;
    }
}

/* The sched probe's run-queue deltas of every rank over (*polled, now]. */
static void poll_runq(struct stepinfer *si, const struct sim *s, uint64_t *polled, uint64_t now)
{
    for (int r = 0; s->runq_change_ns && now > *polled && r < s->ranks; r++) {
        uint32_t pct = now <= s->runq_change_ns ? s->runq_pct[r] : s->runq_pct_after[r];
        stepinfer_counter(si, 100 + (uint32_t)r, AGENT_COUNTER_RUNQ_NS, (now - *polled) * pct / 100,
                          now);
    }
    *polled = now > *polled ? now : *polled;
}

/* The model changes of the call just made, each of a rank of the job. */
static void count_changes(const struct stepinfer *si, uint64_t counts[2] /* unlocks, locks */)
{
    size_t n;
    const struct stepinfer_change *c = stepinfer_changes(si, &n);

    for (size_t i = 0; i < n; i++) {
        assert_string_equal(c[i].job, "job");
        assert_int_equal(c[i].pid, 100 + c[i].rank);
        assert_true(!c[i].locked || (c[i].span > 0 && c[i].calls > 0));
        counts[c[i].locked]++;
    }
}

/* Feed the calls as a live agent would: a tick every simulated second,
 * after the counters were polled (every 100 ms, and at the tick). */
static void feed(const struct sim *s, struct stepinfer_stats *stats)
{
    struct stepinfer *si = stepinfer_new(on_step, NULL, &zero_clock);
    uint64_t next_tick = 0, polled = 0, counts[2] = {0, 0};
    struct stepinfer_stats st;

    assert_non_null(si);
    nouts = 0;
    for (int r = 0; r < s->ranks; r++)
        assert_int_equal(stepinfer_track(si, 100 + (uint32_t)r, "job", (uint32_t)r), 0);
    for (size_t i = 0; i < ncalls; i++) {
        if (calls[i].c.enter_ns < s->attach_ns[calls[i].pid - 100])
            continue;
        while ((polled / (100 * MS) + 1) * 100 * MS <= calls[i].c.enter_ns)
            poll_runq(si, s, &polled, (polled / (100 * MS) + 1) * 100 * MS);
        if (calls[i].c.enter_ns >= next_tick) {
            poll_runq(si, s, &polled, calls[i].c.enter_ns);
            stepinfer_tick(si, NULL, NULL);
            count_changes(si, counts);
            next_tick = calls[i].c.enter_ns + 1000 * MS;
        }
        stepinfer_call(si, calls[i].pid, &calls[i].c);
    }
    stepinfer_tick(si, NULL, NULL);
    count_changes(si, counts);
    for (int r = 0; r < s->ranks; r++, count_changes(si, counts))
        stepinfer_untrack(si, 100 + (uint32_t)r, true);
    stepinfer_get_stats(si, &st); /* every lock and unlock reported once, for the log */
    assert_true(st.locks == counts[1] && st.unlocks == counts[0] && !st.changes_lost);
    if (stats)
        *stats = st;
    stepinfer_free(si);
}

/* The real step of rank r that overlaps [start, start + dur) the most. */
static int real_step(const struct sim *s, int r, uint64_t start, uint64_t dur)
{
    uint64_t best = 0;
    int at = -1;

    for (int k = 0; k < s->steps; k++) {
        uint64_t a = truth.start[r][k], b = truth.start[r][k + 1];
        uint64_t lo = a > start ? a : start, hi = b < start + dur ? b : start + dur;

        if (hi > lo && hi - lo > best) {
            best = hi - lo;
            at = k;
        }
    }
    return at;
}

/* Every rank has at least min_steps steps, numbers that increase, the same
 * number for the same real step on every rank (one offset for the whole
 * job), and a mean step time within 1% of the job's own. Returns the
 * offset (inferred number - real step). */
static long check(const struct sim *s, int min_steps)
{
    long offset = 0;
    bool have = false;

    if (getenv("DEBUG_STEPINFER"))
        for (size_t i = 0; i < nouts && i < 4000; i++)
            print_message("out pid=%u step=%lu start=%.3f dur=%.3f colls=%zu\n", outs[i].pid,
                          (unsigned long)outs[i].step, outs[i].start / 1e6, outs[i].dur / 1e6,
                          outs[i].ncolls);
    for (int r = 0; r < s->ranks; r++) {
        double mine = 0, real = 0;
        int n = 0;
        uint64_t prev = 0;

        for (size_t i = 0; i < nouts; i++) {
            const struct out *o = &outs[i];
            int k;

            if (o->pid != 100 + (uint32_t)r)
                continue;
            assert_true(n == 0 || o->step > prev);
            prev = o->step;
            k = real_step(s, r, o->start, o->dur);
            if (k < 0)
                fail_msg("rank %d: step %lu at %.3f ms, %.3f ms long, is no real step", r,
                         (unsigned long)o->step, (double)o->start / 1e6, (double)o->dur / 1e6);
            if (!have)
                offset = (long)o->step - k, have = true;
            if ((long)o->step - k != offset)
                fail_msg("rank %d: step %lu is real step %d, offset %ld, not %ld", r,
                         (unsigned long)o->step, k, (long)o->step - k, offset);
            mine += (double)o->dur;
            real += (double)(truth.start[r][k + 1] - truth.start[r][k]);
            n++;
        }
        if (n < min_steps)
            fail_msg("rank %d: %d steps, want >= %d", r, n, min_steps);
        if (mine / real > 1.01 || mine / real < 0.99)
            fail_msg("rank %d: mean step %.3f ms, job's %.3f ms", r, mine / n / 1e6,
                     real / n / 1e6);
    }
    return offset;
}

static void test_two_buckets(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 300,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 6};
    struct stepinfer_stats st;

    (void)state;
    sim_run(&s);
    feed(&s, &st);
    check(&s, 297); /* of 300: step 0 has no boundary before it, step 1 is set-up */
    assert_int_equal(nouts, st.steps);
    assert_int_equal(st.locks, 4);
    assert_int_equal(st.unlocks, 0);
    /* the first 6 steps take three times as long (warm-up, a loaded CPU):
     * steps all the same (only a lower bound holds the first ones) */
    s.warm_steps = 6;
    s.warm_x = 3;
    sim_run(&s);
    feed(&s, &st);
    check(&s, 297);
    assert_int_equal(nouts, st.steps);
    assert_int_equal(st.unlocks, 0);
}

static void test_three_buckets(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 300,
                    .buckets = 3,
                    .accum = 1,
                    .period_ns = 150 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 4,
                    .seed = 5};

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    check(&s, 297);
    for (size_t i = 0; i < nouts; i++)
        assert_int_equal(outs[i].ncolls, 3);
}

static void test_gradient_accumulation(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 200,
                    .buckets = 2,
                    .accum = 2,
                    .period_ns = 300 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 6,
                    .seed = 9};

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    check(&s, 197); /* one step per optimizer step, not per micro-step */
}

static void test_two_process_groups(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 200,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .group_b = true,
                    .setup = 6,
                    .seed = 13};

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    check(&s, 197);
    for (size_t i = 0; i < nouts; i++)
        assert_int_equal(outs[i].ncolls, 3);
}

/* The agent comes up while the job runs: each rank's first call is a
 * different one, mid-step; the numbers still agree, and agree with a run
 * that saw everything. */
static void test_attach_mid_job(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 300,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 6,
                    .seed = 17};
    long whole, late;

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    whole = check(&s, 297);
    for (int r = 0; r < 4; r++) /* steps 100.3, 101.1, 102.6, 99.9 */
        s.attach_ns[r] = 1100 * MS + s.period_ns * (uint64_t)(int[]){1003, 1011, 1026, 999}[r] / 10;
    feed(&s, NULL);
    late = check(&s, 300 - 103 - 2);
    assert_int_equal(late, whole);
}

/* Heavy jitter (10% of the period per call and per step) and ranks that
 * each see their own noise. */
static void test_ranks_with_jitter(void **state)
{
    struct sim s = {.ranks = 8,
                    .steps = 300,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 100 * MS,
                    .jitter_pct = 10,
                    .lib_seq = true,
                    .setup = 6,
                    .seed = 21};

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    check(&s, 297);
}

/* One rank's calls are evenly spaced (its gaps alone give one call per
 * step): it takes the model the other ranks of its job found. */
static void test_outvoted_rank(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 200,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 6,
                    .seed = 33,
                    .flat_rank = 4};
    struct stepinfer_stats st;

    (void)state;
    sim_run(&s);
    feed(&s, &st);
    check(&s, 197);
    assert_int_equal(st.locks, 4);
}

/* Ranks known only after their first calls (found from their communicator,
 * torch.multiprocessing.spawn) keep those calls; processes that never
 * become ranks are bounded. */
static void test_calls_before_track(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 100,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 6,
                    .seed = 37};
    struct stepinfer *si = stepinfer_new(on_step, NULL, &zero_clock);
    struct stepinfer_call c = {1000, 2000, ALLREDUCE, 0, 1, 5, 0, 0};

    (void)state;
    sim_run(&s);
    nouts = 0;
    for (uint32_t pid = 1000; pid < 1100; pid++) /* never ranks */
        stepinfer_call(si, pid, &c);
    for (size_t i = 0; i < ncalls; i++) {
        if (calls[i].c.enter_ns > 1100 * MS + 20 * s.period_ns && calls[i].pid < 104)
            stepinfer_track(si, calls[i].pid, "job", calls[i].pid - 100);
        stepinfer_call(si, calls[i].pid, &calls[i].c);
        if (i % 40 == 0)
            stepinfer_tick(si, NULL, NULL);
    }
    stepinfer_tick(si, NULL, NULL);
    stepinfer_free(si);
    check(&s, 97);
}

/* Without the library's numbers (NCCL), the calls the agent saw from the
 * start number the steps: still the same on every rank. */
static void test_counted_sequence_from_start(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 200,
                    .buckets = 3,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = false,
                    .setup = 6,
                    .seed = 25};

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    check(&s, 197);
}

/* A job that changes its pattern (two buckets, then three): the rank is
 * found again and its numbers keep increasing. */
static void test_pattern_change(void **state)
{
    struct sim a = {.ranks = 2,
                    .steps = 100,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 200 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 0,
                    .seed = 29};
    struct stepinfer *si = stepinfer_new(on_step, NULL, &zero_clock);
    struct stepinfer_stats st;
    static struct fed first[MAX_CALLS];
    size_t nfirst, three = 0;
    uint64_t shift;

    (void)state;
    sim_run(&a);
    nfirst = ncalls;
    memcpy(first, calls, ncalls * sizeof(calls[0]));
    a.buckets = 3;
    sim_run(&a);
    shift = first[nfirst - 1].c.enter_ns + 500 * MS - calls[0].c.enter_ns;
    for (int r = 0; r < 2; r++)
        stepinfer_track(si, 100 + (uint32_t)r, "job", (uint32_t)r);
    for (size_t i = 0; i < nfirst + ncalls; i++) {
        struct fed f = i < nfirst ? first[i] : calls[i - nfirst];
        if (i >= nfirst) {
            f.c.enter_ns += shift, f.c.exit_ns += shift;
            f.c.lib_seq += 2 * 100 + 2; /* the group's count goes on */
        }
        stepinfer_call(si, f.pid, &f.c);
        if (i % 50 == 0)
            stepinfer_tick(si, NULL, NULL);
    }
    stepinfer_tick(si, NULL, NULL);
    stepinfer_get_stats(si, &st);
    stepinfer_free(si);
    assert_int_equal(st.unlocks, 2); /* once per rank, at the change */
    assert_true(st.steps >= 2 * (98 + 90));
    for (size_t i = 0; i < nouts; i++) /* the new steps are whole */
        three += outs[i].ncolls == 3;
    assert_true(three >= 2 * 85);
    for (int r = 0; r < 2; r++) {
        uint64_t prev = 0;
        int n = 0;
        for (size_t i = 0; i < nouts; i++)
            if (outs[i].pid == 100 + (uint32_t)r) {
                assert_true(n++ == 0 || outs[i].step > prev);
                prev = outs[i].step;
            }
    }
}

/* Calls carry the group's shared id, the library's numbers (not seq_local) and
 * their host end, given with the call or afterwards (stepinfer_done: a gloo
 * work that finished after its call was seen). */
static void test_shared_ids_and_ends(void **state)
{
    struct sim s = {.ranks = 2,
                    .steps = 40,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 100 * MS,
                    .lib_seq = true,
                    .setup = 4};
    struct stepinfer *si = stepinfer_new(on_step, NULL, &zero_clock);

    (void)state;
    sim_run(&s);
    want_group = 0x5eed;
    ends_checked = 0;
    for (int r = 0; r < s.ranks; r++)
        assert_int_equal(stepinfer_track(si, 100 + (uint32_t)r, "job", (uint32_t)r), 0);
    for (size_t i = 0; i < ncalls; i++) {
        struct stepinfer_call *c = &calls[i].c;
        c->group = want_group;
        c->done_ns = i % 2 ? 0 : c->enter_ns + 30000;
        stepinfer_call(si, calls[i].pid, c);
        if (i % 2)
            stepinfer_done(si, calls[i].pid, c->comm, c->lib_seq, c->enter_ns + 35000);
        if (i % 50 == 49)
            stepinfer_tick(si, NULL, NULL);
    }
    stepinfer_tick(si, NULL, NULL);
    stepinfer_done(si, 999, 0xa, 1, 1); /* an unknown process: ignored */
    stepinfer_free(si);
    want_group = 0;
    assert_true(nouts >= 60);
    assert_true(ends_checked >= 2 * nouts);
}

/* Run-queue time lands on the steps it was measured in: each step's is
 * its rank's rate times its time (the sched probe's deltas come every
 * 100 ms, steps are emitted once a second), and rank 2's stall moves to
 * rank 1 at the change. */
static void test_counters_by_time(void **state)
{
    struct sim s = {.ranks = 4,
                    .steps = 100,
                    .buckets = 2,
                    .accum = 1,
                    .period_ns = 170 * MS,
                    .jitter_pct = 3,
                    .lib_seq = true,
                    .setup = 6,
                    .runq_pct = {10, 10, 60, 10},
                    .runq_pct_after = {10, 60, 10, 10},
                    .runq_change_ns = 10000 * MS};
    size_t checked = 0;

    (void)state;
    sim_run(&s);
    feed(&s, NULL);
    check(&s, 97);
    for (size_t i = 0; i < nouts; i++) {
        const struct out *o = &outs[i];
        int r = (int)o->pid - 100;
        uint32_t pct;

        if (o->start + o->dur <= s.runq_change_ns)
            pct = s.runq_pct[r];
        else if (o->start >= s.runq_change_ns)
            pct = s.runq_pct_after[r];
        else
            continue;
        if (o->runq + o->dur / 100 < o->dur * pct / 100 ||
            o->runq > o->dur * pct / 100 + o->dur / 100)
            fail_msg("rank %d step %lu (%.1f ms at %.1f ms): run queue %.2f ms, want %u%%", r,
                     (unsigned long)o->step, o->dur / 1e6, o->start / 1e6, o->runq / 1e6, pct);
        checked++;
    }
    assert_true(checked >= 4 * 95);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_buckets),
        cmocka_unit_test(test_three_buckets),
        cmocka_unit_test(test_gradient_accumulation),
        cmocka_unit_test(test_two_process_groups),
        cmocka_unit_test(test_attach_mid_job),
        cmocka_unit_test(test_ranks_with_jitter),
        cmocka_unit_test(test_outvoted_rank),
        cmocka_unit_test(test_calls_before_track),
        cmocka_unit_test(test_counted_sequence_from_start),
        cmocka_unit_test(test_pattern_change),
        cmocka_unit_test(test_shared_ids_and_ends),
        cmocka_unit_test(test_counters_by_time),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
