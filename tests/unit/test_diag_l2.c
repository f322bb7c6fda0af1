/* L2: the culprit of a collective is the rank that arrives last and whose
 * collective looks shortest, with clocks aligned from collective end times;
 * waiting ranks are not link suspects; compute vs host cause. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_l2.h"
#include "tools/argus-sim/diag_scenario.h"

enum { RANKS = 8 };
#define MS 1000000ULL
#define T0 1800000000000000000ULL

struct rec {
    Argus__V1__StepRecord s;
    Argus__V1__Phase ph, *php;
    Argus__V1__Collective co, *cop;
    Argus__V1__HostCounters host;
};

/* Host counters of the next build(): off-CPU ms per rank, none when NULL. */
static const double *host_off_ms;

/* Step of 8 ranks: forward fwd_ms[r], then one all-reduce. late_ms[r]
 * delays the rank's arrival; skew_ms[r] shifts its whole clock. */
static void build(struct rec *x, const double *fwd_ms, const double *late_ms, const double *skew_ms)
{
    double last = 0;

    for (int r = 0; r < RANKS; r++) {
        double ready = fwd_ms[r] + late_ms[r];
        last = ready > last ? ready : last;
    }
    for (int r = 0; r < RANKS; r++) {
        struct rec *e = &x[r];
        uint64_t sk = (uint64_t)(int64_t)(skew_ms[r] * MS);
        double ready = fwd_ms[r] + late_ms[r];
        argus__v1__step_record__init(&e->s);
        argus__v1__phase__init(&e->ph);
        argus__v1__collective__init(&e->co);
        e->s.job = "j";
        e->s.rank = (uint32_t)r;
        e->s.start_unix_ns = T0 + sk;
        e->s.duration_ns = (uint64_t)((last + 1) * MS);
        e->ph.name_id = 11;
        e->ph.start_ns = (uint64_t)(late_ms[r] * MS);
        e->ph.duration_ns = (uint64_t)(fwd_ms[r] * MS);
        e->php = &e->ph;
        e->s.phases = &e->php;
        e->s.n_phases = 1;
        e->co.seq = 1;
        e->co.name_id = 22;
        e->co.comm_id = 5;
        e->co.stream = 13;
        e->co.host_arrival_unix_ns = T0 + sk + (uint64_t)((ready - 0.1) * MS);
        e->co.gpu_start_unix_ns = T0 + sk + (uint64_t)(ready * MS);
        e->co.gpu_end_unix_ns = T0 + sk + (uint64_t)((last + 1) * MS) + (uint64_t)r * 100;
        e->cop = &e->co;
        e->s.collectives = &e->cop;
        e->s.n_collectives = 1;
        argus__v1__host_counters__init(&e->host);
        e->host.off_cpu_ns = host_off_ms ? (uint64_t)(host_off_ms[r] * MS) : 0;
        e->s.host = host_off_ms ? &e->host : NULL;
    }
}

static void run(const double *fwd, const double *late, const double *skew, struct diag_flag *flags,
                struct diag_l2_result *res, struct diag_l2 *l2)
{
    struct rec x[RANKS];
    struct diag_frame f = {0};
    struct diag_dict d = {0};
    struct diag_groups g = {0};
    struct diag_coord co[RANKS];

    for (int r = 0; r < RANKS; r++)
        co[r] = (struct diag_coord){.known = true, .present = true, .dp = (uint32_t)r};
    assert_int_equal(diag_groups_build(&g, co, RANKS, DIAG_GROUP_WORK), 0);
    assert_int_equal(diag_frame_reserve(&f, RANKS), 0);
    diag_frame_reset(&f, 0, 0);
    build(x, fwd, late, skew);
    for (int r = 0; r < RANKS; r++)
        assert_int_equal(diag_frame_add_record(&f, &d, &x[r].s), 0);
    assert_int_equal(diag_frame_add_record(&f, &d, &x[2].s), 1); /* duplicate */
    memset(flags, 0, RANKS * DIAG_CAUSE_N * sizeof(*flags));
    assert_int_equal(diag_l2_run(l2, &f, &d, &g, NULL, flags, res), 0);
    diag_frame_free(&f);
    diag_groups_free(&g);
}

static bool is_set(const struct diag_flag *flags, int r, int c)
{
    return flags[r * DIAG_CAUSE_N + c].set;
}

/* Rank 3 arrives 10 ms late at the all-reduce, all phases normal, node
 * clocks skewed; its off-CPU time is off_ms (NULL: no host counters). Its
 * flags and that nobody else has any. */
static const struct diag_flag *late_rank3(struct diag_flag *flags, const double *off_ms)
{
    double fwd[RANKS], late[RANKS] = {0}, skew[RANKS] = {0};
    struct diag_l2_result res;
    struct diag_l2 l2;
    struct diag_l2_options o = {0};

    for (int r = 0; r < RANKS; r++)
        fwd[r] = 10;
    late[3] = 10; /* host stall, or more work, before the collective */
    skew[6] = 30; /* rank 6's node clock is 30 ms ahead: raw, it looks latest */
    diag_l2_init(&l2, &o);
    host_off_ms = off_ms;
    run(fwd, late, skew, flags, &res, &l2);
    host_off_ms = NULL;
    assert_int_equal(res.late_rank, 3);
    assert_float_equal(res.late_ns, 10e6 * 7 / 8, 0.2e6);
    assert_float_equal(diag_l2_offset(&l2, 6) - diag_l2_offset(&l2, 0), 30e6, 2e3);
    for (int r = 0; r < RANKS; r++) {
        assert_false(is_set(flags, r, DIAG_CAUSE_LINK)); /* waiting is not a slow link */
        assert_false(is_set(flags, r, DIAG_CAUSE_COMPUTE));
        if (r != 3)
            for (int c = 0; c < DIAG_CAUSE_N; c++)
                assert_false(is_set(flags, r, c));
    }
    diag_l2_free(&l2);
    return &flags[3 * DIAG_CAUSE_N];
}

/* Late with its threads blocked off-CPU for the stall (its peers blocked
 * as long, but inside the collective, waiting for it): the host. */
static void test_late_arrival_with_host_evidence(void **state)
{
    struct diag_flag flags[RANKS * DIAG_CAUSE_N];
    double off[RANKS];

    for (int r = 0; r < RANKS; r++)
        off[r] = 5 + (r == 3 ? 0 : 10) + 0.1 * r; /* waiters: blocked in the all-reduce */
    off[3] += 10;                                 /* the stall itself */
    const struct diag_flag *f = late_rank3(flags, off);
    assert_true(f[DIAG_CAUSE_HOST].set);
    assert_int_equal(f[DIAG_CAUSE_HOST].kind, DIAG_WHERE_ARRIVAL);
    assert_float_equal(f[DIAG_CAUSE_HOST].aux, 15e6, 0.5e6); /* off-CPU outside collectives */
    assert_false(f[DIAG_CAUSE_IMBALANCE].set);
}

/* Late with the host counters of its peers (it computed meanwhile: on a
 * CPU), or with none: more work, the job's imbalance, never the host. */
static void test_late_arrival_without_host_evidence(void **state)
{
    struct diag_flag flags[RANKS * DIAG_CAUSE_N];
    double off[RANKS];

    for (int r = 0; r < RANKS; r++)
        off[r] = 5 + (r == 3 ? 0 : 10) + 0.1 * r;
    const struct diag_flag *f = late_rank3(flags, off);
    assert_false(f[DIAG_CAUSE_HOST].set);
    assert_true(f[DIAG_CAUSE_IMBALANCE].set);
    assert_int_equal(f[DIAG_CAUSE_IMBALANCE].kind, DIAG_WHERE_ARRIVAL);
    f = late_rank3(flags, NULL);
    assert_false(f[DIAG_CAUSE_HOST].set);
    assert_true(f[DIAG_CAUSE_IMBALANCE].set);
}

/* 8 ranks with kernels, rank 5's forward 1.6x and its kernel busy time
 * too: slower hardware when its kernels are its peers' (work id, count),
 * more work when they are not. Returns the cause rank 5 was flagged with
 * (-1: none); nobody else is flagged. */
static int slow_kernels(uint64_t work5, uint32_t count5, double busy5_ms)
{
    enum { N = 8 };
    struct diag_frame f = {0};
    struct diag_dict d = {0};
    struct diag_groups g = {0};
    struct diag_coord co[N];
    struct diag_flag flags[N * DIAG_CAUSE_N];
    struct diag_l2_result res;
    struct diag_l2 l2;
    struct diag_l2_options o = {0};
    int cause = -1;

    for (uint32_t r = 0; r < N; r++)
        co[r] = (struct diag_coord){.known = true, .present = true, .dp = r};
    assert_int_equal(diag_groups_build(&g, co, N, DIAG_GROUP_WORK), 0);
    assert_int_equal(diag_frame_reserve(&f, N), 0);
    diag_frame_reset(&f, 0, 0);
    d.n_phase = 1;
    d.phase[0] = 11;
    d.n_kernel = 1;
    d.kernel[0] = 55;
    for (uint32_t r = 0; r < N; r++) {
        f.ranks[r].present = true;
        f.ranks[r].duration_ns = 30 * MS;
        f.ranks[r].phase_ns[0] = 10 * MS + r * 10000;
        f.ranks[r].busy_ns = 8 * MS + r * 10000;
        f.ranks[r].kernel_count = 100;
        f.ranks[r].work_id[0] = 0xabc;
    }
    f.ranks[5].phase_ns[0] = 16 * MS;
    f.ranks[5].busy_ns = (uint64_t)(busy5_ms * MS);
    f.ranks[5].work_id[0] = work5;
    f.ranks[5].kernel_count = count5;
    f.reported = N;
    diag_l2_init(&l2, &o);
    memset(flags, 0, sizeof(flags));
    assert_int_equal(diag_l2_run(&l2, &f, &d, &g, NULL, flags, &res), 0);
    for (uint32_t r = 0; r < N; r++)
        for (int c = 0; c < DIAG_CAUSE_N; c++)
            if (is_set(flags, (int)r, c)) {
                assert_int_equal(r, 5);
                cause = c;
            }
    diag_l2_free(&l2);
    diag_frame_free(&f);
    diag_groups_free(&g);
    return cause;
}

static void test_slower_hardware_or_more_work(void **state)
{
    assert_int_equal(slow_kernels(0xabc, 100, 13), DIAG_CAUSE_COMPUTE);   /* same work */
    assert_int_equal(slow_kernels(0, 100, 13), DIAG_CAUSE_COMPUTE);       /* shapes unknown */
    assert_int_equal(slow_kernels(0xdef, 160, 13), DIAG_CAUSE_IMBALANCE); /* other shapes */
    /* shapes unknown, 1.6x the kernels each as fast as its peers' */
    assert_int_equal(slow_kernels(0, 160, 13), DIAG_CAUSE_IMBALANCE);
    /* more kernels but each slower too: the hardware */
    assert_int_equal(slow_kernels(0, 120, 13), DIAG_CAUSE_COMPUTE);
}

static void test_masked_compute_straggler(void **state)
{
    double fwd[RANKS], late[RANKS] = {0}, skew[RANKS] = {0};
    struct diag_flag flags[RANKS * DIAG_CAUSE_N];
    struct diag_l2_result res;
    struct diag_l2 l2;
    struct diag_l2_options o = {0};

    for (int r = 0; r < RANKS; r++) {
        fwd[r] = 10;
        skew[r] = (r % 3) * 4.0;
    }
    fwd[5] = 14; /* slower compute; its collective looks 4 ms shorter */
    diag_l2_init(&l2, &o);
    run(fwd, late, skew, flags, &res, &l2);
    assert_int_equal(res.late_rank, 5);
    assert_true(is_set(flags, 5, DIAG_CAUSE_COMPUTE));
    assert_false(is_set(flags, 5, DIAG_CAUSE_HOST)); /* explained by compute */
    const struct diag_flag *f = &flags[5 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE];
    assert_float_equal(f->value, 14e6, 1e3);
    assert_float_equal(f->median, 10e6, 1e3);
    for (int r = 0; r < RANKS; r++)
        assert_false(is_set(flags, r, DIAG_CAUSE_LINK));
    diag_l2_free(&l2);
}

static void test_clock_offsets_from_generated_job(void **state)
{
    struct diag_scn_config c = {
        .fault = DIAG_SCN_HEALTHY, .tp = 2, .seed = 21, .clock_skew_ns = 20e6};
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_engine *e = diag_engine_new(NULL);
    Argus__V1__StepRecord *const *recs;
    size_t nres;
    uint64_t end;

    assert_non_null(s);
    assert_non_null(e);
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    for (int k = 0; k < 10; k++) {
        size_t n = diag_scn_next(s, &recs, &end);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(diag_engine_add_step(e, recs[i], end), 0);
    }
    /* Node offsets of +-20 ms are recovered to a few microseconds (up to one
     * constant for the whole job). */
    double worst = 0;
    for (uint32_t r = 1; r < nres; r++) {
        double est = diag_engine_clock_offset(e, r) - diag_engine_clock_offset(e, 0);
        double inj = diag_scn_clock_offset(s, r) - diag_scn_clock_offset(s, 0);
        worst = fmax(worst, fabs(est - inj));
    }
    printf("  clock offsets: worst error %.1f us over %zu ranks (injected +-20 ms)\n", worst / 1e3,
           nres);
    assert_true(worst < 20e3);
    diag_engine_free(e);
    diag_scn_free(s);
}

static bool know_moe = true;

static const char *moe_names(void *ctx, uint64_t id)
{
    switch (id) {
    case 11:
        return "forward";
    case 12:
        return "Backward";
    case 33:
        return know_moe ? "MoE_experts" : NULL;
    case 44:
        return "ncclAllToAll";
    default:
        return NULL;
    }
}

static void test_name_classes(void **state)
{
    struct diag_dict d = {0};

    d.n_phase = 3;
    d.phase[0] = 11;
    d.phase[1] = 33;
    d.phase[2] = 12;
    d.n_coll = 1;
    d.coll[0] = 44;
    know_moe = false;
    diag_dict_classify(&d, moe_names, NULL);
    assert_int_equal(d.phase_class[0], DIAG_CLASS_WORK);
    assert_int_equal(d.phase_class[1], DIAG_CLASS_UNKNOWN); /* name not known yet */
    assert_true(diag_dict_coll_expert(&d, 0));
    know_moe = true;
    diag_dict_classify(&d, moe_names, NULL);
    assert_true(diag_dict_phase_expert(&d, 1));
    assert_false(diag_dict_phase_expert(&d, 0));
    assert_true(diag_dict_phase_backward(&d, 2));
    assert_false(diag_dict_phase_backward(&d, 0));
}

/* 16 ranks, EP=4: the expert phase takes 10 ms on even EP ranks and 20 ms on
 * odd ones (different experts, different load); rank 5 (ep 1) takes 24 ms. */
static void test_expert_phase_in_expert_groups(void **state)
{
    enum { N = 16 };
    struct diag_frame f = {0};
    struct diag_dict d = {0};
    struct diag_groups g = {0}, xg = {0};
    struct diag_coord co[N];
    struct diag_flag flags[N * DIAG_CAUSE_N];
    struct diag_l2_result res;
    struct diag_l2 l2;
    struct diag_l2_options o = {0};

    for (uint32_t r = 0; r < N; r++)
        co[r] = (struct diag_coord){.known = true, .present = true, .ep = r % 4, .dp = r};
    assert_int_equal(diag_groups_build(&g, co, N, DIAG_GROUP_WORK), 0);
    assert_int_equal(diag_groups_build(&xg, co, N, DIAG_GROUP_EXPERT), 0);
    assert_int_equal(diag_frame_reserve(&f, N), 0);
    diag_frame_reset(&f, 0, 0);
    d.n_phase = 2;
    d.phase[0] = 11;
    d.phase[1] = 33;
    diag_dict_classify(&d, moe_names, NULL);
    for (uint32_t r = 0; r < N; r++) {
        f.ranks[r].present = true;
        f.ranks[r].duration_ns = 50 * MS;
        f.ranks[r].phase_ns[0] = 10 * MS + r * 1000;
        f.ranks[r].phase_ns[1] = ((r % 2) ? 20 : 10) * MS + r * 1000;
    }
    f.ranks[5].phase_ns[1] = 24 * MS;
    f.reported = N;
    diag_l2_init(&l2, &o);
    /* Compared with everyone, the bimodal expert phase hides rank 5. */
    memset(flags, 0, sizeof(flags));
    assert_int_equal(diag_l2_run(&l2, &f, &d, &g, NULL, flags, &res), 0);
    for (int r = 0; r < N; r++)
        assert_false(is_set(flags, r, DIAG_CAUSE_COMPUTE));
    /* Within its expert group it stands out, and nobody else does. */
    memset(flags, 0, sizeof(flags));
    assert_int_equal(diag_l2_run(&l2, &f, &d, &g, &xg, flags, &res), 0);
    for (int r = 0; r < N; r++)
        assert_int_equal(is_set(flags, r, DIAG_CAUSE_COMPUTE), r == 5);
    assert_true(flags[5 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].expert);
    assert_int_equal(flags[5 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].index, 1);
    diag_l2_free(&l2);
    diag_frame_free(&f);
    diag_groups_free(&g);
    diag_groups_free(&xg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_arrival_with_host_evidence),
        cmocka_unit_test(test_late_arrival_without_host_evidence),
        cmocka_unit_test(test_slower_hardware_or_more_work),
        cmocka_unit_test(test_masked_compute_straggler),
        cmocka_unit_test(test_clock_offsets_from_generated_job),
        cmocka_unit_test(test_name_classes),
        cmocka_unit_test(test_expert_phase_in_expert_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
