/* collector/ingest/owners: the rank ownership table over a real store (a
 * RocksDB in a temp dir). The first identity to write a rank owns it;
 * another's batch naming it is refused whole, with a sentence naming the
 * rank, the job, the owner and the intruder, and counted; the owner's own
 * records pass. A rank moves after the owner's silence past the idle bound,
 * or with a new attempt of the job (Resource.restart or RankStatus.restart),
 * counted; the old owner is then the one refused. The table survives a new
 * table over the same store (a collector restart), forgets jobs silent past
 * twice the idle bound (also in the store), keeps at most max_jobs, refuses a
 * rank over max_ranks, and judges a job of 10,240 ranks on 1,280 nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "collector/ingest/owners.h"
#include "collector/store/store.h"
#include "collector/transport/transport.h"

#define SEC 1000000000ULL
#define IDLE (60 * SEC)
#define T0 (1700000000 * SEC)

static char dir[64];
static struct store *st;

/* A batch of up to 16 step records and 16 resources and statuses. */
struct tb {
    Argus__V1__Batch b;
    Argus__V1__StepRecord s[16], *sp[16];
    Argus__V1__Resource r[16], *rp[16];
    Argus__V1__RankStatus q[16], *qp[16];
};

static Argus__V1__Batch *tb_init(struct tb *t, const char *agent)
{
    memset(t, 0, sizeof(*t));
    argus__v1__batch__init(&t->b);
    t->b.agent_id = (char *)agent;
    t->b.epoch = 1;
    t->b.seq = 1;
    t->b.steps = t->sp;
    t->b.resources = t->rp;
    t->b.statuses = t->qp;
    return &t->b;
}

static void tb_step(struct tb *t, const char *job, uint32_t rank)
{
    Argus__V1__StepRecord *s = &t->s[t->b.n_steps];

    argus__v1__step_record__init(s);
    s->job = (char *)job;
    s->rank = rank;
    s->step = 1;
    t->sp[t->b.n_steps++] = s;
}

static void tb_resource(struct tb *t, const char *job, uint32_t rank, uint32_t restart)
{
    Argus__V1__Resource *r = &t->r[t->b.n_resources];

    argus__v1__resource__init(r);
    r->job = (char *)job;
    r->rank = rank;
    r->node = t->b.agent_id;
    r->restart = restart;
    t->rp[t->b.n_resources++] = r;
}

static void tb_status(struct tb *t, const char *job, uint32_t rank, uint32_t restart)
{
    Argus__V1__RankStatus *q = &t->q[t->b.n_statuses];

    argus__v1__rank_status__init(q);
    q->job = (char *)job;
    q->rank = rank;
    q->restart = restart;
    t->qp[t->b.n_statuses++] = q;
}

static struct owners *table(uint32_t max_jobs)
{
    struct owners_options o = {
        .idle_ns = IDLE, .max_jobs = max_jobs, .max_ranks = 65536, .log_interval_ns = 60 * SEC};
    struct owners *ow = owners_new(&o, st);
    char err[160];

    assert_non_null(ow);
    assert_true(owners_load(ow, T0, err, sizeof(err)) >= 0);
    return ow;
}

/* owners_judge of one step record of (job, rank) from agent at now. */
static int step_from(struct owners *ow, const char *agent, const char *job, uint32_t rank,
                     uint64_t now, char *err, size_t errlen)
{
    struct tb t;

    tb_init(&t, agent);
    tb_step(&t, job, rank);
    return owners_judge(ow, &t.b, agent, now, err, errlen);
}

static void assert_owner(struct owners *ow, const char *job, uint32_t rank, const char *want)
{
    char got[64];

    assert_int_equal(owners_get(ow, job, rank, got, sizeof(got)), *want != '\0');
    assert_string_equal(got, want);
}

static int setup(void **state)
{
    struct store_options so = {0};
    char err[256];

    strcpy(dir, "/tmp/argus-test-owners-XXXXXX");
    assert_non_null(mkdtemp(dir));
    so.dir = dir;
    assert_int_equal(store_open(&so, &st, err, sizeof(err)), 0);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    store_close(st);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void test_first_writer_owns(void **state)
{
    struct owners *ow = table(16);
    struct owners_stats os;
    char err[512];

    assert_int_equal(step_from(ow, "node-b", "j1", 8, T0, err, sizeof(err)), TRANSPORT_OK);
    assert_owner(ow, "j1", 8, "node-b");
    assert_int_equal(step_from(ow, "node-a", "j1", 8, T0 + SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    assert_non_null(strstr(err, "rank 8 of job j1 belongs to 'node-b'"));
    assert_non_null(strstr(err, "'node-a' may not write it"));
    assert_int_equal(step_from(ow, "node-b", "j1", 8, T0 + 2 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    assert_int_equal(step_from(ow, "node-a", "j1", 0, T0 + 2 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    /* another job's rank 8 is another rank */
    assert_int_equal(step_from(ow, "node-a", "j2", 8, T0 + 2 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    owners_get_stats(ow, &os);
    assert_int_equal(os.refused, 1);
    assert_int_equal(os.moves, 0);
    assert_int_equal(os.jobs, 2);
    owners_free(ow);
}

/* A batch with one foreign rank claims none of its others. */
static void test_whole_batch(void **state)
{
    struct owners *ow = table(16);
    struct tb t;
    char err[512];

    assert_int_equal(step_from(ow, "node-b", "wb", 8, T0, err, sizeof(err)), TRANSPORT_OK);
    tb_init(&t, "node-a");
    tb_resource(&t, "wb", 0, 0);
    tb_step(&t, "wb", 0);
    tb_step(&t, "wb", 8);
    tb_status(&t, "wb", 1, 0);
    assert_int_equal(owners_judge(ow, &t.b, "node-a", T0 + SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    assert_owner(ow, "wb", 0, "");
    assert_owner(ow, "wb", 1, "");
    /* a rank status is a record of its rank too */
    tb_init(&t, "node-a");
    tb_status(&t, "wb", 8, 0);
    assert_int_equal(owners_judge(ow, &t.b, "node-a", T0 + SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    owners_free(ow);
}

static void test_moves_after_idle(void **state)
{
    struct owners *ow = table(16);
    struct owners_stats os;
    char err[512];

    assert_int_equal(step_from(ow, "node-b", "idle", 8, T0, err, sizeof(err)), TRANSPORT_OK);
    assert_int_equal(step_from(ow, "node-a", "idle", 8, T0 + IDLE - 1, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    assert_int_equal(step_from(ow, "node-a", "idle", 8, T0 + IDLE, err, sizeof(err)), TRANSPORT_OK);
    assert_owner(ow, "idle", 8, "node-a");
    /* the old owner, back, is the intruder now */
    assert_int_equal(step_from(ow, "node-b", "idle", 8, T0 + IDLE + SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    assert_non_null(strstr(err, "belongs to 'node-a'"));
    owners_get_stats(ow, &os);
    assert_int_equal(os.moves, 1);
    assert_int_equal(os.refused, 2);
    owners_free(ow);
}

static void test_moves_with_new_attempt(void **state)
{
    struct owners *ow = table(16);
    struct tb t;
    char err[512];

    tb_init(&t, "node-b");
    tb_resource(&t, "ep", 8, 0);
    tb_step(&t, "ep", 8);
    assert_int_equal(owners_judge(ow, &t.b, "node-b", T0, err, sizeof(err)), TRANSPORT_OK);
    /* the same attempt from node-a: refused */
    tb_init(&t, "node-a");
    tb_resource(&t, "ep", 8, 0);
    assert_int_equal(owners_judge(ow, &t.b, "node-a", T0 + SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    /* the job restarted on node-a: its resource and steps move the rank */
    tb_init(&t, "node-a");
    tb_resource(&t, "ep", 8, 1);
    tb_step(&t, "ep", 8);
    assert_int_equal(owners_judge(ow, &t.b, "node-a", T0 + 2 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    assert_owner(ow, "ep", 8, "node-a");
    /* node-b's late records of the old attempt are refused */
    assert_int_equal(step_from(ow, "node-b", "ep", 8, T0 + 3 * SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    /* a rank status declaring attempt 2 moves it again */
    tb_init(&t, "node-c");
    tb_status(&t, "ep", 8, 2);
    assert_int_equal(owners_judge(ow, &t.b, "node-c", T0 + 4 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    assert_owner(ow, "ep", 8, "node-c");
    /* the job's attempt is 2 now: a rank written under 1 moves to whoever
     * writes it first in attempt 2, even without a resource */
    assert_int_equal(step_from(ow, "node-a", "ep", 3, T0 + 4 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    owners_free(ow);
}

/* The old owner's late records of the old attempt, stored between the new
 * attempt's first resource and the new owner's, do not keep the rank. */
static void test_late_records_of_old_attempt(void **state)
{
    struct owners *ow = table(16);
    struct tb t;
    char err[512];

    tb_init(&t, "node-b");
    tb_resource(&t, "late", 8, 0);
    assert_int_equal(owners_judge(ow, &t.b, "node-b", T0, err, sizeof(err)), TRANSPORT_OK);
    tb_init(&t, "node-c");
    tb_resource(&t, "late", 0, 1); /* the job restarted */
    assert_int_equal(owners_judge(ow, &t.b, "node-c", T0 + SEC, err, sizeof(err)), TRANSPORT_OK);
    assert_int_equal(step_from(ow, "node-b", "late", 8, T0 + 2 * SEC, err, sizeof(err)),
                     TRANSPORT_OK); /* its own, late */
    tb_init(&t, "node-a");
    tb_resource(&t, "late", 8, 1);
    assert_int_equal(owners_judge(ow, &t.b, "node-a", T0 + 3 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    assert_owner(ow, "late", 8, "node-a");
    /* an owner that keeps its rank in the new attempt declares it */
    tb_init(&t, "node-c");
    tb_resource(&t, "late", 0, 1);
    assert_int_equal(owners_judge(ow, &t.b, "node-c", T0 + 4 * SEC, err, sizeof(err)),
                     TRANSPORT_OK);
    assert_int_equal(step_from(ow, "node-a", "late", 0, T0 + 5 * SEC, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    owners_free(ow);
}

/* A new table over the same store judges as the old one did. */
static void test_survives_restart(void **state)
{
    struct owners *ow = table(16);
    struct owners_stats os;
    char err[512];

    assert_int_equal(step_from(ow, "node-b", "keep", 8, T0, err, sizeof(err)), TRANSPORT_OK);
    assert_int_equal(step_from(ow, "node-b", "keep", 8, T0 + IDLE / 2, err, sizeof(err)),
                     TRANSPORT_OK); /* last seen stored (over idle / 8 since) */
    owners_free(ow);
    ow = table(16);
    assert_owner(ow, "keep", 8, "node-b");
    assert_int_equal(step_from(ow, "node-a", "keep", 8, T0 + IDLE - 1, err, sizeof(err)),
                     TRANSPORT_PERMISSION_DENIED);
    /* silent since T0 + IDLE/2: it moves at T0 + IDLE/2 + IDLE, not before */
    assert_int_equal(
        step_from(ow, "node-a", "keep", 8, T0 + IDLE / 2 + IDLE - SEC, err, sizeof(err)),
        TRANSPORT_PERMISSION_DENIED);
    assert_int_equal(step_from(ow, "node-a", "keep", 8, T0 + IDLE / 2 + IDLE, err, sizeof(err)),
                     TRANSPORT_OK);
    owners_free(ow);
    ow = table(16);
    assert_owner(ow, "keep", 8, "node-a");
    owners_get_stats(ow, &os);
    assert_true(os.ranks >= 9);
    owners_free(ow);
}

/* Jobs silent past twice the idle bound go, from memory and the store. */
static void test_forgets_silent_jobs(void **state)
{
    struct owners *ow = table(16);
    uint64_t later = T0 + 10 * IDLE;
    char err[512];

    assert_int_equal(step_from(ow, "node-b", "old", 8, later, err, sizeof(err)), TRANSPORT_OK);
    assert_int_equal(
        step_from(ow, "node-x", "tick", 0, later + OWNERS_FORGET_IDLE * IDLE, err, sizeof(err)),
        TRANSPORT_OK);
    assert_owner(ow, "old", 8, "");
    owners_free(ow);
    ow = table(16); /* and it is not loaded again */
    assert_owner(ow, "old", 8, "");
    owners_free(ow);
}

/* At most max_jobs: a new job forgets the least recently seen. */
static void test_max_jobs(void **state)
{
    struct owners *ow = table(2);
    struct owners_stats os;
    char err[512];

    assert_int_equal(step_from(ow, "n1", "m1", 0, T0 + 20 * IDLE, err, sizeof(err)), TRANSPORT_OK);
    assert_int_equal(step_from(ow, "n1", "m2", 0, T0 + 20 * IDLE + 1, err, sizeof(err)),
                     TRANSPORT_OK);
    assert_int_equal(step_from(ow, "n1", "m3", 0, T0 + 20 * IDLE + 2, err, sizeof(err)),
                     TRANSPORT_OK);
    owners_get_stats(ow, &os);
    assert_true(os.jobs <= 2);
    assert_owner(ow, "m1", 0, "");
    assert_owner(ow, "m3", 0, "n1");
    /* a rank at or over max_ranks is refused as invalid */
    assert_int_equal(step_from(ow, "n1", "m3", 65536, T0 + 20 * IDLE + 3, err, sizeof(err)),
                     TRANSPORT_INVALID_ARGUMENT);
    owners_free(ow);
}

/* 10,240 ranks, 8 per node: every node claims its own, each intruder is
 * refused, and the whole thing stays fast. */
static void test_ten_thousand_ranks(void **state)
{
    struct owners *ow = table(16);
    struct owners_stats os;
    struct timespec a, b;
    char err[512], node[32], other[32];
    struct tb t;

    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int round = 0; round < 3; round++)
        for (uint32_t n = 0; n < 1280; n++) {
            snprintf(node, sizeof(node), "node-%u", n);
            tb_init(&t, node);
            for (uint32_t k = 0; k < 8; k++) {
                tb_step(&t, "big", n * 8 + k);
                if (round == 0)
                    tb_resource(&t, "big", n * 8 + k, 0);
            }
            assert_int_equal(owners_judge(ow, &t.b, node, T0 + round * SEC, err, sizeof(err)),
                             TRANSPORT_OK);
        }
    for (uint32_t n = 0; n < 1280; n += 127) {
        snprintf(other, sizeof(other), "node-%u", (n + 1) % 1280);
        assert_int_equal(step_from(ow, other, "big", n * 8, T0 + 4 * SEC, err, sizeof(err)),
                         TRANSPORT_PERMISSION_DENIED);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    owners_get_stats(ow, &os);
    assert_true(os.ranks >= 10240 && os.ranks <= 2 * 10240);
    assert_int_equal(os.refused, 11);
    snprintf(node, sizeof(node), "node-%u", 1279);
    assert_owner(ow, "big", 10239, node);
    /* 3,840 batches of 8 ranks (a third stored): seconds would be a bug */
    assert_true((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 5e9);
    owners_free(ow);
    ow = table(16);
    assert_owner(ow, "big", 10239, node);
    owners_free(ow);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_writer_owns),
        cmocka_unit_test(test_whole_batch),
        cmocka_unit_test(test_moves_after_idle),
        cmocka_unit_test(test_moves_with_new_attempt),
        cmocka_unit_test(test_late_records_of_old_attempt),
        cmocka_unit_test(test_survives_restart),
        cmocka_unit_test(test_forgets_silent_jobs),
        cmocka_unit_test(test_max_jobs),
        cmocka_unit_test(test_ten_thousand_ranks),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
