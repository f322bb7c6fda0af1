/* L3: W1 between quantile functions rebuilt from KDE clusters (the
 * rebuilding itself is common/clusters, tests/unit/test_clusters.c), scoring
 * within a peer group, whole-group comparison and the job's history. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_l3.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_stats.h"
#include "common/clusters.h"

static Argus__V1__Cluster cl[2];
static Argus__V1__Cluster *clp[2] = {&cl[0], &cl[1]};

static Argus__V1__KernelGroup group_of(size_t n)
{
    Argus__V1__KernelGroup kg = ARGUS__V1__KERNEL_GROUP__INIT;

    kg.clusters = clp;
    kg.n_clusters = n;
    return kg;
}

static void test_w1_between_rebuilt_distributions(void **state)
{
    Argus__V1__KernelGroup kg = group_of(1);
    float a[DIAG_QGRID], b[DIAG_QGRID];

    cl[0] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    cl[0].count = 100;
    cl[0].p50_ns = 100000;
    cl[0].p99_ns = 130000;
    clusters_quantile_grid(&kg, a, DIAG_QGRID);
    cl[0].p50_ns = 200000; /* the same shape, twice as slow */
    cl[0].p99_ns = 260000;
    clusters_quantile_grid(&kg, b, DIAG_QGRID);
    /* Scaling by 2: W1 = the mean itself, so relative W1 = 1. */
    assert_float_equal(diag_stats_w1(a, b, DIAG_QGRID) / diag_stats_qmean(a, DIAG_QGRID), 1.0,
                       1e-3);
}

enum { RANKS = 32 };

struct fixture {
    struct diag_frame f;
    struct diag_dict d;
    struct diag_groups g;
    struct diag_l3 l3;
    struct diag_flag flags[RANKS * DIAG_CAUSE_N];
};

/* 32 ranks, 4 peer groups (tp = rank % 4), one compute kernel whose median
 * is 100 us times factor[rank] (with a small rank-dependent wobble). */
static void fill(struct fixture *x, const double *factor)
{
    Argus__V1__KernelGroup kg = group_of(1);

    diag_frame_reset(&x->f, 0, 0);
    memset(x->flags, 0, sizeof(x->flags));
    cl[0] = (Argus__V1__Cluster)ARGUS__V1__CLUSTER__INIT;
    for (uint32_t r = 0; r < RANKS; r++) {
        struct diag_rank_step *s = &x->f.ranks[r];
        cl[0].count = 100;
        cl[0].p50_ns = (uint64_t)(100000 * factor[r] * (1 + 0.01 * (r % 3)));
        cl[0].p99_ns = cl[0].p50_ns * 13 / 10;
        s->present = true;
        assert_int_equal(clusters_quantile_grid(&kg, x->f.q[r][0], DIAG_QGRID), 0);
        s->kernel_mask = 1;
    }
    x->f.reported = RANKS;
}

static int setup(void **state)
{
    static struct fixture x;
    struct diag_coord co[RANKS];
    struct diag_l3_options o = {0};

    memset(&x, 0, sizeof(x));
    for (uint32_t r = 0; r < RANKS; r++)
        co[r] = (struct diag_coord){.known = true, .present = true, .tp = r % 4, .dp = r / 4};
    assert_int_equal(diag_groups_build(&x.g, co, RANKS, DIAG_GROUP_WORK), 0);
    assert_int_equal(diag_frame_reserve(&x.f, RANKS), 0);
    x.d.n_kernel = 1;
    x.d.kernel[0] = 42;
    x.d.kernel_stream[0] = 7;
    diag_l3_init(&x.l3, &o);
    *state = &x;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *x = *state;

    diag_groups_free(&x->g);
    diag_frame_free(&x->f);
    diag_l3_free(&x->l3);
    return 0;
}

static uint32_t flagged(const struct fixture *x, bool *group_wide)
{
    uint32_t n = 0;

    for (uint32_t r = 0; r < RANKS; r++) {
        const struct diag_flag *f = &x->flags[r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE];
        if (f->set) {
            n++;
            if (group_wide)
                *group_wide = f->group_wide;
        }
    }
    return n;
}

static void test_rank_scored_against_group(void **state)
{
    struct fixture *x = *state;
    struct diag_l3_result res;
    double factor[RANKS];

    for (int i = 0; i < RANKS; i++)
        factor[i] = 1;
    fill(x, factor);
    assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
    assert_int_equal(flagged(x, NULL), 0);
    factor[9] = 1.5; /* group tp=1 */
    fill(x, factor);
    assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
    assert_int_equal(flagged(x, NULL), 1);
    const struct diag_flag *f = &x->flags[9 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE];
    assert_true(f->set && f->level == ARGUS__V1__LEVEL__LEVEL_L3_KERNEL);
    assert_float_equal(f->score, 0.5, 0.05); /* W1 = half the reference mean */
    assert_false(f->group_wide);
    /* Faster than the group is not a straggler. */
    factor[9] = 0.5;
    fill(x, factor);
    assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
    assert_int_equal(flagged(x, NULL), 0);
}

static void test_whole_group_does_not_hide(void **state)
{
    struct fixture *x = *state;
    struct diag_l3_result res;
    double factor[RANKS];
    bool wide = false;

    for (int i = 0; i < RANKS; i++)
        factor[i] = i % 4 == 2 ? 1.5 : 1; /* all 8 members of tp=2 */
    fill(x, factor);
    assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
    assert_int_equal(flagged(x, &wide), 8);
    assert_true(wide);
    for (uint32_t r = 2; r < RANKS; r += 4)
        assert_true(x->flags[r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set);
    /* Half the groups slow is not one bad group. */
    for (int i = 0; i < RANKS; i++)
        factor[i] = i % 4 >= 2 ? 1.5 : 1;
    fill(x, factor);
    assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
    assert_int_equal(flagged(x, NULL), 0);
}

static void test_job_against_its_history(void **state)
{
    struct fixture *x = *state;
    struct diag_l3_result res;
    double factor[RANKS];

    for (int i = 0; i < RANKS; i++)
        factor[i] = 1;
    for (int k = 0; k < 15; k++) {
        fill(x, factor);
        assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
        assert_true(res.job_shift < 0.01);
    }
    for (int i = 0; i < RANKS; i++)
        factor[i] = 1.3; /* everyone slower: nobody stands out in a group */
    for (int k = 0; k < 5; k++) {
        fill(x, factor);
        assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
        assert_int_equal(flagged(x, NULL), 0);
        assert_float_equal(res.job_shift, 0.3, 0.02); /* history frozen while off */
        assert_int_equal(res.job_kernel, 0);
    }
    diag_l3_rebase(&x->l3);
    fill(x, factor);
    assert_int_equal(diag_l3_run(&x->l3, &x->f, &x->d, &x->g, x->flags, &res), 0);
    assert_true(res.job_shift < 0.01);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_w1_between_rebuilt_distributions),
        cmocka_unit_test_setup_teardown(test_rank_scored_against_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_group_does_not_hide, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_against_its_history, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
