/* collector/diag/recent_suspects: suspects count by cause while reports name
 * them and leave two windows after the last one; the top straggler is the
 * rank suspect of a rank-level cause (never a node, data skew or a job
 * regression) with the highest slowdown, whatever level's statistic its
 * score is (a z of 41 at L2 is not "more" than a W1 ratio of 0.9 at L3); a
 * (rank, cause) is one entry however often it is reported; full, the oldest
 * entry goes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_report.h"
#include "collector/diag/recent_suspects.h"

/* A report ending at to_step naming n suspects. */
static void report(struct recent_suspects *r, uint64_t to_step, size_t n, const uint32_t *ranks,
                   const Argus__V1__Cause *causes, const double *scores)
{
    Argus__V1__Suspect s[8], *sp[8];
    Argus__V1__Report rep = ARGUS__V1__REPORT__INIT;

    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) {
        argus__v1__suspect__init(&s[i]);
        s[i].rank = ranks[i];
        s[i].cause = causes[i];
        s[i].score = scores[i];
        s[i].slowdown = 1 + scores[i] / 100;
        s[i].level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE;
        s[i].node = "node-x";
        s[i].gpu = (int32_t)(ranks[i] % 8);
        sp[i] = &s[i];
    }
    rep.to_step = to_step;
    rep.suspects = sp;
    rep.n_suspects = n;
    recent_suspects_note(r, &rep);
}

static struct diagnosis_job_series at_step(const struct recent_suspects *r, uint64_t step)
{
    struct diagnosis_job_series s = {.has_step = true, .step = step};

    recent_suspects_summarize(r, 40, &s);
    return s;
}

static void test_counts_and_top(void **state)
{
    static struct recent_suspects r;
    const uint32_t ranks[] = {11, 3, DIAG_RANK_NONE, 5, DIAG_RANK_NONE};
    const Argus__V1__Cause causes[] = {ARGUS__V1__CAUSE__CAUSE_COMPUTE,
                                       ARGUS__V1__CAUSE__CAUSE_DATA_SKEW,
                                       ARGUS__V1__CAUSE__CAUSE_SILENT, ARGUS__V1__CAUSE__CAUSE_LINK,
                                       ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION};
    const double scores[] = {39, 500, 900, 12, 2};

    memset(&r, 0, sizeof(r));
    report(&r, 60, 5, ranks, causes, scores);
    report(&r, 100, 1, ranks, causes, scores); /* rank 11 compute again */
    assert_int_equal(r.n, 5);
    struct diagnosis_job_series s = at_step(&r, 100);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_COMPUTE], 1);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_DATA_SKEW], 1);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_SILENT], 1); /* the node */
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_LINK], 1);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 1);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_HOST], 0);
    /* not data skew (500) nor the silent node (900): compute rank 11 */
    assert_true(s.has_top);
    assert_int_equal(s.top_rank, 11);
    assert_true(s.top_score == 39);
    assert_float_equal(s.top_slowdown, 1.39, 1e-12);
    assert_string_equal(s.top_node, "node-x");
    assert_int_equal(s.top_gpu, 3);
    assert_int_equal(s.top_cause, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(s.top_level, ARGUS__V1__LEVEL__LEVEL_L2_PHASE);

    /* step 140 = 60 + 2 * 40: the report of step 60 still counts */
    assert_int_equal(at_step(&r, 140).suspects[ARGUS__V1__CAUSE__CAUSE_LINK], 1);
    /* past it only rank 11 (named again at 100) remains */
    s = at_step(&r, 141);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_LINK], 0);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_COMPUTE], 1);
    assert_int_equal(s.top_rank, 11);
    s = at_step(&r, 181);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_COMPUTE], 0);
    assert_false(s.has_top);
}

/* One scale: an L3 suspect 1.8x slower than its peers outranks an L2 one
 * 1.1x slower with a larger z; a slowdown not measured (0) is never top. */
static void test_top_by_slowdown(void **state)
{
    static struct recent_suspects r;
    Argus__V1__Suspect s[3], *sp[3];
    Argus__V1__Report rep = ARGUS__V1__REPORT__INIT;
    const uint32_t ranks[] = {3, 7, 9};
    const int levels[] = {ARGUS__V1__LEVEL__LEVEL_L2_PHASE, ARGUS__V1__LEVEL__LEVEL_L3_KERNEL,
                          ARGUS__V1__LEVEL__LEVEL_SILENT};
    const double scores[] = {41, 0.9, 1000}, slowdowns[] = {1.1, 1.8, 0};

    memset(&r, 0, sizeof(r));
    for (int i = 0; i < 3; i++) {
        argus__v1__suspect__init(&s[i]);
        s[i].rank = ranks[i];
        s[i].cause = i < 2 ? ARGUS__V1__CAUSE__CAUSE_COMPUTE : ARGUS__V1__CAUSE__CAUSE_SILENT;
        s[i].level = levels[i];
        s[i].score = scores[i];
        s[i].slowdown = slowdowns[i];
        s[i].node = i ? "node-b" : "node-a";
        s[i].gpu = (int32_t)i;
        sp[i] = &s[i];
    }
    rep.to_step = 50;
    rep.suspects = sp;
    rep.n_suspects = 3;
    recent_suspects_note(&r, &rep);
    struct diagnosis_job_series x = at_step(&r, 60);
    assert_true(x.has_top);
    assert_int_equal(x.top_rank, 7);
    assert_true(x.top_slowdown == 1.8);
    assert_true(x.top_score == 0.9);
    assert_int_equal(x.top_level, ARGUS__V1__LEVEL__LEVEL_L3_KERNEL);
    assert_string_equal(x.top_node, "node-b");
    assert_int_equal(x.top_gpu, 1);
}

static void test_full_drops_oldest(void **state)
{
    static struct recent_suspects r;
    const Argus__V1__Cause compute[] = {ARGUS__V1__CAUSE__CAUSE_COMPUTE};
    const double score[] = {7};

    memset(&r, 0, sizeof(r));
    for (uint32_t k = 0; k <= RECENT_SUSPECTS_MAX; k++) /* one more than fits */
        report(&r, 1000 + k, 1, &k, compute, score);
    assert_int_equal(r.n, RECENT_SUSPECTS_MAX);
    for (size_t i = 0; i < r.n; i++)
        assert_int_not_equal(r.v[i].rank, 0); /* rank 0, the oldest, went */
    struct diagnosis_job_series s = {0};      /* no step yet: everything counts */
    recent_suspects_summarize(&r, 40, &s);
    assert_int_equal(s.suspects[ARGUS__V1__CAUSE__CAUSE_COMPUTE], RECENT_SUSPECTS_MAX);
}

/* GPU-hours lost by cause: summed over reports, the same report again (an
 * amended window: same to_step) replacing its suspects' share. */
static void test_gpu_hours(void **state)
{
    static struct recent_suspects r;
    Argus__V1__Suspect s, *sp = &s;
    Argus__V1__Report rep = ARGUS__V1__REPORT__INIT;

    memset(&r, 0, sizeof(r));
    argus__v1__suspect__init(&s);
    s.rank = 4;
    s.cause = ARGUS__V1__CAUSE__CAUSE_COMPUTE;
    s.gpu_hours_lost = 2;
    rep.suspects = &sp;
    rep.n_suspects = 1;
    rep.to_step = 40;
    recent_suspects_note(&r, &rep);
    s.gpu_hours_lost = 2.5; /* amended */
    recent_suspects_note(&r, &rep);
    rep.to_step = 80;
    s.gpu_hours_lost = 1;
    recent_suspects_note(&r, &rep);
    struct diagnosis_job_series js = at_step(&r, 80);
    assert_float_equal(js.gpu_hours_lost[ARGUS__V1__CAUSE__CAUSE_COMPUTE], 3.5, 1e-9);
    assert_float_equal(js.gpu_hours_lost[ARGUS__V1__CAUSE__CAUSE_LINK], 0, 1e-9);
    js = at_step(&r, 1000); /* a counter: it stays after the suspect left the recent ones */
    assert_float_equal(js.gpu_hours_lost[ARGUS__V1__CAUSE__CAUSE_COMPUTE], 3.5, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_top),
        cmocka_unit_test(test_top_by_slowdown),
        cmocka_unit_test(test_full_drops_oldest),
        cmocka_unit_test(test_gpu_hours),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
