/* Peer groups from the parallel layout, and persistence of findings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_pipeline.h"

/* 64 ranks, TP=2, PP=4, DP=8, EP=4 (ep = dp % 4), Megatron order. */
static void layout(struct diag_coord *co, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++)
        co[r] = (struct diag_coord){.known = true,
                                    .present = true,
                                    .tp = r % 2,
                                    .pp = (r / 2) % 4,
                                    .dp = r / 8,
                                    .ep = (r / 8) % 4};
}

static void test_work_groups_same_stage_same_tp(void **state)
{
    struct diag_coord co[64];
    struct diag_groups g = {0};
    uint32_t n;

    layout(co, 64);
    assert_int_equal(diag_groups_build(&g, co, 64, DIAG_GROUP_WORK), 0);
    assert_int_equal(g.n_groups, 8); /* 4 stages x 2 TP ranks */
    for (uint32_t gi = 0; gi < g.n_groups; gi++) {
        const uint32_t *m = diag_groups_members(&g, gi, &n);
        assert_int_equal(n, 8); /* one per DP replica */
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(co[m[i]].pp, co[m[0]].pp);
            assert_int_equal(co[m[i]].tp, co[m[0]].tp);
            assert_int_equal(co[m[i]].dp, i); /* ascending rank = ascending dp */
            assert_int_equal(g.group_of[m[i]], gi);
        }
        assert_int_equal(g.stage[gi], co[m[0]].pp);
    }
    /* Rank 21: dp 2, pp 2, tp 1. */
    assert_string_equal(g.label[g.group_of[21]], "pp=2,tp=1");
    diag_groups_free(&g);
}

static void test_expert_groups_and_unknown_ranks(void **state)
{
    struct diag_coord co[64];
    struct diag_groups g = {0};
    uint32_t n;

    layout(co, 64);
    assert_int_equal(diag_groups_build(&g, co, 64, DIAG_GROUP_EXPERT), 0);
    assert_int_equal(g.n_groups, 16); /* 4 stages x 4 EP ranks */
    diag_groups_members(&g, 0, &n);
    assert_int_equal(n, 4);
    assert_string_equal(g.label[g.group_of[8]], "pp=0,ep=1");
    /* Ranks without a Resource share one group; absent ranks have none. */
    co[3].known = false;
    co[5].known = false;
    co[7].present = false;
    assert_int_equal(diag_groups_build(&g, co, 64, DIAG_GROUP_WORK), 0);
    assert_int_equal(g.group_of[3], g.group_of[5]);
    assert_string_equal(g.label[g.group_of[3]], "unknown");
    assert_int_equal(g.group_of[7], DIAG_GROUP_NONE);
    diag_groups_members(&g, g.group_of[3], &n);
    assert_int_equal(n, 2);
    diag_groups_free(&g);
    /* Empty input is fine. */
    assert_int_equal(diag_groups_build(&g, co, 0, DIAG_GROUP_WORK), 0);
    assert_int_equal(g.n_groups, 0);
    diag_groups_free(&g);
}

static void test_persistence_m_of_n(void **state)
{
    struct diag_persist p;
    struct diag_flag flags[4 * DIAG_CAUSE_N];

    diag_persist_init(&p, 10, 6);
    assert_int_equal(diag_persist_reserve(&p, 4), 0);
    for (int step = 0; step < 10; step++) {
        memset(flags, 0, sizeof(flags));
        flags[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set = step % 3 != 0; /* 6 of 10 */
        flags[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].score = step;
        flags[2 * DIAG_CAUSE_N + DIAG_CAUSE_LINK].set = step == 4; /* once */
        diag_persist_step(&p, flags, 4);
    }
    assert_int_equal(diag_persist_hits(&p, 1, DIAG_CAUSE_COMPUTE), 6);
    assert_int_equal(diag_persist_hits(&p, 2, DIAG_CAUSE_LINK), 1);
    assert_int_equal(diag_persist_hits(&p, 0, DIAG_CAUSE_COMPUTE), 0);
    assert_int_equal(diag_persist_hits(&p, 99, DIAG_CAUSE_COMPUTE), 0);
    assert_true(p.last[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].score == 8); /* newest */
    /* Ten clean steps: the window forgets. */
    memset(flags, 0, sizeof(flags));
    for (int step = 0; step < 10; step++)
        diag_persist_step(&p, flags, 4);
    assert_int_equal(diag_persist_hits(&p, 1, DIAG_CAUSE_COMPUTE), 0);
    /* Growing keeps histories. */
    flags[3 * DIAG_CAUSE_N + DIAG_CAUSE_HOST].set = true;
    diag_persist_step(&p, flags, 4);
    assert_int_equal(diag_persist_reserve(&p, 1000), 0);
    assert_int_equal(diag_persist_hits(&p, 3, DIAG_CAUSE_HOST), 1);
    assert_int_equal(diag_persist_hits(&p, 999, DIAG_CAUSE_HOST), 0);
    diag_persist_free(&p);
}

static void test_rotation_counts_transient_ranks(void **state)
{
    struct diag_persist p;
    struct diag_flag flags[64 * DIAG_CAUSE_N];
    uint32_t ranks, steps;

    diag_persist_init(&p, 40, 24);
    assert_int_equal(diag_persist_reserve(&p, 64), 0);
    for (int step = 0; step < 40; step++) {
        memset(flags, 0, sizeof(flags));
        flags[((step * 7) % 64) * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set = true; /* moves */
        flags[10 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set = true;                /* stays */
        diag_persist_step(&p, flags, 64);
    }
    diag_persist_rotation(&p, DIAG_CAUSE_COMPUTE, 64, &ranks, &steps);
    assert_int_equal(steps, 40);
    assert_true(ranks >= 30); /* the moving one visited many ranks, once or twice each */
    assert_int_equal(diag_persist_hits(&p, 10, DIAG_CAUSE_COMPUTE), 40);
    diag_persist_free(&p);
}

static void flag_phase(struct diag_flag *flags, uint32_t r, uint8_t phase, double aux)
{
    flags[r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE] =
        (struct diag_flag){.set = true,
                           .level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE,
                           .kind = DIAG_WHERE_PHASE,
                           .index = phase,
                           .aux = aux};
}

static void test_pipeline_waits_settled(void **state)
{
    struct diag_coord co[64];
    struct diag_flag flags[64 * DIAG_CAUSE_N];
    struct diag_dict d = {0};

    layout(co, 64); /* TP=2, PP=4: pipeline (dp 2, tp 1) = ranks 17, 19, 21, 23 */
    d.n_phase = 2;
    d.phase_backward[1] = true;
    /* Backward: stages 0-2 flagged; the gradients come from stage 2. */
    memset(flags, 0, sizeof(flags));
    flag_phase(flags, 17, 1, 0);
    flag_phase(flags, 19, 1, 0);
    flag_phase(flags, 21, 1, 0);
    flag_phase(flags, 40, 1, 0); /* another pipeline, alone: kept */
    assert_int_equal(diag_pipeline_resolve(co, 64, &d, flags), 2);
    assert_true(flags[21 * DIAG_CAUSE_N].set);
    assert_false(flags[17 * DIAG_CAUSE_N].set || flags[19 * DIAG_CAUSE_N].set);
    assert_true(flags[40 * DIAG_CAUSE_N].set);
    /* Forward: activations come from the lowest flagged stage. */
    memset(flags, 0, sizeof(flags));
    flag_phase(flags, 19, 0, 0);
    flag_phase(flags, 21, 0, 0);
    flag_phase(flags, 23, 0, 0);
    assert_int_equal(diag_pipeline_resolve(co, 64, &d, flags), 2);
    assert_true(flags[19 * DIAG_CAUSE_N].set);
    assert_false(flags[21 * DIAG_CAUSE_N].set || flags[23 * DIAG_CAUSE_N].set);
    /* Kernel evidence (aux > 0) is not second-guessed. */
    memset(flags, 0, sizeof(flags));
    flag_phase(flags, 19, 0, 1.6);
    flag_phase(flags, 21, 0, 1.5);
    assert_int_equal(diag_pipeline_resolve(co, 64, &d, flags), 0);
    assert_true(flags[19 * DIAG_CAUSE_N].set && flags[21 * DIAG_CAUSE_N].set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_work_groups_same_stage_same_tp),
        cmocka_unit_test(test_expert_groups_and_unknown_ranks),
        cmocka_unit_test(test_persistence_m_of_n),
        cmocka_unit_test(test_rotation_counts_transient_ranks),
        cmocka_unit_test(test_pipeline_waits_settled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
