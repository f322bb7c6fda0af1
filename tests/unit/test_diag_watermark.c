/* Closing steps by event time, silence by wall clock and late records
 * (collector/diag: diag_watermark, diag_steps, diag_silence, diag_amend)
 * on hand-built arrival sequences: a 32-rank job (4 agent streams of 8
 * ranks) at 10 steps/s, each stream batching one second of steps like the
 * agent (batch.max_age), delivered reordered, duplicated, delayed, stalled,
 * skewed in time, started apart, silenced or replayed after an outage. A
 * healthy job must page nobody under any of them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_report.h"
#include "tools/argus-sim/diag_scenario.h"

#define SEC 1000000000ULL
#define MS 1000000ULL
#define T0 (1800000000ULL * SEC)
#define RANKS 32
#define PER_STREAM 8
#define STREAMS (RANKS / PER_STREAM)
#define NEVER UINT64_MAX

struct delivery {
    uint64_t recv_ns;
    uint32_t stream;
    uint32_t rank;
    uint64_t step;
    Argus__V1__StepRecord *rec; /* owned copy */
};

/* How a test delivers: the receive time of (stream, step) given the normal
 * one (NEVER: not delivered). */
typedef uint64_t (*deliver_fn)(uint32_t stream, uint64_t step, uint64_t normal_ns);

struct run {
    uint32_t pages;       /* rank pages (diag_suspect_pages) */
    uint32_t node_silent; /* node findings */
    uint32_t paged_rank[16];
    Argus__V1__Cause paged_cause[16];
    char node_evidence[320];
    struct diag_engine_stats st;
    uint64_t wm_probe[4]; /* watermark at the probe times */
};

static uint64_t probe_at[4]; /* receive times to sample the watermark at */

/* The agent's batching: records of a step generated at gen leave with the
 * stream's next batch (every second, phase by stream) and arrive 50 ms later. */
static uint64_t batched(uint32_t stream, uint64_t gen)
{
    uint64_t phase = stream * 230 * MS;
    uint64_t k = (gen - T0 + phase) / SEC + 1;
    return T0 + k * SEC - phase + 50 * MS;
}

static Argus__V1__StepRecord *copy_record(const Argus__V1__StepRecord *r)
{
    size_t n = argus__v1__step_record__get_packed_size(r);
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    argus__v1__step_record__pack(r, buf);
    Argus__V1__StepRecord *c = argus__v1__step_record__unpack(NULL, n, buf);
    free(buf);
    assert_non_null(c);
    return c;
}

static int cmp_delivery(const void *a, const void *b)
{
    const struct delivery *x = a, *y = b;

    if (x->recv_ns != y->recv_ns)
        return x->recv_ns < y->recv_ns ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return (int)y->rank - (int)x->rank; /* ranks reversed */
}

static void take(struct diag_engine *e, struct run *out)
{
    Argus__V1__Report **reps;
    size_t n = diag_engine_take_reports(e, &reps);

    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < reps[i]->n_suspects; j++) {
            const Argus__V1__Suspect *s = reps[i]->suspects[j];
            if (getenv("DIAG_VERBOSE"))
                printf("    rank %d cause %d level %d: %s\n", (int)s->rank, s->cause, s->level,
                       s->evidence);
            if (s->rank == DIAG_RANK_NONE && s->cause == ARGUS__V1__CAUSE__CAUSE_SILENT) {
                out->node_silent++;
                snprintf(out->node_evidence, sizeof(out->node_evidence), "%s", s->evidence);
            }
            if (diag_suspect_pages(s) && out->pages < 16) {
                out->paged_rank[out->pages] = s->rank;
                out->paged_cause[out->pages++] = s->cause;
            }
        }
        diag_report_free(reps[i]);
    }
    free(reps);
}

/* The link of one agent as the collector sees it (test_link): down from
 * link_down_ns (0: never) until link_up_ns, then up since link_up_ns. */
static const char *link_agent;
static uint64_t link_down_ns, link_up_ns, tick_now_ns;

static bool test_link(void *ctx, const char *agent, uint64_t *since_ns)
{
    (void)ctx;
    *since_ns = 0;
    if (!link_agent || strcmp(agent, link_agent) != 0 || !link_down_ns ||
        tick_now_ns < link_down_ns)
        return true;
    if (tick_now_ns < link_up_ns)
        return false;
    *since_ns = link_up_ns;
    return true;
}

static void tick_until(struct diag_engine *e, uint64_t *next_tick, uint64_t t, struct run *out)
{
    for (; *next_tick <= t; *next_tick += SEC) {
        tick_now_ns = *next_tick;
        assert_true(diag_engine_tick(e, *next_tick) >= 0);
        struct diag_engine_stats st;
        diag_engine_get_stats(e, &st);
        for (int p = 0; p < 4; p++)
            if (probe_at[p] && *next_tick == probe_at[p])
                out->wm_probe[p] = st.watermark;
        take(e, out);
    }
}

/* Feed one batch: deliveries [a, b) of one stream at one receive time;
 * twice when dup. */
static void feed_batch(struct diag_engine *e, const struct delivery *d, size_t a, size_t b,
                       bool dup, struct run *out)
{
    char agent[32];

    snprintf(agent, sizeof(agent), "agent-%u", d[a].stream);
    for (int k = 0; k < (dup ? 2 : 1); k++) {
        assert_int_equal(diag_engine_begin_batch(e, agent, d[a].recv_ns), 0);
        for (size_t i = a; i < b; i++)
            assert_true(diag_engine_add_step(e, d[i].rec, d[i].recv_ns) >= 0);
        assert_true(diag_engine_end_batch(e, d[a].recv_ns) >= 0);
        take(e, out);
    }
}

struct job {
    struct diag_scn_config c;
    uint32_t steps;
    deliver_fn deliver;
    bool dup;
    struct diag_options o;
};

static void run_job(const struct job *j, struct run *out)
{
    struct diag_scn_config c = j->c;
    c.ranks = RANKS;
    c.tp = c.tp ? c.tp : 2;
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_options o = j->o;
    size_t nres, n = 0;
    struct delivery *d = calloc((size_t)j->steps * RANKS, sizeof(*d));

    assert_non_null(s);
    assert_non_null(d);
    memset(out, 0, sizeof(*out));
    o.name = diag_scn_name;
    o.name_ctx = s;
    struct diag_engine *e = diag_engine_new(&o);
    assert_non_null(e);
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    for (uint32_t k = 0; k < j->steps; k++) {
        Argus__V1__StepRecord *const *recs;
        uint64_t end;
        size_t m = diag_scn_next(s, &recs, &end);
        for (size_t i = 0; i < m; i++) {
            uint32_t stream = recs[i]->rank / PER_STREAM;
            uint64_t normal = batched(stream, T0 + k * 100 * MS);
            uint64_t t = j->deliver ? j->deliver(stream, k, normal) : normal;
            if (t == NEVER)
                continue;
            d[n++] = (struct delivery){t, stream, recs[i]->rank, k, copy_record(recs[i])};
        }
    }
    qsort(d, n, sizeof(*d), cmp_delivery);
    uint64_t next_tick = T0 + SEC;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && d[b].recv_ns == d[a].recv_ns && d[b].stream == d[a].stream; b++)
            ;
        tick_until(e, &next_tick, d[a].recv_ns, out);
        feed_batch(e, d, a, b, j->dup, out);
    }
    /* the job ended: time goes on, every step closes, nobody is silent */
    tick_until(e, &next_tick, d[n - 1].recv_ns + 60 * SEC, out);
    diag_engine_get_stats(e, &out->st);
    for (size_t i = 0; i < n; i++)
        argus__v1__step_record__free_unpacked(d[i].rec, NULL);
    free(d);
    diag_engine_free(e);
    diag_scn_free(s);
    printf("  closed %lu (complete %lu, watermark %lu, timeout %lu, budget %lu), late %lu, "
           "amended %lu, dropped %lu+%lu, pages %u, node findings %u\n",
           (unsigned long)out->st.steps_closed,
           (unsigned long)out->st.steps_closed_by[DIAG_CLOSE_COMPLETE],
           (unsigned long)out->st.steps_closed_by[DIAG_CLOSE_WATERMARK],
           (unsigned long)out->st.steps_closed_by[DIAG_CLOSE_TIMEOUT],
           (unsigned long)out->st.steps_closed_by[DIAG_CLOSE_BUDGET], (unsigned long)out->st.late,
           (unsigned long)out->st.amended, (unsigned long)out->st.dropped_horizon,
           (unsigned long)out->st.dropped_memory, out->pages, out->node_silent);
}

static void expect_quiet(const struct run *r)
{
    for (uint32_t i = 0; i < r->pages; i++)
        printf("    unexpected page: rank %u cause %d\n", r->paged_rank[i], r->paged_cause[i]);
    assert_int_equal(r->pages, 0);
    assert_int_equal(r->node_silent, 0);
}

/* --- delivery patterns ------------------------------------------------------- */

static uint64_t in_order(uint32_t stream, uint64_t step, uint64_t t)
{
    return t;
}

static uint64_t stream3_delayed_5s(uint32_t stream, uint64_t step, uint64_t t)
{
    return stream == 3 ? t + 5 * SEC : t;
}

/* stream 3 sends nothing from 10 s to 10 s + len, then replays what it
 * holds in order, like the agent's spool (1 us per step record batch) */
static uint64_t stall_len;
static uint64_t stream3_stalled(uint32_t stream, uint64_t step, uint64_t t)
{
    uint64_t from = T0 + 10 * SEC, to = from + stall_len;

    return stream == 3 && t >= from && t < to ? to + step * 1000 : t;
}

static uint64_t started_apart(uint32_t stream, uint64_t step, uint64_t t)
{
    return t + stream * 1300 * MS; /* agents 1.3 s apart, each from step 0 */
}

static uint64_t joined_late(uint32_t stream, uint64_t step, uint64_t t)
{
    return step < stream * 15u ? NEVER : t; /* stream s first seen at step 15 s */
}

static uint64_t stream2_quits(uint32_t stream, uint64_t step, uint64_t t)
{
    return stream == 2 && step >= 100 ? NEVER : t;
}

/* --- tests --------------------------------------------------------------------- */

static void test_in_order_closes_complete(void **state)
{
    struct job j = {.c = {.fault = DIAG_SCN_HEALTHY, .seed = 1}, .steps = 200, .deliver = in_order};
    struct run r;

    run_job(&j, &r);
    expect_quiet(&r);
    assert_int_equal(r.st.steps_closed, 200);
    assert_true(r.st.steps_closed_by[DIAG_CLOSE_COMPLETE] >= 199);
    assert_int_equal(r.st.late, 0);
}

static void test_reordered_and_duplicated(void **state)
{
    /* batches of the 4 streams interleave, ranks reversed, each batch twice */
    struct job j = {.c = {.fault = DIAG_SCN_HEALTHY, .seed = 2}, .steps = 200, .dup = true};
    struct run r;

    run_job(&j, &r);
    expect_quiet(&r);
    assert_int_equal(r.st.steps_closed, 200);
    assert_int_equal(r.st.duplicates, 200 * RANKS);
    assert_int_equal(r.st.records, 200 * RANKS);
    assert_int_equal(r.st.late, 0); /* a replay of analysed records is not late */
    assert_int_equal(r.st.steps_closed_by[DIAG_CLOSE_TIMEOUT], 0);
}

static void test_stream_delayed_5s(void **state)
{
    /* one stream always 5 s behind: it holds the watermark, nothing is late */
    struct job j = {
        .c = {.fault = DIAG_SCN_HEALTHY, .seed = 3}, .steps = 300, .deliver = stream3_delayed_5s};
    struct run r;

    run_job(&j, &r);
    expect_quiet(&r);
    assert_int_equal(r.st.late, 0);
    assert_true(r.st.steps_closed_by[DIAG_CLOSE_COMPLETE] >= 299);
}

static void test_stream_stalled_5s(void **state)
{
    struct job j = {
        .c = {.fault = DIAG_SCN_HEALTHY, .seed = 4}, .steps = 300, .deliver = stream3_stalled};
    struct run r;

    stall_len = 5 * SEC;
    run_job(&j, &r);
    expect_quiet(&r);
    assert_int_equal(r.st.late, 0); /* held: within diag.stream_hold */
    assert_int_equal(r.st.steps_closed_by[DIAG_CLOSE_BUDGET], 0);
}

static void test_stalled_stream_holds_only_up_to_hold(void **state)
{
    /* stream 3 stops 30 s at 10 s: 5 s into the stall the watermark is
     * still at its last step; 12 s in (past diag.stream_hold, 10 s), the
     * other streams moved it on. One node finding, no rank page; after the
     * replay, late records amend within the horizon, the rest is dropped
     * from diagnosis (still counted). */
    struct job j = {
        .c = {.fault = DIAG_SCN_HEALTHY, .seed = 5}, .steps = 600, .deliver = stream3_stalled};
    struct run r;

    stall_len = 30 * SEC;
    probe_at[0] = T0 + 15 * SEC;
    probe_at[1] = T0 + 22 * SEC;
    run_job(&j, &r);
    memset(probe_at, 0, sizeof(probe_at));
    assert_int_equal(r.pages, 0);
    assert_int_equal(r.node_silent, 1);
    assert_non_null(strstr(r.node_evidence, "agent-3"));
    assert_non_null(strstr(r.node_evidence, "24-31"));
    /* delivered by stream 3 before the stall: steps generated before ~9.5 s */
    assert_true(r.wm_probe[0] <= 100);
    assert_true(r.wm_probe[1] >= 200);
    assert_true(r.st.late > 0);
    assert_true(r.st.amended > 0);
    assert_true(r.st.dropped_horizon > 0);
    assert_int_equal(r.st.late, r.st.amended + r.st.dropped_horizon + r.st.dropped_memory);
}

static void test_clock_skew_2s(void **state)
{
    /* every node's clock off by up to +-2 s (collective and step times) */
    struct job j = {.c = {.fault = DIAG_SCN_HEALTHY, .seed = 6, .clock_skew_ns = 2e9},
                    .steps = 300,
                    .deliver = stream3_delayed_5s};
    struct run r;

    run_job(&j, &r);
    expect_quiet(&r);
}

static void test_startup_spread(void **state)
{
    struct job a = {
        .c = {.fault = DIAG_SCN_HEALTHY, .seed = 7}, .steps = 300, .deliver = started_apart};
    struct job b = {
        .c = {.fault = DIAG_SCN_HEALTHY, .seed = 8}, .steps = 300, .deliver = joined_late};
    struct run r;

    run_job(&a, &r); /* agents 1.3 s apart: the start-up grace waits for them */
    expect_quiet(&r);
    assert_int_equal(r.st.late, 0);
    run_job(&b, &r); /* ranks first seen up to 4.5 s late: never paged */
    expect_quiet(&r);
}

static void test_whole_stream_silent_is_one_node_finding(void **state)
{
    struct job j = {
        .c = {.fault = DIAG_SCN_HEALTHY, .seed = 9}, .steps = 500, .deliver = stream2_quits};
    struct run r;

    run_job(&j, &r);
    assert_int_equal(r.pages, 0); /* not 8 rank pages */
    assert_int_equal(r.node_silent, 1);
    assert_non_null(strstr(r.node_evidence, "agent-2"));
    assert_non_null(strstr(r.node_evidence, "8 ranks 16-23"));
}

static void test_cut_off_stream_is_unreachable_not_silent(void **state)
{
    /* stream 3 cut off 40 s at 10 s (its agent spools, then replays): with
     * the collector knowing its stream ended, no node finding; without, one */
    struct job j = {.c = {.fault = DIAG_SCN_HEALTHY, .seed = 5},
                    .steps = 600,
                    .deliver = stream3_stalled,
                    .o = {.link = test_link}};
    struct run r;

    stall_len = 40 * SEC;
    link_agent = "agent-3";
    link_down_ns = T0 + 10 * SEC + 500 * MS;
    link_up_ns = T0 + 50 * SEC;
    run_job(&j, &r);
    assert_int_equal(r.node_silent, 0);
    assert_int_equal(r.pages, 0);
    j.o.link = NULL;
    run_job(&j, &r);
    assert_int_equal(r.node_silent, 1);
    link_agent = NULL;
}

static void test_back_but_quiet_is_silent_from_its_return(void **state)
{
    /* stream 2 stops at step 100 (10 s) and its link drops; it comes back
     * and sends nothing: silent diag.silence (30 s) after it came back, not
     * before; the job delivers until ~50 s */
    struct job j = {.c = {.fault = DIAG_SCN_HEALTHY, .seed = 9},
                    .steps = 500,
                    .deliver = stream2_quits,
                    .o = {.link = test_link}};
    struct run r;

    link_agent = "agent-2";
    link_down_ns = T0 + 10 * SEC + 500 * MS;
    link_up_ns = T0 + 15 * SEC; /* quiet from 15 s: silent at 45 s */
    run_job(&j, &r);
    assert_int_equal(r.node_silent, 1);
    assert_non_null(strstr(r.node_evidence, "agent-2"));
    link_up_ns = T0 + 25 * SEC; /* silent at 55 s: the job ended before */
    run_job(&j, &r);
    assert_int_equal(r.node_silent, 0);
    assert_int_equal(r.pages, 0);
    link_agent = NULL;
}

static void test_straggler_found_through_outage_and_replay(void **state)
{
    /* a straggler in stream 3, which is cut off 30 s and replays: named with
     * its cause, and nobody else paged */
    struct job j = {
        .c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER, .seed = 10, .fault_rank = 27, .fault_start = 50},
        .steps = 600,
        .deliver = stream3_stalled};
    struct run r;

    stall_len = 30 * SEC;
    run_job(&j, &r);
    assert_true(r.pages >= 1);
    for (uint32_t i = 0; i < r.pages; i++) {
        assert_int_equal(r.paged_rank[i], 27);
        assert_int_equal(r.paged_cause[i], ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    }
}

static void test_late_straggler_amends_persistence(void **state)
{
    /* the straggler's stream stalls 12 s right at onset: its flags of the
     * steps closed without it come from amending, within the horizon */
    struct job j = {
        .c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER, .seed = 11, .fault_rank = 26, .fault_start = 95},
        .steps = 260,
        .deliver = stream3_stalled};
    struct run r;

    stall_len = 12 * SEC;
    run_job(&j, &r);
    assert_true(r.st.amended > 0);
    assert_true(r.pages >= 1);
    for (uint32_t i = 0; i < r.pages; i++)
        assert_int_equal(r.paged_rank[i], 26);
}

static void test_budget_forced_close_counted(void **state)
{
    /* a budget of about 6 steps of 32 ranks (grown with the ranks to at most
     * DIAG_STEPS_GROWTH times that), one stream 5 s behind: the oldest steps
     * are forced closed (counted), and memory stays bounded */
    struct job j = {.c = {.fault = DIAG_SCN_HEALTHY, .seed = 12},
                    .steps = 200,
                    .deliver = stream3_delayed_5s,
                    .o = {.max_open_bytes = 6 * RANKS * DIAG_FRAME_RANK_BYTES}};
    struct run r;

    run_job(&j, &r);
    assert_int_equal(r.pages, 0);
    assert_true(r.st.steps_closed_by[DIAG_CLOSE_BUDGET] > 0);
    assert_true(r.st.late > 0); /* stream 3's records of the forced steps */
    assert_true(r.st.open_bytes <=
                (DIAG_STEPS_GROWTH * 6 + 2) * RANKS * DIAG_FRAME_RANK_BYTES + 65536);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_closes_complete),
        cmocka_unit_test(test_reordered_and_duplicated),
        cmocka_unit_test(test_stream_delayed_5s),
        cmocka_unit_test(test_stream_stalled_5s),
        cmocka_unit_test(test_stalled_stream_holds_only_up_to_hold),
        cmocka_unit_test(test_clock_skew_2s),
        cmocka_unit_test(test_startup_spread),
        cmocka_unit_test(test_whole_stream_silent_is_one_node_finding),
        cmocka_unit_test(test_cut_off_stream_is_unreachable_not_silent),
        cmocka_unit_test(test_back_but_quiet_is_silent_from_its_return),
        cmocka_unit_test(test_straggler_found_through_outage_and_replay),
        cmocka_unit_test(test_late_straggler_amends_persistence),
        cmocka_unit_test(test_budget_forced_close_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
