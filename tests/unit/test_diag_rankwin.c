/* collector/diag/diag_rankwin.c: the window rule on hand-built step
 * sequences of a 4-rank data-parallel group (two matched all-reduces per
 * step, as DDP's buckets): a rank that arrives last at most calls, well
 * after the first, while its threads wait for a CPU, is flagged CPU-starved
 * (and its starvation-made compute flag cleared); last arrival that moves
 * from rank to rank, a last arriver whose threads get their CPU, and one
 * that is last by a hair are not. And the evidence a report reads back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_colls.h"
#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_rankwin.h"

enum { RANKS = 4, CALLS = 2, STEPS = 40 };
#define MS 1e6

/* One step's evidence: who arrived last at both calls (-1: a different
 * rank at each), by how much, and each rank's run-queue time. */
struct step_in {
    int last;
    double gap_ms;
    double runq_ms[RANKS];
};

struct fixture {
    struct diag_rankwin w;
    struct diag_groups g;
    struct diag_frame f;
    struct diag_flag flags[RANKS * DIAG_CAUSE_N];
    uint32_t part[RANKS], last[RANKS];
    double chance[RANKS], gap[RANKS];
    struct diag_colls c;
    struct diag_persist p; /* window 40, M = 24 */
};

static void setup_fixture(struct fixture *x)
{
    struct diag_coord co[RANKS];

    memset(x, 0, sizeof(*x));
    for (int r = 0; r < RANKS; r++)
        co[r] = (struct diag_coord){.known = true, .present = true, .dp = (uint32_t)r};
    assert_int_equal(diag_groups_build(&x->g, co, RANKS, DIAG_GROUP_WORK), 0);
    assert_int_equal(x->g.n_groups, 1);
    assert_int_equal(diag_frame_reserve(&x->f, RANKS), 0);
    diag_rankwin_init(&x->w, 40);
    assert_int_equal(diag_rankwin_reserve(&x->w, RANKS), 0);
    diag_persist_init(&x->p, 40, 24);
    assert_int_equal(diag_persist_reserve(&x->p, RANKS), 0);
    x->c.cap = RANKS;
    x->c.part = x->part;
    x->c.last = x->last;
    x->c.chance = x->chance;
    x->c.gap = x->gap;
}

static void teardown_fixture(struct fixture *x)
{
    diag_persist_free(&x->p);
    diag_rankwin_free(&x->w);
    diag_frame_free(&x->f);
    diag_groups_free(&x->g);
}

/* Close one step (300 ms on every rank) with evidence s, then run the rule
 * on fresh flags (compute flags of every rank preset to compute_aux when
 * >= 0). Returns the rule's result. */
static int step(struct fixture *x, uint64_t k, const struct step_in *s, double compute_aux)
{
    diag_frame_reset(&x->f, k, 0);
    memset(x->flags, 0, sizeof(x->flags));
    for (int r = 0; r < RANKS; r++) {
        x->f.ranks[r].present = true;
        x->f.ranks[r].duration_ns = (uint64_t)(300 * MS);
        x->f.ranks[r].runq_ns = (uint64_t)(s->runq_ms[r] * MS);
        x->f.ranks[r].off_cpu_ns = (uint64_t)(100 * MS);
        x->part[r] = CALLS;
        x->chance[r] = CALLS / (double)RANKS;
        x->last[r] = 0;
        x->gap[r] = 0;
        if (compute_aux >= 0)
            x->flags[r * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE] =
                (struct diag_flag){.set = true, .aux = compute_aux};
    }
    if (s->last >= 0) {
        x->last[s->last] = CALLS;
        x->gap[s->last] = s->gap_ms * MS;
    } else { /* the first call's last arriver, then the next rank */
        uint32_t a = (uint32_t)(k % RANKS), b = (uint32_t)((k + 1) % RANKS);
        x->last[a]++;
        x->last[b]++;
        x->gap[a] = x->gap[b] = s->gap_ms * MS;
    }
    x->f.reported = RANKS;
    diag_rankwin_step(&x->w, &x->f, &x->c);
    int n = diag_rankwin_flag(&x->w, &x->g, x->flags, RANKS, &x->p);
    diag_persist_step(&x->p, x->flags, RANKS);
    return n;
}

static const struct diag_flag *host_flag(const struct fixture *x, int r)
{
    return &x->flags[r * DIAG_CAUSE_N + DIAG_CAUSE_HOST];
}

/* Rank 2's CPU is capped from step 10 on: last at every call, 200 ms after
 * the first, run queue 500 ms/step vs ~80 ms. Flagged from its fourth
 * starved step on (last at 10 of the 16 calls of the newest 8 steps), only
 * rank 2, as a CPU-starved host; its
 * compute flag (no kernel data) is cleared, the others' kept. Before, with
 * last arrival spread by chance, nothing. */
static void test_starved_rank_flagged(void **state)
{
    struct fixture x;
    int first = -1, flagged = 0;

    (void)state;
    setup_fixture(&x);
    for (uint64_t k = 0; k < STEPS; k++) {
        struct step_in s = {.last = -1, .gap_ms = 5, .runq_ms = {80, 75, 85, 78}};
        if (k >= 10)
            s = (struct step_in){.last = 2, .gap_ms = 200, .runq_ms = {80, 75, 500, 90}};
        int n = step(&x, k, &s, 0);
        assert_true(n >= 0);
        if (k < 10) {
            assert_int_equal(n, 0);
            continue;
        }
        for (int r = 0; r < RANKS; r++)
            if (r != 2)
                assert_false(host_flag(&x, r)->set);
        if (n) {
            const struct diag_flag *fl = host_flag(&x, 2);
            assert_int_equal(n, 1);
            assert_true(fl->set);
            assert_int_equal(fl->kind, DIAG_WHERE_RUNQ);
            assert_int_equal(fl->level, ARGUS__V1__LEVEL__LEVEL_L2_PHASE);
            assert_true(fl->value > 2 * fl->median);
            assert_true(fl->score > 5);
            assert_false(x.flags[2 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set);
            assert_true(x.flags[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set);
            first = first < 0 ? (int)k : first;
            flagged++;
        }
    }
    assert_int_equal(first, 13);
    assert_int_equal(flagged, STEPS - 13);
    /* Persistence counts every starved step, the 3 before the rule saw it
     * too (k = 10..12), none before: rank 2 pages (24 of 40) at step 33,
     * not 36; nobody else ever has a host finding. */
    assert_int_equal(diag_persist_hits(&x.p, 2, DIAG_CAUSE_HOST), STEPS - 10);
    for (int r = 0; r < RANKS; r++)
        if (r != 2)
            assert_int_equal(diag_persist_hits(&x.p, (uint32_t)r, DIAG_CAUSE_HOST), 0);
    /* What the report reads back over the window. */
    uint32_t mem[RANKS] = {0, 1, 2, 3};
    struct diag_rank_evidence re;
    assert_int_equal(diag_rankwin_get(&x.w, 2, mem, RANKS, &re), 0);
    assert_int_equal(re.part, STEPS * CALLS);
    assert_true(re.last >= (STEPS - 10) * CALLS);
    assert_float_equal(re.gap_ns, 200 * MS, 1e3);
    teardown_fixture(&x);
}

/* A compute flag with the rank's own kernels slow (1.5x the group) stays:
 * that is slow compute, whatever the run queue says. */
static void test_slow_kernels_kept(void **state)
{
    struct fixture x;
    struct step_in s = {.last = 1, .gap_ms = 150, .runq_ms = {60, 400, 70, 65}};

    (void)state;
    setup_fixture(&x);
    for (uint64_t k = 0; k < 8; k++)
        step(&x, k, &s, 1.5);
    assert_true(host_flag(&x, 1)->set);
    assert_true(x.flags[1 * DIAG_CAUSE_N + DIAG_CAUSE_COMPUTE].set);
    teardown_fixture(&x);
}

/* Last arrival that rotates over the ranks (data skew), each step's last
 * rank also the one with the long run queue, or rank 0 waiting for a CPU
 * all along (its run queue alone is no straggler): nobody is flagged,
 * ever. */
static void test_rotating_not_flagged(void **state)
{
    struct fixture x;

    (void)state;
    setup_fixture(&x);
    for (uint64_t k = 0; k < 3 * STEPS; k++) {
        struct step_in s = {.last = (int)(k % RANKS), .gap_ms = 200, .runq_ms = {80, 80, 80, 80}};
        s.runq_ms[k % RANKS] = 600;
        assert_int_equal(step(&x, 2 * k, &s, -1), 0);
        s = (struct step_in){.last = -1, .gap_ms = 200, .runq_ms = {600, 80, 80, 80}};
        assert_int_equal(step(&x, 2 * k + 1, &s, -1), 0); /* split within a step */
        for (uint32_t r = 0; r < RANKS; r++)
            assert_int_equal(diag_persist_hits(&x.p, r, DIAG_CAUSE_HOST), 0);
    }
    teardown_fixture(&x);
}

/* A rank last at every call whose threads get their CPU (a slower but
 * unstarved host: the per-step lateness rule's), or one that is last by
 * 1 ms of 300 (a fixed order of the ranks, not a straggler), or starved by
 * only a few ms over its peers: not flagged here. */
static void test_needs_gap_and_run_queue(void **state)
{
    const struct step_in cases[] = {
        {.last = 3, .gap_ms = 200, .runq_ms = {80, 75, 85, 100}},
        {.last = 3, .gap_ms = 1, .runq_ms = {80, 75, 85, 500}},
        {.last = 3, .gap_ms = 200, .runq_ms = {8, 7, 9, 14}},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fixture x;
        setup_fixture(&x);
        for (uint64_t k = 0; k < STEPS; k++)
            assert_int_equal(step(&x, k, &cases[i], -1), 0);
        teardown_fixture(&x);
    }
}

/* Three members reporting at least: two ranks cannot tell who is slow. */
static void test_small_group(void **state)
{
    struct fixture x;
    struct step_in s = {.last = 0, .gap_ms = 200, .runq_ms = {500, 80, 80, 80}};

    (void)state;
    setup_fixture(&x);
    for (uint64_t k = 0; k < 10; k++) {
        diag_frame_reset(&x.f, k, 0);
        memset(x.flags, 0, sizeof(x.flags));
        for (int r = 0; r < 2; r++) {
            x.f.ranks[r].present = true;
            x.f.ranks[r].duration_ns = (uint64_t)(300 * MS);
            x.f.ranks[r].runq_ns = (uint64_t)(s.runq_ms[r] * MS);
            x.part[r] = CALLS;
            x.chance[r] = 1;
            x.last[r] = r == 0 ? CALLS : 0;
            x.gap[r] = r == 0 ? 200 * MS : 0;
        }
        x.part[2] = x.part[3] = x.last[2] = x.last[3] = 0;
        diag_rankwin_step(&x.w, &x.f, &x.c);
        assert_int_equal(diag_rankwin_flag(&x.w, &x.g, x.flags, RANKS, NULL), 0);
    }
    teardown_fixture(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starved_rank_flagged), cmocka_unit_test(test_slow_kernels_kept),
        cmocka_unit_test(test_rotating_not_flagged), cmocka_unit_test(test_needs_gap_and_run_queue),
        cmocka_unit_test(test_small_group),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
