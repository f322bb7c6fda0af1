/* What a report says, end to end through the engine, on records like those
 * of a CPU PyTorch DDP job without annotation (inferred steps: phases
 * "compute" and "collectives", two bucket all-reduces per step with host
 * arrival only, process-local communicator handles): a CPU-starved rank is
 * a host cause with its run queue and its last arrivals as evidence, a rank
 * with slow compute and a normal run queue stays compute, and a single-step
 * spike is a finding that pages nobody. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_evidence.h"

enum { RANKS = 8, CALLS = 2 };
#define MS 1000000ULL
#define T0 1800000000000000000ULL
#define ID_COMPUTE 1
#define ID_COLLS 2
#define ID_ALLREDUCE 3

static const char *names(void *ctx, uint64_t id)
{
    switch (id) {
    case ID_COMPUTE:
        return "compute";
    case ID_COLLS:
        return "collectives";
    case ID_ALLREDUCE:
        return "c10d::ProcessGroupGloo::allreduce";
    default:
        return NULL;
    }
}

struct job {
    uint32_t slow_rank; /* compute takes slow_ms on it */
    double slow_ms;
    uint64_t slow_from, slow_to; /* steps [from, to] */
    bool starved;                /* and its threads wait for a CPU */
};

struct rec {
    Argus__V1__StepRecord s;
    Argus__V1__Phase ph[2], *php[2];
    Argus__V1__HostCounters host;
    Argus__V1__Collective co[CALLS], *cop[CALLS];
};

/* Rank r's record of step k: compute ~100 ms (deterministic jitter), the
 * bucket all-reduces at half and at the end of its compute, all ending 5 ms
 * after the last member arrives. Run queue ~32 ms per step. */
static void build(struct rec *x, const struct job *j, uint64_t k)
{
    double comp[RANKS], last = 0;

    for (uint32_t r = 0; r < RANKS; r++) {
        comp[r] = 100 + (double)((r * 7 + k * 3) % 5);
        if (r == j->slow_rank && k >= j->slow_from && k <= j->slow_to)
            comp[r] = j->slow_ms;
        last = comp[r] > last ? comp[r] : last;
    }
    for (uint32_t r = 0; r < RANKS; r++) {
        struct rec *e = &x[r];
        uint64_t base = T0 + k * 2000 * MS;
        argus__v1__step_record__init(&e->s);
        argus__v1__host_counters__init(&e->host);
        e->s.job = "ddp";
        e->s.rank = r;
        e->s.step = k;
        e->s.start_unix_ns = base;
        e->s.duration_ns = (uint64_t)((last + 5) * MS);
        e->s.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_INFERRED;
        for (int p = 0; p < 2; p++) {
            argus__v1__phase__init(&e->ph[p]);
            e->php[p] = &e->ph[p];
        }
        e->ph[0].name_id = ID_COMPUTE;
        e->ph[0].duration_ns = (uint64_t)(comp[r] * MS);
        e->ph[1].name_id = ID_COLLS;
        e->ph[1].duration_ns = (uint64_t)((last + 5 - comp[r]) * MS);
        e->s.phases = e->php;
        e->s.n_phases = 2;
        e->host.runq_ns = (uint64_t)((32 + (double)((r * 3 + k) % 5)) * MS);
        e->host.off_cpu_ns = 2 * MS;
        if (j->starved && r == j->slow_rank && k >= j->slow_from && k <= j->slow_to)
            e->host.runq_ns = 90 * MS;
        e->s.host = &e->host;
        for (int c = 0; c < CALLS; c++) {
            Argus__V1__Collective *co = &e->co[c];
            argus__v1__collective__init(co);
            co->name_id = ID_ALLREDUCE;
            co->comm_id = 0x7f1200000000ULL + r * 0x1000ULL; /* process-local handle */
            co->seq = 5000 * r + k * CALLS + (uint64_t)c;
            co->host_arrival_unix_ns = base + (uint64_t)(comp[r] * (c + 1) / CALLS * MS);
            e->cop[c] = co;
        }
        e->s.collectives = e->cop;
        e->s.n_collectives = CALLS;
    }
}

struct seen {
    uint32_t reports, paging_reports;
    int32_t paged_rank;
    int paged_cause;
    char where[64], evidence[1024];
    uint32_t spike_findings;
    char spike_evidence[512];
    bool spike_paged;
};

static void drain(struct diag_engine *e, struct seen *o)
{
    Argus__V1__Report **reps;
    size_t n = diag_engine_take_reports(e, &reps);

    for (size_t i = 0; i < n; i++) {
        Argus__V1__Report *r = reps[i];
        o->reports++;
        o->paging_reports += r->pages;
        for (size_t k = 0; k < r->n_suspects; k++) {
            Argus__V1__Suspect *s = r->suspects[k];
            printf("    [%s] rank %d pages %d %u/%u: %s\n", s->where, (int)s->rank, s->pages,
                   s->persisted, s->window, s->evidence);
            if (s->level == ARGUS__V1__LEVEL__LEVEL_L1_ITERATION) {
                o->spike_findings++;
                snprintf(o->spike_evidence, sizeof(o->spike_evidence), "%s", s->evidence);
                o->spike_paged = o->spike_paged || s->pages || r->pages;
            } else if (s->pages && o->paged_rank < 0) {
                o->paged_rank = (int32_t)s->rank;
                o->paged_cause = s->cause;
                snprintf(o->where, sizeof(o->where), "%s", s->where);
                snprintf(o->evidence, sizeof(o->evidence), "%s", s->evidence);
            }
        }
        diag_report_free(r);
    }
    free(reps);
}

static void run(const struct job *j, uint64_t steps, struct seen *o)
{
    struct diag_options opt = {.name = names};
    struct diag_engine *e = diag_engine_new(&opt);
    struct rec x[RANKS];

    assert_non_null(e);
    memset(o, 0, sizeof(*o));
    o->paged_rank = -1;
    for (uint32_t r = 0; r < RANKS; r++) {
        Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT;
        res.job = "ddp";
        res.rank = r;
        res.world_size = RANKS;
        res.node = "node-a";
        res.gpu = -1;
        res.dp = r;
        res.dp_size = RANKS;
        assert_int_equal(diag_engine_add_resource(e, &res), 0);
    }
    for (uint64_t k = 0; k < steps; k++) {
        uint64_t now = T0 + k * 2000 * MS + 500 * MS;
        build(x, j, k);
        assert_int_equal(diag_engine_begin_batch(e, "node-a", now), 0);
        for (uint32_t r = 0; r < RANKS; r++)
            assert_int_equal(diag_engine_add_step(e, &x[r].s, now), 0);
        assert_true(diag_engine_end_batch(e, now) >= 0);
        drain(e, o);
    }
    diag_engine_free(e);
}

/* "arrived last at L of P collectives (C expected by chance)" */
static void parse_last(const char *ev, unsigned *last, unsigned *part, unsigned *chance)
{
    const char *p = strstr(ev, "arrived last at ");
    assert_non_null(p);
    assert_int_equal(
        sscanf(p, "arrived last at %u of %u collectives (%u expected", last, part, chance), 3);
}

static void test_cpu_starved_rank_is_host(void **state)
{
    struct job j = {
        .slow_rank = 2, .slow_ms = 190, .slow_from = 5, .slow_to = 1000, .starved = true};
    struct seen o;
    unsigned last, part, chance;

    run(&j, 60, &o);
    assert_int_equal(o.paged_rank, 2);
    assert_int_equal(o.paged_cause, ARGUS__V1__CAUSE__CAUSE_HOST);
    assert_string_equal(o.where, "cpu run queue");
    assert_non_null(strstr(o.evidence, "CPU-starved"));
    parse_last(o.evidence, &last, &part, &chance);
    assert_true(part >= 24 * CALLS);
    assert_true(last >= part - 10 * CALLS); /* last since step 5, not before */
    assert_int_equal(chance, (part + RANKS / 2) / RANKS);
    /* after the first: ~44 ms at the first bucket, ~86 at the second */
    assert_non_null(strstr(o.evidence, "median 6"));
    assert_non_null(strstr(o.evidence, "run queue 8")); /* mean over the window */
    assert_non_null(strstr(o.evidence, "vs 34 ms group median"));
    assert_int_equal(o.spike_findings, 0);
}

static void test_slow_compute_normal_run_queue_is_compute(void **state)
{
    struct job j = {.slow_rank = 5, .slow_ms = 190, .slow_from = 5, .slow_to = 1000};
    struct seen o;
    unsigned last, part, chance;

    run(&j, 60, &o);
    assert_int_equal(o.paged_rank, 5);
    assert_int_equal(o.paged_cause, ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_string_equal(o.where, "compute");
    parse_last(o.evidence, &last, &part, &chance);
    assert_true(last >= part - 10 * CALLS);
}

static void test_single_step_spike_is_a_finding(void **state)
{
    struct job j = {
        .slow_rank = 3, .slow_ms = 900, .slow_from = 40, .slow_to = 40, .starved = true};
    struct seen o;

    run(&j, 60, &o);
    assert_int_equal(o.spike_findings, 1); /* found and reported */
    assert_false(o.spike_paged);           /* but pages nobody */
    assert_int_equal(o.paging_reports, 0);
    assert_int_equal(o.paged_rank, -1);
    assert_non_null(strstr(o.spike_evidence, "CPU-starved"));
}

static void test_window_text(void **state)
{
    struct diag_rank_evidence re = {.part = 50,
                                    .last = 41,
                                    .chance = 12.5,
                                    .gap_ns = 310e6,
                                    .runq_ns = 905e6,
                                    .runq_median = 320e6};
    char buf[256];

    diag_evidence_window(&re, buf, sizeof(buf));
    assert_string_equal(buf, "arrived last at 41 of 50 collectives (12 expected by chance), "
                             "median 310 ms after the first; run queue 905 ms/step vs 320 ms "
                             "group median");
    memset(&re, 0, sizeof(re));
    assert_string_equal(diag_evidence_window(&re, buf, sizeof(buf)), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_starved_rank_is_host),
        cmocka_unit_test(test_slow_compute_normal_run_queue_is_compute),
        cmocka_unit_test(test_single_step_spike_is_a_finding),
        cmocka_unit_test(test_window_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
