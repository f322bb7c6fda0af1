/* The diagnosis engine end to end on generated jobs: each fault class of
 * docs/design.md section 7 must page exactly the right ranks with the right cause
 * (or, for job-level classes, produce the job finding and page nobody); plus
 * step closing (any order, timeouts, silent ranks). The cost per closed step
 * is test_diag_engine_cost.c's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_report.h"
#include "tools/argus-sim/diag_scenario.h"

#define STEPS 100
#define MAX_PAGED 256

struct outcome {
    uint32_t paged_rank[MAX_PAGED];
    Argus__V1__Cause paged_cause[MAX_PAGED];
    uint32_t n_paged;         /* distinct (rank, cause) that paged */
    uint32_t job_findings[8]; /* by cause, rank-less suspects */
    uint32_t l1_spikes;       /* L1 spike findings */
    uint32_t imbalance;       /* IMBALANCE findings */
    uint32_t imbalance_rank;  /* the rank of the last one */
    uint32_t reports;
    uint32_t foreign_ranks; /* suspects or texts naming a rank below g_rank_offset */
    char first_evidence[1024];
    double close_ns_avg, close_ns_max;
};

static uint32_t g_rank_offset; /* added to every rank number of run_scenario */

/* Every rank s names, as its own or as "rank N" in its evidence, is one
 * of the job's (at or above g_rank_offset): none is an index inside. */
static void note_rank_numbers(struct outcome *o, const Argus__V1__Suspect *s)
{
    const char *t = s->evidence ? s->evidence : "";

    o->foreign_ranks += s->rank != DIAG_RANK_NONE && s->rank < g_rank_offset;
    while ((t = strstr(t, "rank ")) != NULL) {
        t += 5;
        if (*t >= '0' && *t <= '9' && strtoul(t, NULL, 10) < g_rank_offset)
            o->foreign_ranks++;
    }
}

static void note_suspect(struct outcome *o, const Argus__V1__Suspect *s)
{
    note_rank_numbers(o, s);
    if (s->rank == DIAG_RANK_NONE) {
        if (s->cause < 8)
            o->job_findings[s->cause]++;
        return;
    }
    if (s->level == ARGUS__V1__LEVEL__LEVEL_L1_ITERATION)
        o->l1_spikes++;
    if (s->cause == ARGUS__V1__CAUSE__CAUSE_IMBALANCE) {
        o->imbalance++;
        o->imbalance_rank = s->rank;
    }
    if (!diag_suspect_pages(s))
        return;
    for (uint32_t i = 0; i < o->n_paged; i++)
        if (o->paged_rank[i] == s->rank && o->paged_cause[i] == s->cause)
            return;
    if (o->n_paged < MAX_PAGED) {
        if (o->n_paged == 0)
            snprintf(o->first_evidence, sizeof(o->first_evidence), "rank %u %s: %s", s->rank,
                     s->where, s->evidence);
        o->paged_rank[o->n_paged] = s->rank;
        o->paged_cause[o->n_paged++] = s->cause;
    }
}

static void drain(struct diag_engine *e, struct outcome *o)
{
    Argus__V1__Report **reps;
    size_t n = diag_engine_take_reports(e, &reps);

    for (size_t i = 0; i < n; i++) {
        assert_non_null(reps[i]->id);
        assert_true(reps[i]->n_suspects > 0);
        assert_true(reps[i]->from_step <= reps[i]->to_step);
        for (size_t j = 0; j < reps[i]->n_suspects; j++)
            note_suspect(o, reps[i]->suspects[j]);
        if (getenv("DIAG_VERBOSE"))
            for (size_t j = 0; j < reps[i]->n_suspects; j++)
                printf("    report %s [%s] rank %d cause %d level %d: %s\n", reps[i]->id,
                       reps[i]->suspects[j]->group, (int)reps[i]->suspects[j]->rank,
                       reps[i]->suspects[j]->cause, reps[i]->suspects[j]->level,
                       reps[i]->suspects[j]->evidence);
        diag_report_free(reps[i]);
        o->reports++;
    }
    free(reps);
}

static uint64_t g_silence_ns; /* diag.silence of run_scenario (0: the default) */
static bool g_reversed;       /* run_scenario feeds each step's records last rank first */

/* Run a scenario through a fresh engine. */
static void run_scenario(const struct diag_scn_config *cfg, uint32_t steps, struct outcome *o)
{
    struct diag_scn_config c0 = *cfg;
    const struct diag_scn_config *c = &c0;
    /* DIAG_SEED=n reruns every scenario with other random draws. */
    if (getenv("DIAG_SEED"))
        c0.seed += strtoull(getenv("DIAG_SEED"), NULL, 10) * 1000;
    struct diag_scn *s = diag_scn_new(c);
    struct diag_options opt = {.step_timeout_ns = 2000000000ULL, .silence_ns = g_silence_ns};
    size_t nres;
    uint64_t end = 0;

    assert_non_null(s);
    opt.name = diag_scn_name;
    opt.name_ctx = s;
    struct diag_engine *e = diag_engine_new(&opt);
    assert_non_null(e);
    memset(o, 0, sizeof(*o));
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++) {
        Argus__V1__Resource r = *res[g_reversed ? nres - 1 - i : i];
        r.rank += g_rank_offset;
        assert_int_equal(diag_engine_add_resource(e, &r), 0);
    }
    for (uint32_t k = 0; k < steps; k++) {
        Argus__V1__StepRecord *const *recs;
        size_t n = diag_scn_next(s, &recs, &end);
        for (size_t i = 0; i < n; i++) {
            Argus__V1__StepRecord r = *recs[g_reversed ? n - 1 - i : i];
            r.rank += g_rank_offset;
            assert_true(diag_engine_add_step(e, &r, end + i) >= 0);
        }
        assert_true(diag_engine_tick(e, end + 1000) >= 0);
        drain(e, o);
    }
    diag_engine_flush(e, end + 10000000000ULL);
    drain(e, o);
    struct diag_engine_stats st;
    diag_engine_get_stats(e, &st);
    o->close_ns_avg = st.steps_closed ? (double)st.close_ns_total / st.steps_closed : 0;
    o->close_ns_max = (double)st.close_ns_max;
    diag_engine_free(e);
    diag_scn_free(s);
}

/* Precision and recall of the pages against the expected (rank, cause). */
static void check_pages(const char *name, const struct outcome *o, const uint32_t *want,
                        uint32_t n_want, Argus__V1__Cause cause)
{
    uint32_t hit = 0;

    for (uint32_t i = 0; i < o->n_paged; i++)
        for (uint32_t j = 0; j < n_want; j++)
            hit += o->paged_rank[i] == want[j] && o->paged_cause[i] == cause;
    double precision = o->n_paged ? (double)hit / o->n_paged : 1.0;
    double recall = n_want ? (double)hit / n_want : 1.0;
    printf("  %-22s precision %.2f recall %.2f (paged %u, expected %u, reports %u, "
           "l1 spikes %u, close avg %.0f us)\n",
           name, precision, recall, o->n_paged, n_want, o->reports, o->l1_spikes,
           o->close_ns_avg / 1e3);
    if (o->n_paged)
        printf("    e.g. %s\n", o->first_evidence);
    for (uint32_t i = 0; i < o->n_paged && precision < 1; i++)
        printf("    paged rank %u cause %d\n", o->paged_rank[i], o->paged_cause[i]);
    assert_true(precision == 1.0);
    assert_true(recall == 1.0);
}

static void test_healthy_pages_nobody(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_HEALTHY, .tp = 2, .seed = 1};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("healthy", &o, NULL, 0, 0);
    assert_int_equal(o.reports, 0);
}

static void test_compute_straggler(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                .tp = 2,
                                .seed = 2,
                                .fault_rank = 37,
                                .fault_start = 20};
    uint32_t want[] = {37};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("compute-straggler", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
    assert_null(strstr(o.first_evidence, "GPU:")); /* its GPU is healthy, as its peers' */
}

/* The same job numbered 65,472-65,535 and fed last rank first: the rank
 * numbers are not the indexes diagnosis keeps (diag_slots.h), and every
 * suspect and text says the rank's own number. */
static void test_high_rank_numbers(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                .tp = 2,
                                .seed = 2,
                                .fault_rank = 37,
                                .fault_start = 20};
    struct diag_scn_config q = {
        .fault = DIAG_SCN_SILENT, .tp = 2, .seed = 9, .fault_rank = 5, .fault_start = 30};
    struct diag_scn_config j = {.fault = DIAG_SCN_JIT, .tp = 2, .seed = 5};
    uint32_t want[] = {65472 + 37}, quiet[] = {65472 + 5};
    struct outcome o;

    (void)state;
    g_rank_offset = 65472;
    g_reversed = true;
    run_scenario(&c, STEPS, &o);
    check_pages("compute-straggler, ranks 65472-65535", &o, want, 1,
                ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(o.foreign_ranks, 0);
    g_silence_ns = 1000000000ULL;
    run_scenario(&q, 60, &o);
    g_silence_ns = 0;
    check_pages("silent, ranks 65472-65535", &o, quiet, 1, ARGUS__V1__CAUSE__CAUSE_SILENT);
    assert_int_equal(o.foreign_ranks, 0);
    run_scenario(&j, STEPS, &o); /* L1 spikes: "rank N arrived ... late" in their texts */
    assert_true(o.l1_spikes > 0);
    assert_int_equal(o.foreign_ranks, 0);
    g_rank_offset = 0;
    g_reversed = false;
}

/* A compute straggler whose GPU is thermally throttled, its peers' not:
 * GPU_THROTTLED, with the numbers. */
static void test_gpu_throttled(void **state)
{
    struct diag_scn_config c = {
        .fault = DIAG_SCN_GPU_THROTTLED, .tp = 2, .seed = 2, .fault_rank = 37, .fault_start = 20};
    uint32_t want[] = {37};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("gpu-throttled", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED);
    assert_non_null(strstr(o.first_evidence, "; GPU: throttled in "));
    assert_non_null(strstr(o.first_evidence, ", HW thermal slowdown in "));
    assert_non_null(strstr(o.first_evidence, " MHz (peers' median), "));
}

/* Every GPU at its power cap: nobody stands out, nobody pages. */
static void test_power_capped_pages_nobody(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_POWER_CAPPED, .tp = 2, .seed = 1};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("power-capped", &o, NULL, 0, 0);
    assert_int_equal(o.reports, 0);
}

static void test_masked_straggler(void **state)
{
    struct diag_scn_config c = {
        .fault = DIAG_SCN_MASKED, .tp = 2, .seed = 3, .fault_rank = 12, .fault_start = 20};
    uint32_t want[] = {12};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("masked-straggler", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_pipeline_stage_straggler(void **state)
{
    /* PP=4, TP=2, DP=8: rank 21 = dp 2, pp 2, tp 1. */
    struct diag_scn_config c = {.fault = DIAG_SCN_PIPELINE,
                                .tp = 2,
                                .pp = 4,
                                .seed = 4,
                                .fault_rank = 21,
                                .fault_start = 20};
    uint32_t want[] = {21};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("pipeline-stage", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_pipeline_stage_straggler_duty_cycle(void **state)
{
    /* Kernels traced on one step in four: the untraced steps must not turn
     * rank 21's waiting pipeline neighbours (ranks 5 and 13) into suspects. */
    struct diag_scn_config c = {.fault = DIAG_SCN_PIPELINE,
                                .tp = 2,
                                .pp = 4,
                                .seed = 16,
                                .fault_rank = 21,
                                .fault_start = 20,
                                .sample_every = 4};
    uint32_t want[] = {21};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("pipeline-duty-cycle", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_pipeline_stage_straggler_no_kernels(void **state)
{
    /* No kernel traces at all (marker channel only): the direction the
     * work flows through the pipeline names the culprit. */
    struct diag_scn_config c = {.fault = DIAG_SCN_PIPELINE,
                                .tp = 2,
                                .pp = 4,
                                .seed = 17,
                                .fault_rank = 21,
                                .fault_start = 20,
                                .no_kernels = true};
    uint32_t want[] = {21};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("pipeline-no-kernels", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_link_degraded_group(void **state)
{
    /* TP=4, DP=16: the grad all-reduce communicator of tp=1 (16 ranks, one
     * whole peer group) is 3x slower. */
    struct diag_scn_config c = {
        .fault = DIAG_SCN_LINK_GROUP, .tp = 4, .seed = 5, .fault_tp = 1, .fault_start = 20};
    uint32_t want[16];
    struct outcome o;

    for (uint32_t d = 0; d < 16; d++)
        want[d] = d * 4 + 1;
    run_scenario(&c, STEPS, &o);
    check_pages("link-degraded-group", &o, want, 16, ARGUS__V1__CAUSE__CAUSE_LINK);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_link_degraded_tp_group(void **state)
{
    /* TP=4: the NVLink of replica 5 (ranks 20-23) is 3x slower. Their phases
     * grow too (they wait inside them) and the whole job waits for them at
     * the grad all-reduce: still a link, on those four ranks only. */
    struct diag_scn_config c = {
        .fault = DIAG_SCN_LINK_TP, .tp = 4, .seed = 12, .fault_rank = 21, .fault_start = 20};
    uint32_t want[] = {20, 21, 22, 23};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("link-degraded-tp", &o, want, 4, ARGUS__V1__CAUSE__CAUSE_LINK);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_host_straggler(void **state)
{
    /* A rank whose host stalls every step (dataloader, CPU contention): late
     * at every collective with normal phases: host, not compute. */
    struct diag_scn_config c = {
        .fault = DIAG_SCN_HOST_STRAGGLER, .tp = 2, .seed = 13, .fault_rank = 42, .fault_start = 20};
    uint32_t want[] = {42};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("host-straggler", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_HOST);
}

static void test_expert_straggler(void **state)
{
    /* EP=4 over 32 DP replicas: odd EP ranks carry 1.5x busier experts, so
     * the expert phase is bimodal in every work group; only expert groups
     * (same stage and EP rank) show rank 22's 1.3x. */
    struct diag_scn_config c = {.fault = DIAG_SCN_EXPERT_STRAGGLER,
                                .tp = 2,
                                .ep = 4,
                                .seed = 19,
                                .fault_rank = 22,
                                .fault_start = 20};
    struct diag_scn_config h = c;
    uint32_t want[] = {22};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("expert-straggler", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    h.fault = DIAG_SCN_HEALTHY;
    run_scenario(&h, STEPS, &o);
    check_pages("expert-healthy", &o, NULL, 0, 0);
}

static void test_jit_stalls_page_nobody(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_JIT, .tp = 2, .seed = 6, .fault_start = 10};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("jit-stalls", &o, NULL, 0, 0);
    assert_true(o.l1_spikes >= 3); /* stalls at steps 30, 53, 76, 99 (last one open) */
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 0);
}

static void test_data_skew_is_imbalance(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_DATA_SKEW, .tp = 2, .seed = 7};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("data-skew", &o, NULL, 0, 0);
    assert_true(o.job_findings[ARGUS__V1__CAUSE__CAUSE_DATA_SKEW] >= 1);
}

static void test_imbalance_pages_nobody(void **state)
{
    /* Rank 42 does 1.6x the work every step (a bigger batch): longer phases
     * and kernel time, but more kernels each as fast as its peers', other
     * launch shapes, host counters normal: a finding for the job's owner
     * naming it, never a page. */
    struct diag_scn_config c = {
        .fault = DIAG_SCN_IMBALANCE, .tp = 2, .seed = 23, .fault_rank = 42, .fault_start = 20};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("imbalance", &o, NULL, 0, 0);
    printf("    %u imbalance findings, last rank %u\n", o.imbalance, o.imbalance_rank);
    assert_true(o.imbalance >= 1);
    assert_int_equal(o.imbalance_rank, 42);
}

static void test_everyone_slower_is_job_regression(void **state)
{
    struct diag_scn_config c = {
        .fault = DIAG_SCN_EVERYONE_SLOWER, .tp = 2, .seed = 8, .fault_start = 50};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("everyone-slower", &o, NULL, 0, 0);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 1);
}

static void test_everyone_slower_without_kernels(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_EVERYONE_SLOWER,
                                .tp = 2,
                                .seed = 18,
                                .fault_start = 50,
                                .no_kernels = true};
    struct outcome o;

    run_scenario(&c, STEPS, &o);
    check_pages("everyone-slower-no-k", &o, NULL, 0, 0);
    assert_int_equal(o.job_findings[ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION], 1);
}

static void test_silent_rank(void **state)
{
    struct diag_scn_config c = {
        .fault = DIAG_SCN_SILENT, .tp = 2, .seed = 9, .fault_rank = 5, .fault_start = 30};
    uint32_t want[] = {5};
    struct outcome o;

    /* 30 steps of the job going on without rank 5 are longer than 1 s */
    g_silence_ns = 1000000000ULL;
    run_scenario(&c, 60, &o);
    g_silence_ns = 0;
    check_pages("silent", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_SILENT);
}

static void test_noisy_job(void **state)
{
    /* 5% jitter on every compute segment (a noisy cluster): still nobody
     * paged when healthy, and a 1.25x straggler still found. */
    struct diag_scn_config h = {.fault = DIAG_SCN_HEALTHY, .tp = 2, .seed = 14, .noise = 0.05};
    struct diag_scn_config c = {.fault = DIAG_SCN_COMPUTE_STRAGGLER,
                                .tp = 2,
                                .seed = 15,
                                .noise = 0.05,
                                .factor = 1.25,
                                .fault_rank = 50,
                                .fault_start = 20};
    uint32_t want[] = {50};
    struct outcome o;

    run_scenario(&h, STEPS, &o);
    check_pages("healthy-noisy", &o, NULL, 0, 0);
    assert_int_equal(o.reports, 0);
    run_scenario(&c, STEPS, &o);
    check_pages("straggler-1.25x-noisy", &o, want, 1, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
}

static void test_reports_bounded(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_JIT, .tp = 2, .seed = 6, .fault_start = 10};
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_options opt = {.max_reports = 1};
    struct diag_engine_stats st;
    Argus__V1__Report **reps;
    size_t nres;
    uint64_t end;

    struct diag_engine *e = diag_engine_new(&opt);
    Argus__V1__Resource *const *res = diag_scn_resources(s, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    for (int k = 0; k < 80; k++) { /* three stalls, never taken */
        Argus__V1__StepRecord *const *recs;
        size_t n = diag_scn_next(s, &recs, &end);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(diag_engine_add_step(e, recs[i], end), 0);
    }
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.reports, 3);
    assert_int_equal(st.reports_dropped, 2);
    assert_int_equal(diag_engine_take_reports(e, &reps), 1);
    assert_int_equal(reps[0]->to_step, 77); /* the newest (stall of step 76) is kept */
    assert_int_equal(strlen(reps[0]->id), 20 + 1 + 8 + 1 + 12);
    diag_report_free(reps[0]);
    free(reps);
    diag_engine_free(e);
    diag_scn_free(s);
}

static void test_api_corner_cases(void **state)
{
    struct diag_scn_config c = {.fault = DIAG_SCN_HEALTHY, .ranks = 16, .tp = 2, .seed = 10};
    struct diag_scn *s = diag_scn_new(&c);
    struct diag_options opt = {.job = diag_scn_job(s), .max_ranks = 16};
    struct diag_engine *e = diag_engine_new(&opt);
    Argus__V1__StepRecord *const *recs;
    Argus__V1__Report **reps;
    struct diag_engine_stats st;
    uint64_t end;

    assert_non_null(e);
    size_t n = diag_scn_next(s, &recs, &end);
    Argus__V1__StepRecord other = *recs[0];
    other.job = "someone-else";
    assert_int_equal(diag_engine_add_step(e, &other, end), -EINVAL);
    other = *recs[0];
    other.rank = 16;
    assert_int_equal(diag_engine_add_step(e, &other, end), -ERANGE);
    for (size_t i = 0; i + 1 < n; i++)
        assert_int_equal(diag_engine_add_step(e, recs[i], end), 0);
    assert_int_equal(diag_engine_add_step(e, recs[0], end), 1); /* duplicate */
    /* No Resource: the engine cannot know that 16 ranks exist, so during the
     * start-up grace the step stays open even when the 16th rank comes. */
    assert_int_equal(diag_engine_add_step(e, recs[n - 1], end), 0);
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed, 0);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(st.rejected, 2);
    assert_int_equal(diag_engine_tick(e, end + 1000), 0);
    assert_int_equal(diag_engine_tick(e, end + 60000000000ULL), 1);
    /* A replay of a record of the closed step: a duplicate, not late. */
    assert_int_equal(diag_engine_add_step(e, recs[1], end + 60000000001ULL), 1);
    /* Step 1, one batch after the grace: all 16 live ranks reported, it
     * closes at the end of the batch. */
    n = diag_scn_next(s, &recs, &end);
    uint64_t t1 = end + 60000000002ULL;
    assert_int_equal(diag_engine_begin_batch(e, "agent-a", t1), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(diag_engine_add_step(e, recs[i], t1), 0);
    assert_int_equal(diag_engine_end_batch(e, t1), 1);
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed_by[DIAG_CLOSE_COMPLETE], 1);
    assert_int_equal(st.steps_closed, 2);
    assert_int_equal(st.late, 0);
    assert_int_equal(st.duplicates, 2);
    assert_int_equal(diag_engine_take_reports(e, &reps), 0);
    assert_null(reps);
    diag_engine_free(e);
    diag_engine_free(NULL);
    diag_scn_free(s);
}

/* The window of open steps: order, gaps, timeouts, hostile steps (closing by
 * watermark, budget and late records: test_diag_watermark). */
static void test_step_window(void **state)
{
    Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT;
    Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;
    struct diag_options opt = {.step_timeout_ns = 1000};
    struct diag_engine *e = diag_engine_new(&opt);
    struct diag_engine_stats st;

    assert_non_null(e);
    res.job = rec.job = "w";
    res.world_size = 4;
    assert_int_equal(diag_engine_add_resource(e, &res), 0);
    rec.duration_ns = 100000000;
    for (uint32_t r = 0; r < 4; r++) { /* step 0 complete */
        rec.rank = r;
        rec.step = 0;
        assert_int_equal(diag_engine_add_step(e, &rec, 10), 0);
    }
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed, 1);
    for (uint32_t r = 0; r < 4; r++) { /* step 2 in reverse order; nobody sends 1 */
        rec.rank = 3 - r;
        rec.step = 2;
        assert_int_equal(diag_engine_add_step(e, &rec, 20), 0);
    }
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed, 2);
    assert_int_equal(st.steps_closed_by[DIAG_CLOSE_COMPLETE], 2);
    rec.step = 1; /* now late, and no frame to amend */
    assert_int_equal(diag_engine_add_step(e, &rec, 30), 1);
    rec.step = 3; /* one rank of step 3 and of step 11: both stay open */
    assert_int_equal(diag_engine_add_step(e, &rec, 40), 0);
    rec.step = 11;
    assert_int_equal(diag_engine_add_step(e, &rec, 41), 0);
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed, 2);
    assert_int_equal(st.open_steps, 2);
    rec.step = 2000000000ULL; /* a broken step number is refused */
    assert_int_equal(diag_engine_add_step(e, &rec, 42), -ERANGE);
    assert_int_equal(diag_engine_tick(e, 40 + 999), 0);
    assert_int_equal(diag_engine_tick(e, 41 + 1000), 2); /* steps 3 and 11 timed out */
    assert_int_equal(diag_engine_flush(e, 5000), 0);
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.steps_closed, 4);
    assert_int_equal(st.steps_closed_by[DIAG_CLOSE_TIMEOUT], 2);
    assert_int_equal(st.late, 1);
    assert_int_equal(st.dropped_memory + st.dropped_horizon, 1);
    assert_int_equal(st.rejected, 1);
    diag_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthy_pages_nobody),
        cmocka_unit_test(test_compute_straggler),
        cmocka_unit_test(test_high_rank_numbers),
        cmocka_unit_test(test_gpu_throttled),
        cmocka_unit_test(test_power_capped_pages_nobody),
        cmocka_unit_test(test_masked_straggler),
        cmocka_unit_test(test_pipeline_stage_straggler),
        cmocka_unit_test(test_pipeline_stage_straggler_duty_cycle),
        cmocka_unit_test(test_pipeline_stage_straggler_no_kernels),
        cmocka_unit_test(test_link_degraded_group),
        cmocka_unit_test(test_link_degraded_tp_group),
        cmocka_unit_test(test_host_straggler),
        cmocka_unit_test(test_expert_straggler),
        cmocka_unit_test(test_jit_stalls_page_nobody),
        cmocka_unit_test(test_data_skew_is_imbalance),
        cmocka_unit_test(test_imbalance_pages_nobody),
        cmocka_unit_test(test_everyone_slower_is_job_regression),
        cmocka_unit_test(test_everyone_slower_without_kernels),
        cmocka_unit_test(test_silent_rank),
        cmocka_unit_test(test_noisy_job),
        cmocka_unit_test(test_reports_bounded),
        cmocka_unit_test(test_api_corner_cases),
        cmocka_unit_test(test_step_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
