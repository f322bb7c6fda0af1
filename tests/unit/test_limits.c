/* collector/ingest/limits: every admission limit crossed by one is refused with the
 * right status and a sentence naming the limit, counted once under its own
 * label, and leaves nothing behind; what is at the limit is admitted. Also
 * the hostile cases of issue 15: step 2^64-1, a jump of 2^40, one batch
 * mixing two jobs, a declared world of 65,536 (a hint: neither the charge nor
 * the diagnosis engine's heap follows it), a flood of new jobs against the
 * memory budget, and idle jobs forgotten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

#include <cmocka.h>

#include "collector/diag/diag_engine.h"
#include "collector/ingest/limits.h"
#include "collector/transport/transport.h"
#include "common/name_id.h"

#define SEC 1000000000ULL

/* A batch under construction: up to 16 of each item. */
struct tb {
    Argus__V1__Batch b;
    Argus__V1__StepRecord s[16], *sp[16];
    Argus__V1__Resource r[16], *rp[16];
    Argus__V1__NameEntry n[16], *np[16];
    char text[16][32];
};

static struct tb *tb_init(struct tb *t)
{
    memset(t, 0, sizeof(*t));
    argus__v1__batch__init(&t->b);
    t->b.agent_id = "agent-a";
    t->b.epoch = 1;
    t->b.seq = 1;
    t->b.steps = t->sp;
    t->b.resources = t->rp;
    t->b.names = t->np;
    return t;
}

static void tb_step(struct tb *t, const char *job, uint32_t rank, uint64_t step)
{
    Argus__V1__StepRecord *s = &t->s[t->b.n_steps];

    argus__v1__step_record__init(s);
    s->job = (char *)job;
    s->rank = rank;
    s->step = step;
    t->sp[t->b.n_steps++] = s;
}

static void tb_resource(struct tb *t, const char *job, uint32_t rank, uint32_t world)
{
    Argus__V1__Resource *r = &t->r[t->b.n_resources];

    argus__v1__resource__init(r);
    r->job = (char *)job;
    r->rank = rank;
    r->world_size = world;
    t->rp[t->b.n_resources++] = r;
}

/* Name "nK" of job (3 + digits bytes). */
static void tb_name(struct tb *t, const char *job, unsigned k)
{
    size_t i = t->b.n_names;
    Argus__V1__NameEntry *n = &t->n[i];

    argus__v1__name_entry__init(n);
    snprintf(t->text[i], sizeof(t->text[i]), "n%u", k);
    n->job = (char *)job;
    n->name = t->text[i];
    n->id = name_id(n->name);
    t->np[t->b.n_names++] = n;
}

static struct limits_options small_options(void)
{
    struct limits_options o;

    limits_default_options(&o);
    o.max_jobs = 2;
    o.max_ranks_per_job = 4;
    o.max_names_per_job = 3;
    o.max_names_total = 5;
    o.max_step = 1000;
    o.max_step_jump = 10;
    o.max_jobs_per_batch = 2;
    o.job_memory = 1ULL << 30;
    o.job_idle_ns = 60 * SEC;
    o.cost = (struct limits_cost){.job = 1000, .rank = 100, .name = 10};
    return o;
}

/* Admit b; check the status, that err names needle, and that only kind
 * (LIMITS_KIND_COUNT: none) was counted, once. */
static void expect(struct limits *l, Argus__V1__Batch *b, uint64_t now, int status,
                   enum limits_kind kind, const char *needle)
{
    struct limits_stats before, after;
    char err[256] = "";

    limits_get_stats(l, &before);
    int r = limits_admit(l, b, now, err, sizeof(err));
    if (r != status)
        fail_msg("status %d, want %d (%s)", r, status, err);
    if (needle && !strstr(err, needle))
        fail_msg("message '%s' lacks '%s'", err, needle);
    limits_get_stats(l, &after);
    for (int k = 0; k < LIMITS_KIND_COUNT; k++)
        assert_int_equal(after.rejections[k] - before.rejections[k], k == (int)kind ? 1 : 0);
    if (status != TRANSPORT_OK) { /* nothing was recorded */
        assert_int_equal(after.jobs, before.jobs);
        assert_int_equal(after.names, before.names);
        assert_int_equal(after.memory, before.memory);
    }
}

#define OK(b) expect(l, b, now, TRANSPORT_OK, LIMITS_KIND_COUNT, NULL)

static void test_ranks_and_steps_by_one(void **state)
{
    struct limits_options o = small_options();
    struct limits *l = limits_new(&o);
    struct tb t;
    uint64_t now = SEC;

    assert_non_null(l);
    tb_step(tb_init(&t), "a", 3, 999); /* the last rank, the last step */
    tb_resource(&t, "a", 3, 4);
    OK(&t.b);
    tb_step(tb_init(&t), "a", 4, 999);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_RANKS_PER_JOB,
           "rank 4 of job a is over limits.max_ranks_per_job (ranks 0-3)");
    tb_resource(tb_init(&t), "a", 4, 5);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_RANKS_PER_JOB, "rank 4");
    tb_step(tb_init(&t), "b", 0, 1000);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_STEP,
           "step 1000 of job b rank 0 is not a step number (limits.max_step 1000)");
    /* jumps: from a new job's lowest step in the batch, then from the highest */
    tb_step(tb_init(&t), "b", 0, 100);
    tb_step(&t, "b", 1, 111);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_STEP_JUMP,
           "step 111 of job b is 11 past its lowest step 100; limits.max_step_jump is 10");
    t.s[1].step = 110;
    OK(&t.b);
    tb_step(tb_init(&t), "b", 0, 121);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_STEP_JUMP,
           "is 11 past its highest step 110");
    t.s[0].step = 120;
    OK(&t.b);
    t.s[0].step = 3; /* going back (a restarted job) is fine */
    OK(&t.b);
    /* a rank status's rank is admitted like a step record's */
    Argus__V1__RankStatus st = ARGUS__V1__RANK_STATUS__INIT, *stp = &st;
    tb_init(&t);
    st.job = "a";
    st.rank = 4;
    t.b.n_statuses = 1;
    t.b.statuses = &stp;
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_RANKS_PER_JOB,
           "rank 4 of job a is over limits.max_ranks_per_job (ranks 0-3)");
    st.rank = 3;
    OK(&t.b);
    limits_free(l);
}

static void test_names_by_one(void **state)
{
    struct limits_options o = small_options();
    struct limits *l = limits_new(&o);
    struct tb t;
    uint64_t now = SEC;

    tb_init(&t);
    tb_name(&t, "a", 0);
    tb_name(&t, "a", 1);
    tb_name(&t, "a", 1); /* the same name twice counts once */
    OK(&t.b);
    tb_name(tb_init(&t), "a", 2);
    tb_name(&t, "a", 3);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_NAMES_PER_JOB,
           "job a already has 2 names and this batch adds 2; limit 3 (limits.max_names_per_job)");
    t.b.n_names = 1;
    OK(&t.b);
    tb_name(tb_init(&t), "a", 0); /* known: adds nothing */
    OK(&t.b);
    tb_name(tb_init(&t), "b", 0); /* the same name in another job is another name */
    tb_name(&t, "b", 1);
    OK(&t.b);
    tb_name(tb_init(&t), "b", 2); /* 6 > max_names_total 5 */
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_NAMES_TOTAL,
           "holds 5 names and this batch adds 1; limit 5 (limits.max_names_total)");
    struct limits_stats st;
    limits_get_stats(l, &st);
    assert_int_equal(st.names, 5);
    limits_free(l);
}

static void test_jobs_and_batch_composition(void **state)
{
    struct limits_options o = small_options();
    struct limits *l = limits_new(&o);
    struct tb t;
    uint64_t now = SEC;

    /* one batch mixing two jobs: each admitted and charged on its own */
    tb_step(tb_init(&t), "a", 0, 5);
    tb_step(&t, "b", 1, 7);
    OK(&t.b);
    struct limits_stats st;
    limits_get_stats(l, &st);
    assert_int_equal(st.jobs, 2);
    assert_int_equal(st.memory, 2 * 1000 + 2 * 100); /* a rank each, whatever its number */
    /* three jobs in one batch: one over max_jobs_per_batch */
    tb_step(tb_init(&t), "a", 0, 6);
    tb_step(&t, "b", 0, 6);
    tb_step(&t, "c", 0, 6);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_JOBS_PER_BATCH,
           "batch from agent-a names more than 2 jobs (limits.max_jobs_per_batch)");
    /* a third job is one over max_jobs; the batch is refused whole, so the
     * name of job a that came with it is not recorded either */
    tb_step(tb_init(&t), "c", 0, 6);
    tb_name(&t, "a", 9);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_JOBS,
           "the collector has 2 active jobs; limit 2 (limits.max_jobs): new job c refused");
    /* a mixed batch where one job crosses its limit: refused whole */
    tb_step(tb_init(&t), "a", 0, 7);
    tb_step(&t, "b", 0, 1000000);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_STEP, "job b");
    t.s[1].step = 8;
    OK(&t.b);
    limits_free(l);
}

static void test_memory_budget_by_one(void **state)
{
    struct limits_options o = small_options();
    struct limits *l;
    struct tb t;
    uint64_t now = SEC;

    o.max_jobs = 1000000;
    o.max_jobs_per_batch = 16;
    o.max_ranks_per_job = 1 << 16;
    o.job_memory = 3 * 1100 + 100 + 2 * (10 + 2); /* 3 one-rank jobs, a rank, 2 names */
    l = limits_new(&o);
    char job[3][8];
    for (int i = 0; i < 3; i++) {
        snprintf(job[i], sizeof(job[i]), "j%d", i);
        tb_step(tb_init(&t), job[i], 0, 1);
        OK(&t.b);
    }
    tb_step(tb_init(&t), "j0", 2, 1); /* two new ranks: one over */
    tb_step(&t, "j0", 65535, 1);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_JOB_MEMORY,
           "per-job state would take 3500 bytes, over limits.job_memory (3424 bytes, 3300 in "
           "use): job j0 would add 200 bytes");
    tb_step(tb_init(&t), "j0", 65535, 1); /* one rank, whatever its number */
    OK(&t.b);
    OK(&t.b);                       /* seen: nothing more */
    tb_name(tb_init(&t), "j1", 10); /* "n10" and "n11": 10 + 3 bytes each, 2 over */
    tb_name(&t, "j1", 11);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_JOB_MEMORY, "job j1 would add 26");
    tb_name(tb_init(&t), "j1", 1); /* "n1" and "n2": exactly the budget */
    tb_name(&t, "j1", 2);
    OK(&t.b);
    struct limits_stats st;
    limits_get_stats(l, &st);
    assert_int_equal(st.memory, o.job_memory);
    assert_int_equal(st.memory_limit, o.job_memory);
    tb_step(tb_init(&t), "new", 0, 1);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_JOB_MEMORY, "job new");
    limits_free(l);
}

/* The hostile batches of issue 15 against the defaults. */
static void test_hostile_defaults(void **state)
{
    struct limits_options o;
    struct limits *l;
    struct tb t;
    struct limits_stats st;
    uint64_t now = SEC;

    limits_default_options(&o);
    l = limits_new(&o);
    tb_step(tb_init(&t), "victim", 0, UINT64_MAX);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_STEP,
           "step 18446744073709551615 of job victim rank 0 is not a step number");
    tb_step(tb_init(&t), "victim", 0, 100);
    OK(&t.b);
    t.s[0].step = 100 + (1ULL << 40);
    expect(l, &t.b, now, TRANSPORT_INVALID_ARGUMENT, LIMITS_STEP_JUMP,
           "step 1099511627876 of job victim is 1099511627776 past its highest step 100");
    t.s[0].step = 101; /* the job goes on */
    OK(&t.b);
    /* four batches declaring a world of 65,536 for new jobs: one rank each
     * is charged, not the world */
    for (int i = 0; i < 4; i++) {
        char job[16];
        snprintf(job, sizeof(job), "world-%d", i);
        tb_resource(tb_init(&t), job, 0, 65536);
        tb_step(&t, job, 0, 1);
        OK(&t.b);
    }
    limits_get_stats(l, &st);
    assert_int_equal(st.jobs, 5);
    assert_int_equal(st.memory, 5 * (o.cost.job + o.cost.rank));
    limits_free(l);
}

/* A flood of new jobs stops at the budget, which is never exceeded. */
static void test_flood_within_budget(void **state)
{
    struct limits_options o;
    struct limits *l;
    struct tb t;
    struct limits_stats st;
    char err[256];
    int admitted = 0, refused = 0;

    limits_default_options(&o);
    o.max_jobs = 100000;
    o.job_memory = 64ULL << 20;
    l = limits_new(&o);
    for (int i = 0; i < 10000; i++) {
        char job[16];
        snprintf(job, sizeof(job), "flood-%d", i);
        tb_step(tb_init(&t), job, 0, 1);
        if (limits_admit(l, &t.b, SEC, err, sizeof(err)) == TRANSPORT_OK)
            admitted++;
        else
            refused++;
        limits_get_stats(l, &st);
        assert_true(st.memory <= o.job_memory);
    }
    assert_int_equal(admitted, (int)(o.job_memory / (o.cost.job + o.cost.rank)));
    assert_int_equal(refused, 10000 - admitted);
    assert_int_equal(st.rejections[LIMITS_JOB_MEMORY], refused);
    assert_non_null(strstr(err, "over limits.job_memory"));
    limits_free(l);
}

static void test_idle_jobs_forgotten(void **state)
{
    struct limits_options o = small_options();
    struct limits *l = limits_new(&o);
    struct tb t;
    struct limits_stats st;
    uint64_t now = SEC;

    tb_step(tb_init(&t), "a", 0, 1);
    OK(&t.b);
    tb_step(tb_init(&t), "b", 0, 1);
    tb_name(&t, "b", 0);
    now = 30 * SEC;
    OK(&t.b);
    tb_step(tb_init(&t), "c", 0, 1);
    expect(l, &t.b, now, TRANSPORT_RESOURCE_EXHAUSTED, LIMITS_JOBS, "new job c");
    now = 61 * SEC; /* a has been idle 60 s: forgotten, c fits */
    OK(&t.b);
    limits_get_stats(l, &st);
    assert_int_equal(st.jobs, 2);
    assert_int_equal(st.jobs_forgotten, 1);
    assert_int_equal(st.names, 1);
    assert_int_equal(st.memory, 2 * 1100 + 10 + 2);
    /* a comes back as a new job: its old step mark is gone too */
    now = 91 * SEC; /* b idle 61 s */
    tb_step(tb_init(&t), "a", 0, 500);
    OK(&t.b);
    limits_get_stats(l, &st);
    assert_int_equal(st.names, 0);
    assert_int_equal(st.jobs_forgotten, 2);
    limits_free(l);
}

static size_t heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

/* The diagnosis engine: a declared world of 65,536 reserves nothing for the
 * ranks that never report (it took ~327 MB), and holds steps for the ranks
 * it has not seen during the start-up grace. */
static void test_engine_world_is_a_hint(void **state)
{
    Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT;
    Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;
    struct diag_options opt = {.job = "world", .stream_hold_ns = 10 * SEC};
    struct diag_engine_stats st;
    size_t before = heap_bytes();
    struct diag_engine *e = diag_engine_new(&opt);

    assert_non_null(e);
    res.job = rec.job = "world";
    res.world_size = 65536;
    res.node = "n";
    assert_int_equal(diag_engine_add_resource(e, &res), 0);
    rec.duration_ns = 1000;
    for (uint64_t step = 1; step <= 3; step++) {
        rec.step = step;
        assert_int_equal(diag_engine_add_step(e, &rec, step * SEC), 0);
    }
    size_t used = heap_bytes() - before;
    printf("  engine with a declared world of 65,536 and one rank: %zu bytes\n", used);
    assert_true(used < 1 << 20);
    assert_int_equal(diag_engine_tick(e, 5 * SEC), 0); /* grace: waits for 65,535 */
    diag_engine_get_stats(e, &st);
    assert_int_equal(st.open_steps, 3);
    diag_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_and_steps_by_one),
        cmocka_unit_test(test_names_by_one),
        cmocka_unit_test(test_jobs_and_batch_composition),
        cmocka_unit_test(test_memory_budget_by_one),
        cmocka_unit_test(test_hostile_defaults),
        cmocka_unit_test(test_flood_within_budget),
        cmocka_unit_test(test_idle_jobs_forgotten),
        cmocka_unit_test(test_engine_world_is_a_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
