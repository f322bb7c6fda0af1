/* The stored form of a step record (collector/store/store_stepform.h): full
 * records (kernels, phases, collectives, host, hw, top frames) and odd ones
 * round-trip byte for byte through the compact form; received-form values
 * pass through; a record the compact form would not restore keeps its
 * received form; and a store reads both forms back as the records ingested.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "collector/store/store_stepform.h"
#include "tests/unit/store_fixture.h"

#define NK 3
#define NCO 3

/* One record with every part; its pointers point into itself. */
struct rec {
    Argus__V1__StepRecord r;
    Argus__V1__Phase ph[2], *ph_p[2];
    Argus__V1__KernelGroup kg[NK], *kg_p[NK];
    Argus__V1__Cluster cl[NK][2], *cl_p[NK][2];
    Argus__V1__Collective co[NCO], *co_p[NCO];
    Argus__V1__HostCounters host;
    Argus__V1__HwCounters hw;
    Argus__V1__StackFrame fr[2], *fr_p[2];
};

static void rec_fill(struct rec *x, uint32_t rank, uint64_t step)
{
    uint64_t start = T0 + step * 480000000ull;

    argus__v1__step_record__init(&x->r);
    x->r.job = "job-a";
    x->r.rank = rank;
    x->r.step = step;
    x->r.start_unix_ns = start;
    x->r.duration_ns = 480000000ull + rank * 1000;
    x->r.sampled = 1;
    x->r.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_NVTX;
    x->r.kernel_events = 4242;
    for (int p = 0; p < 2; p++) {
        argus__v1__phase__init(&x->ph[p]);
        x->ph[p].name_id = 0x1111111111111111ull * (p + 1);
        x->ph[p].start_ns = p * 200000000ull;
        x->ph[p].duration_ns = 190000000ull + p;
        x->ph[p].stream = 7;
        x->ph_p[p] = &x->ph[p];
    }
    x->r.n_phases = 2;
    x->r.phases = x->ph_p;
    for (int k = 0; k < NK; k++) {
        argus__v1__kernel_group__init(&x->kg[k]);
        x->kg[k].name_id = 0xcbf29ce484222325ull + k;
        x->kg[k].stream = 7 + k;
        x->kg[k].work_id = 0xdead0000u + k;
        for (int c = 0; c < 2; c++) {
            Argus__V1__Cluster *cl = &x->cl[k][c];
            argus__v1__cluster__init(cl);
            cl->count = 10 + c;
            cl->p50_ns = 20000 + 1000 * k + rank + 7 * c;
            cl->p99_ns = cl->p50_ns + 2100;
            cl->min_ns = cl->p50_ns - 900;
            cl->max_ns = cl->p99_ns + 333;
            cl->sum_ns = cl->p50_ns * cl->count + 17;
            x->cl_p[k][c] = cl;
        }
        x->kg[k].n_clusters = k == 1 ? 1 : 2;
        x->kg[k].clusters = x->cl_p[k];
        x->kg_p[k] = &x->kg[k];
    }
    x->r.n_kernels = NK;
    x->r.kernels = x->kg_p;
    for (int c = 0; c < NCO; c++) {
        Argus__V1__Collective *co = &x->co[c];
        argus__v1__collective__init(co);
        co->seq = step * NCO + c;
        co->name_id = 0x51ed270b27ull;
        co->bytes = 64u << 20;
        co->host_arrival_unix_ns = start + 300000000ull + c * 1000;
        co->gpu_start_unix_ns = c == 1 ? 0 : co->host_arrival_unix_ns + 20000; /* 1: unknown */
        co->gpu_end_unix_ns = c == 1 ? 0 : co->gpu_start_unix_ns + 3000000;
        co->host_return_unix_ns = c == 2 ? co->host_arrival_unix_ns - 5 : 0;
        co->stream = 13;
        co->comm_id = 0xabcdef12345ull;
        co->seq_local = c == 2;
        x->co_p[c] = co;
    }
    x->r.n_collectives = NCO;
    x->r.collectives = x->co_p;
    argus__v1__host_counters__init(&x->host);
    x->host.off_cpu_ns = 3000000;
    x->host.launches = 4000;
    x->host.alloc_ns = 12;
    x->r.host = &x->host;
    argus__v1__hw_counters__init(&x->hw);
    x->hw.samples = 3;
    x->hw.sm_clock_mhz = 1980;
    x->hw.temperature_c = 61;
    x->hw.throttle = 0x4;
    x->r.hw = &x->hw;
    for (int i = 0; i < 2; i++) {
        argus__v1__stack_frame__init(&x->fr[i]);
        x->fr[i].name_id = 0x7777000000000000ull + i;
        x->fr[i].self = 5 - i;
        x->fr[i].total = 9;
        x->fr_p[i] = &x->fr[i];
    }
    x->r.n_top_frames = 2;
    x->r.top_frames = x->fr_p;
}

/* Pack r as protobuf-c does; *len its size. */
static uint8_t *pack(const Argus__V1__StepRecord *r, size_t *len)
{
    uint8_t *b = malloc(argus__v1__step_record__get_packed_size(r) + 1);

    *len = argus__v1__step_record__pack(r, b);
    return b;
}

/* Encode r, decode it under its own key, and assert the bytes come back. */
static void assert_round_trip(const Argus__V1__StepRecord *r, bool smaller)
{
    struct store_stepform enc = {0}, dec = {0};
    size_t n, outlen;
    uint8_t *want = pack(r, &n);
    const void *out;
    long len = store_stepform_encode(&enc, r);

    assert_true(len > 0);
    assert_int_equal(enc.buf[0], STORE_STEPFORM_COMPACT);
    if (smaller)
        assert_true((size_t)len < n);
    assert_int_equal(
        store_stepform_decode(&dec, r->job, r->step, r->rank, enc.buf, (size_t)len, &out, &outlen),
        0);
    assert_int_equal(outlen, n);
    assert_memory_equal(out, want, n);
    free(want);
    store_stepform_free(&enc);
    store_stepform_free(&dec);
}

static void test_full_record_round_trips(void **state)
{
    struct rec x;

    (void)state;
    rec_fill(&x, 5, 1234);
    assert_round_trip(&x.r, true);
    /* no kernels, no collectives, rank and step 0, no job */
    x.r.n_kernels = x.r.n_collectives = 0;
    x.r.rank = 0;
    x.r.step = 0;
    x.r.job = "";
    assert_round_trip(&x.r, false);
}

static void test_odd_values_round_trip(void **state)
{
    struct rec x;

    (void)state;
    rec_fill(&x, 9, 77);
    /* quantiles out of order, sums below count x p50, extremes */
    x.cl[0][0].min_ns = x.cl[0][0].p50_ns + 5;
    x.cl[0][0].p99_ns = 3;
    x.cl[0][0].max_ns = 0;
    x.cl[0][0].sum_ns = 1;
    x.cl[0][1].p50_ns = UINT64_MAX;
    x.cl[0][1].sum_ns = UINT64_MAX - 1;
    x.cl[2][0].count = UINT32_MAX;
    /* timestamps before their reference, at it, and far from it */
    x.co[0].host_arrival_unix_ns = 1;
    x.co[0].gpu_start_unix_ns = x.co[0].host_arrival_unix_ns;
    x.co[0].gpu_end_unix_ns = UINT64_MAX;
    x.co[2].host_arrival_unix_ns = x.r.start_unix_ns;
    x.co[2].host_return_unix_ns = x.r.start_unix_ns - 1;
    assert_round_trip(&x.r, false);
}

/* A cluster with a field of a newer agent: the wire walk leaves it to
 * unpacking, and it still comes back. */
static void test_unknown_cluster_field_round_trips(void **state)
{
    uint8_t data[] = {42};
    ProtobufCMessageUnknownField uf = {
        .tag = 15, .wire_type = PROTOBUF_C_WIRE_TYPE_VARINT, .len = 1, .data = data};
    struct rec x;

    (void)state;
    rec_fill(&x, 2, 3);
    x.cl[1][0].base.n_unknown_fields = 1;
    x.cl[1][0].base.unknown_fields = &uf;
    assert_round_trip(&x.r, false);
}

static void test_lossy_keeps_received_form(void **state)
{
    struct store_stepform f = {0};
    struct rec x;

    (void)state;
    rec_fill(&x, 1, 2);
    /* x - start = INT64_MIN: its code would read back as unknown (0) */
    x.co[1].host_arrival_unix_ns = x.r.start_unix_ns + (UINT64_C(1) << 63);
    assert_int_equal(store_stepform_encode(&f, &x.r), 0);
    store_stepform_free(&f);
}

static void test_decode_received_and_bad(void **state)
{
    struct store_stepform f = {0};
    const uint8_t bad[] = {STORE_STEPFORM_COMPACT, 0xff};
    const void *out;
    size_t n, outlen;
    struct rec x;
    uint8_t *b;

    (void)state;
    rec_fill(&x, 3, 4);
    b = pack(&x.r, &n);
    assert_int_equal(store_stepform_decode(&f, "job-a", 4, 3, b, n, &out, &outlen), 0);
    assert_ptr_equal(out, b);
    assert_int_equal(outlen, n);
    assert_int_equal(store_stepform_decode(&f, "job-a", 4, 3, bad, sizeof(bad), &out, &outlen),
                     -EBADMSG);
    free(b);
    store_stepform_free(&f);
}

/* A store holding both forms: a compact record ingested, and one in the
 * received form put as an older collector wrote it; both read back whole. */
static void test_store_reads_both_forms(void **state)
{
    struct fix *fx = *state;
    struct rec x[2];
    Argus__V1__StepRecord *rp[2] = {&x[0].r, &x[1].r};
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    struct got g = {0};
    char err[256] = "", *rerr = NULL;
    size_t kl, n;
    uint8_t *key, *old;

    rec_fill(&x[0], 0, 10);
    rec_fill(&x[1], 1, 10);
    b.agent_id = "agent-1";
    b.epoch = 1;
    b.seq = 1;
    b.n_steps = 1;
    b.steps = rp;
    assert_int_equal(store_ingest(fx->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    old = pack(&x[1].r, &n);
    key = store_job_key("job-a", 10, 8, 1, 4, false, &kl);
    rocksdb_put_cf(fx->s->db, fx->s->wo, fx->s->cf[CF_STEPS], (char *)key, kl, (char *)old, n,
                   &rerr);
    assert_null(rerr);
    assert_int_equal(store_scan_steps(fx->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 2);
    assert_same_step(&g, 0, &x[0].r);
    assert_same_step(&g, 1, &x[1].r);
    got_free(&g);
    assert_int_equal(store_scan_steps(fx->s, "job-a", 0, 10, 10, collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_same_step(&g, 0, &x[0].r);
    got_free(&g);
    free(key);
    free(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_record_round_trips),
        cmocka_unit_test(test_odd_values_round_trip),
        cmocka_unit_test(test_unknown_cluster_field_round_trips),
        cmocka_unit_test(test_lossy_keeps_received_form),
        cmocka_unit_test(test_decode_received_and_bad),
        cmocka_unit_test_setup_teardown(test_store_reads_both_forms, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
