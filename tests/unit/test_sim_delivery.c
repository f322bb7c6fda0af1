/* tools/argus-sim delivery schedule (delivery.h) and restamping (restamp.h):
 * batch ages and sizes, delay and jitter bounds, start spread, stall and
 * outage windows, replay ordering, clock offsets in records and frames,
 * option parsing errors, determinism. No network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/frame.h"
#include "common/wire_steps.h"
#include "tools/argus-sim/delivery.h"
#include "tools/argus-sim/restamp.h"

#define SEC 1000000000ull
#define MS 1000000ull
#define NAGENTS 8

static const uint32_t nranks[NAGENTS] = {8, 8, 8, 8, 8, 8, 8, 8};

static struct delivery_options base(enum delivery_mode mode)
{
    return (struct delivery_options){
        .mode = mode,
        .rate = 10,
        .steps = 100,
        .steps_per_batch = 2,
        .max_age_ns = SEC,
        .max_records = 512,
        .seed = 7,
    };
}

static struct delivery_plan *plan(const struct delivery_options *o)
{
    struct delivery_plan *p = NULL;
    char err[200] = "";

    assert_int_equal(delivery_plan_new(o, NAGENTS, nranks, &p, err, sizeof(err)), 0);
    assert_non_null(p);
    return p;
}

/* Every agent's batches cover steps 0..steps-1 once, in order, and sends
 * never go backwards. */
static void check_cover(const struct delivery_plan *p, uint64_t steps)
{
    for (uint32_t a = 0; a < NAGENTS; a++) {
        uint64_t next = 0, last_send = 0;
        for (size_t k = 0; k < delivery_plan_batches(p, a); k++) {
            const struct delivery_batch *b = delivery_plan_batch(p, a, k);
            assert_int_equal(b->first_step, next);
            assert_true(b->nsteps >= 1);
            assert_true(b->send_ns >= b->seal_ns);
            assert_true(b->send_ns >= last_send);
            assert_int_equal(delivery_plan_find(p, a, b->first_step), k);
            assert_int_equal(delivery_plan_find(p, a, b->first_step + b->nsteps - 1), k);
            next += b->nsteps;
            last_send = b->send_ns;
        }
        assert_int_equal(next, steps);
        assert_int_equal(delivery_plan_find(p, a, steps), SIZE_MAX);
    }
}

static void test_lockstep(void **state)
{
    struct delivery_options o = base(DELIVERY_LOCKSTEP);
    struct delivery_plan *p = plan(&o);

    check_cover(p, o.steps);
    for (uint32_t a = 0; a < NAGENTS; a++) {
        assert_int_equal(delivery_plan_batches(p, a), 50);
        for (size_t k = 0; k < 50; k++) {
            const struct delivery_batch *b = delivery_plan_batch(p, a, k);
            uint64_t want = (uint64_t)(1e8 * a / NAGENTS + 1e8 * 2 * k); /* what argus-sim did */
            assert_int_equal(b->nsteps, 2);
            assert_true(b->send_ns + 1 >= want && b->send_ns <= want + 1);
            assert_int_equal(b->send_ns, b->seal_ns);
        }
    }
    assert_false(delivery_plan_restamps(p));
    delivery_plan_free(p);
}

/* Age batching: a batch holds the steps of one max_age and is sealed when
 * its first step is max_age old; every agent at the same phase. */
static void test_age(void **state)
{
    struct delivery_options o = base(DELIVERY_AGE);
    o.steps = 95;
    struct delivery_plan *p = plan(&o);

    check_cover(p, o.steps);
    for (uint32_t a = 0; a < NAGENTS; a++) {
        assert_int_equal(delivery_plan_batches(p, a), 10);
        for (size_t k = 0; k < 10; k++) {
            const struct delivery_batch *b = delivery_plan_batch(p, a, k);
            assert_int_equal(b->nsteps, k < 9 ? 10 : 5);
            assert_int_equal(b->first_step, 10 * k);
            assert_true(b->seal_ns >= (k + 1) * SEC - 1 && b->seal_ns <= (k + 1) * SEC + 1);
            assert_int_equal(b->send_ns, b->seal_ns); /* no delay in age mode */
            assert_false(b->replay);
        }
    }
    assert_true(delivery_plan_restamps(p));
    delivery_plan_free(p);
}

/* A full batch (max_records) is sealed when its last step arrives. */
static void test_age_full(void **state)
{
    struct delivery_options o = base(DELIVERY_AGE);
    o.max_records = 40; /* 5 steps of 8 ranks */
    struct delivery_plan *p = plan(&o);

    check_cover(p, o.steps);
    for (size_t k = 0; k < delivery_plan_batches(p, 0); k++) {
        const struct delivery_batch *b = delivery_plan_batch(p, 0, k);
        assert_int_equal(b->nsteps, 5);
        if (k + 1 < delivery_plan_batches(p, 0)) /* not the last: sealed by size */
            assert_true(b->seal_ns >= (b->first_step + 4) * 100 * MS - 1 &&
                        b->seal_ns <= (b->first_step + 4) * 100 * MS + 1);
    }
    delivery_plan_free(p);
}

/* Realistic: per-agent batcher phase, delay and jitter within their bounds,
 * agents no longer in lockstep; the same seed gives the same plan. */
static void test_realistic(void **state)
{
    struct delivery_options o = base(DELIVERY_REALISTIC);
    o.delay_ns = 100 * MS;
    o.jitter_ns = 300 * MS;
    struct delivery_plan *p = plan(&o), *q = plan(&o);
    int distinct_first = 0;

    check_cover(p, o.steps);
    for (uint32_t a = 0; a < NAGENTS; a++) {
        const struct delivery_batch *b0 = delivery_plan_batch(p, a, 0);
        assert_true(b0->seal_ns <= SEC);
        if (b0->nsteps != delivery_plan_batch(p, 0, 0)->nsteps)
            distinct_first++;
        for (size_t k = 0; k < delivery_plan_batches(p, a); k++) {
            const struct delivery_batch *b = delivery_plan_batch(p, a, k);
            const struct delivery_batch *c = delivery_plan_batch(q, a, k);
            assert_true(b->send_ns - b->seal_ns <= o.delay_ns + o.jitter_ns);
            assert_memory_equal(b, c, sizeof(*b));
            if (k > 0)
                assert_true(b->nsteps <= 10);
        }
    }
    assert_true(distinct_first > 0); /* phases differ */
    delivery_plan_free(q);
    o.seed = 8;
    q = plan(&o);
    assert_true(memcmp(delivery_plan_batch(p, 3, 2), delivery_plan_batch(q, 3, 2),
                       sizeof(struct delivery_batch)) != 0 ||
                memcmp(delivery_plan_batch(p, 5, 4), delivery_plan_batch(q, 5, 4),
                       sizeof(struct delivery_batch)) != 0);
    delivery_plan_free(p);
    delivery_plan_free(q);
}

/* Start spread: each agent's first seal moves by a part of the spread. */
static void test_start_spread(void **state)
{
    struct delivery_options o = base(DELIVERY_AGE);
    o.start_spread_ns = 5 * SEC;
    struct delivery_plan *p = plan(&o);
    uint64_t lo = UINT64_MAX, hi = 0;

    check_cover(p, o.steps);
    for (uint32_t a = 0; a < NAGENTS; a++) {
        uint64_t seal = delivery_plan_batch(p, a, 0)->seal_ns;
        assert_true(seal >= SEC && seal < 6 * SEC);
        lo = seal < lo ? seal : lo;
        hi = seal > hi ? seal : hi;
    }
    assert_true(hi - lo > SEC); /* 8 agents over 5 s: spread out */
    delivery_plan_free(p);
}

/* A stall holds node 2's sends to the end of the window, nothing else. */
static void test_stall(void **state)
{
    struct delivery_options o = base(DELIVERY_AGE);
    struct delivery_window w = {2, 3500 * MS, 5 * SEC};
    o.stalls = &w;
    o.nstalls = 1;
    struct delivery_plan *p = plan(&o);
    uint64_t until;
    bool outage;
    int held = 0;

    check_cover(p, o.steps);
    for (size_t k = 0; k < delivery_plan_batches(p, 2); k++) {
        const struct delivery_batch *b = delivery_plan_batch(p, 2, k);
        assert_false(b->send_ns >= w.at_ns && b->send_ns < w.at_ns + w.len_ns);
        assert_false(b->replay);
        if (b->seal_ns >= w.at_ns && b->seal_ns < w.at_ns + w.len_ns) {
            assert_int_equal(b->send_ns, w.at_ns + w.len_ns);
            held++;
        }
    }
    assert_int_equal(held, 5); /* seals at 4..8 s */
    assert_int_equal(delivery_plan_batch(p, 1, 4)->send_ns, delivery_plan_batch(p, 1, 4)->seal_ns);
    assert_true(delivery_plan_blocked(p, 2, 4 * SEC, &until, &outage));
    assert_false(outage);
    assert_int_equal(until, w.at_ns + w.len_ns);
    assert_false(delivery_plan_blocked(p, 2, w.at_ns + w.len_ns, &until, &outage));
    assert_false(delivery_plan_blocked(p, 3, 4 * SEC, &until, &outage));
    delivery_plan_free(p);
}

/* An outage spools node 5's batches and replays them in seal order at the
 * end; overlapping windows chain. */
static void test_outage(void **state)
{
    struct delivery_options o = base(DELIVERY_REALISTIC);
    struct delivery_window w[2] = {{5, 2 * SEC, 3 * SEC}, {5, 4 * SEC, 2 * SEC}};
    o.jitter_ns = 200 * MS;
    o.outages = w;
    o.noutages = 2;
    struct delivery_plan *p = plan(&o);
    uint64_t until, prev_step = 0;
    bool outage;
    int replayed = 0;

    check_cover(p, o.steps);
    for (size_t k = 0; k < delivery_plan_batches(p, 5); k++) {
        const struct delivery_batch *b = delivery_plan_batch(p, 5, k);
        assert_false(b->send_ns >= 2 * SEC && b->send_ns < 6 * SEC);
        if (b->replay) {
            assert_int_equal(b->send_ns, 6 * SEC);
            assert_true(b->first_step >= prev_step);
            replayed++;
        }
        prev_step = b->first_step;
    }
    assert_true(replayed >= 3);
    assert_true(delivery_plan_blocked(p, 5, 5 * SEC, &until, &outage));
    assert_true(outage);
    assert_int_equal(until, 6 * SEC);
    for (size_t k = 0; k < delivery_plan_batches(p, 4); k++)
        assert_false(delivery_plan_batch(p, 4, k)->replay);
    delivery_plan_free(p);
}

static void test_parse(void **state)
{
    struct delivery_window *w;
    struct delivery_offset *off;
    char err[200];

    assert_int_equal(delivery_parse_windows("", &w, err, sizeof(err)), 0);
    free(w);
    assert_int_equal(delivery_parse_windows("3:1.5:5,7:0:30", &w, err, sizeof(err)), 2);
    assert_int_equal(w[0].node, 3);
    assert_int_equal(w[0].at_ns, 1500 * MS);
    assert_int_equal(w[0].len_ns, 5 * SEC);
    assert_int_equal(w[1].node, 7);
    assert_int_equal(w[1].len_ns, 30 * SEC);
    free(w);
    const char *bad[] = {"3:1", "x:1:2", "-1:0:1", "1.5:0:1", "1:2:0", "1:2:3,", "1:2:3;4:5:6"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_int_equal(delivery_parse_windows(bad[i], &w, err, sizeof(err)), -EINVAL);
        assert_null(w);
        assert_true(strlen(err) > 0);
    }
    assert_int_equal(delivery_parse_offsets("1:-2,4:2.5", &off, err, sizeof(err)), 2);
    assert_int_equal(delivery_offset_of(off, 2, 1), -2 * (int64_t)SEC);
    assert_int_equal(delivery_offset_of(off, 2, 4), 2500 * (int64_t)MS);
    assert_int_equal(delivery_offset_of(off, 2, 0), 0);
    free(off);
    assert_int_equal(delivery_parse_offsets("1", &off, err, sizeof(err)), -EINVAL);
}

static void test_plan_errors(void **state)
{
    struct delivery_options o = base(DELIVERY_REALISTIC);
    struct delivery_window w = {NAGENTS, 0, SEC};
    struct delivery_offset off = {NAGENTS + 3, SEC};
    struct delivery_plan *p = (struct delivery_plan *)1;
    char err[200] = "";

    o.rate = 0;
    assert_int_equal(delivery_plan_new(&o, NAGENTS, nranks, &p, err, sizeof(err)), -EINVAL);
    assert_null(p);
    assert_non_null(strstr(err, "rate"));
    o = base(DELIVERY_AGE);
    o.outages = &w;
    o.noutages = 1;
    assert_int_equal(delivery_plan_new(&o, NAGENTS, nranks, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--outage names node 8"));
    o = base(DELIVERY_LOCKSTEP);
    o.offsets = &off;
    o.noffsets = 1;
    assert_int_equal(delivery_plan_new(&o, NAGENTS, nranks, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--clock_offset"));
}

/* A clock offset is the plan's, moves a record's absolute times only, and
 * makes lockstep restamp. */
static void test_clock_offset(void **state)
{
    struct delivery_options o = base(DELIVERY_LOCKSTEP);
    struct delivery_offset off = {6, -2 * (int64_t)SEC};
    o.offsets = &off;
    o.noffsets = 1;
    struct delivery_plan *p = plan(&o);
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__Phase ph = ARGUS__V1__PHASE__INIT, *php = &ph;
    Argus__V1__Collective c = ARGUS__V1__COLLECTIVE__INIT, *cp = &c;

    assert_int_equal(delivery_plan_clock_offset(p, 6), -2 * (int64_t)SEC);
    assert_int_equal(delivery_plan_clock_offset(p, 5), 0);
    assert_true(delivery_plan_restamps(p));
    r.start_unix_ns = 100 * SEC;
    r.duration_ns = SEC;
    ph.start_ns = 5;
    r.n_phases = 1;
    r.phases = &php;
    c.host_arrival_unix_ns = 100 * SEC + 10;
    c.gpu_start_unix_ns = 100 * SEC + 20;
    c.gpu_end_unix_ns = 0; /* unknown stays unknown */
    r.n_collectives = 1;
    r.collectives = &cp;
    restamp_record(&r, delivery_plan_clock_offset(p, 6));
    assert_int_equal(r.start_unix_ns, 98 * SEC);
    assert_int_equal(r.duration_ns, SEC);
    assert_int_equal(ph.start_ns, 5);
    assert_int_equal(c.host_arrival_unix_ns, 98 * SEC + 10);
    assert_int_equal(c.gpu_start_unix_ns, 98 * SEC + 20);
    assert_int_equal(c.gpu_end_unix_ns, 0);
    delivery_plan_free(p);
}

/* A restamped frame reads as the new identity and time, and its steps are
 * where the collector's raw slicer finds them. */
static void test_restamp_frame(void **state)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT, *u;
    Argus__V1__StepRecord s[2] = {ARGUS__V1__STEP_RECORD__INIT, ARGUS__V1__STEP_RECORD__INIT};
    Argus__V1__StepRecord *sp[2] = {&s[0], &s[1]};
    void *frame, *out, *raw;
    size_t len, out_len, raw_len;
    struct wire_steps_reader rd;
    const uint8_t *rec;
    size_t rec_len;
    int n = 0;

    b.agent_id = "a";
    b.epoch = 1;
    b.seq = 1;
    b.created_unix_ns = 5;
    s[0].job = s[1].job = "j";
    s[0].step = 3;
    s[1].step = 4;
    b.n_steps = 2;
    b.steps = sp;
    size_t packed = argus__v1__batch__get_packed_size(&b);
    uint8_t *buf = malloc(packed);
    argus__v1__batch__pack(&b, buf);
    assert_int_equal(frame_encode(buf, packed, FRAME_CODEC_LZ4, &frame, &len), 0);
    assert_int_equal(restamp_frame(frame, len, 1ull << 60, 77, 123456789012345ull, &out, &out_len),
                     0);
    assert_int_equal(frame_decode(out, out_len, NULL, &raw, &raw_len, NULL), 0);
    u = argus__v1__batch__unpack(NULL, raw_len, raw);
    assert_non_null(u);
    assert_int_equal(u->epoch, 1ull << 60);
    assert_int_equal(u->seq, 77);
    assert_int_equal(u->created_unix_ns, 123456789012345ull);
    assert_int_equal(u->n_steps, 2);
    assert_int_equal(u->steps[1]->step, 4);
    wire_steps_reader_init(&rd, raw, raw_len);
    while (wire_steps_next(&rd, &rec, &rec_len) > 0)
        n++;
    assert_int_equal(n, 2);
    argus__v1__batch__free_unpacked(u, NULL);
    void *none;
    size_t none_len;
    assert_true(restamp_frame("junk", 4, 1, 1, 1, &none, &none_len) < 0);
    assert_null(none);
    free(raw);
    free(out);
    free(frame);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lockstep),      cmocka_unit_test(test_age),
        cmocka_unit_test(test_age_full),      cmocka_unit_test(test_realistic),
        cmocka_unit_test(test_start_spread),  cmocka_unit_test(test_stall),
        cmocka_unit_test(test_outage),        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_plan_errors),   cmocka_unit_test(test_clock_offset),
        cmocka_unit_test(test_restamp_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
