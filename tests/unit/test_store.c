/* The RocksDB store, for real, in a temporary directory: ingest, dedup and
 * high-water marks, reopen, a locked directory, odd content, two ingesting
 * threads next to a reader, and a full disk. Reads are in test_store_read.c,
 * retention in test_store_retention.c; the fixture in store_fixture.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tests/unit/store_fixture.h"

/* ---- tests -------------------------------------------------------------------------- */

static void test_duplicate_and_gaps(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-a", 0, 2, 0, 3, T0);
    struct store_stats st;
    char err[256];
    uint64_t hwm;

    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_DUPLICATE);
    t->b.seq = 5; /* a gap: the agent dropped 2..4 */
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    t->b.seq = 3;
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_DUPLICATE);
    t->b.epoch = 8; /* a new epoch starts over */
    t->b.seq = 1;
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, 5);
    assert_int_equal(store_high_water(f->s, "agent-1", 8, &hwm), 0);
    assert_int_equal(hwm, 1);
    assert_int_equal(store_high_water(f->s, "agent-2", 7, &hwm), 0);
    assert_int_equal(hwm, 0);
    /* three written batches of the same 6 records: stored and counted once */
    Argus__V1__JobInfo *ji = job_info(f->s, "job-a");
    assert_int_equal(ji->rank_steps, 6);
    assert_int_equal(ji->ranks_seen, 2);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(count_steps(f->s, "job-a"), 6);
    store_get_stats(f->s, &st);
    assert_int_equal(st.write_batches, 3);
    assert_int_equal(st.duplicates, 2);
    assert_int_equal(st.duplicate_records, 12);
    assert_int_equal(st.write_errors, 0);
    assert_true(st.write_ns_total >= st.write_ns_max && st.write_ns_max > 0);
    tbatch_free(t);
}

static void test_reopen_keeps_everything(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 4, "job-a", 0, 3, 0, 2, T0);
    struct got g = {0};
    char err[256], *name;
    uint64_t hwm;

    assert_int_equal(store_ingest_raw(f->s, &t->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    store_close(f->s);
    f->o.block_cache_bytes = 8 << 20;
    f->s = open_store(f);
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, 4);
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_DUPLICATE);
    /* same ranks again after the reopen: ranks_seen comes from the loaded cache */
    t->b.seq = 5;
    for (size_t i = 0; i < t->b.n_steps; i++)
        t->steps[i].step += 2;
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-a");
    assert_int_equal(ji->ranks_seen, 3);
    assert_int_equal(ji->rank_steps, 12);
    assert_int_equal(ji->last_step, 3);
    assert_int_equal(ji->first_seen_unix_ns, T0);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 12);
    got_free(&g);
    name = store_get_name(f->s, "job-a", 101);
    assert_string_equal(name, "backward");
    free(name);
    tbatch_free(t);
}

/* The distinct (step, rank) records of a job, through every path that
 * decides it: the in-memory ring of recent steps, steps below it, steps from
 * before a reopen, and the same record twice in one batch. */
static void test_distinct_records(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-d", 0, 2, 100, 600, T0);
    struct tbatch *r;
    struct store_stats st;
    char err[256];

    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(job_info_rank_steps(f->s, "job-d"), 1200);
    /* a new epoch replays steps far below the ring (DB) and in it (memory) */
    r = tbatch_new("agent-1", 1, "job-d", 0, 2, 100, 10, T0);
    r->b.epoch = 8;
    assert_int_equal(store_ingest(f->s, &r->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    tbatch_free(r);
    r = tbatch_new("agent-1", 2, "job-d", 0, 2, 690, 10, T0);
    r->b.epoch = 8;
    assert_int_equal(store_ingest(f->s, &r->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    tbatch_free(r);
    assert_int_equal(job_info_rank_steps(f->s, "job-d"), 1200);
    /* one batch: new step 700 of rank 0 twice, new step 3 (below the ring)
     * of rank 0 twice */
    r = tbatch_new("agent-1", 3, "job-d", 0, 4, 700, 1, T0);
    r->b.epoch = 8;
    r->steps[1].rank = 0;
    r->steps[2].rank = 0;
    r->steps[2].step = 3;
    r->steps[3].rank = 0;
    r->steps[3].step = 3;
    assert_int_equal(store_ingest(f->s, &r->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    tbatch_free(r);
    assert_int_equal(job_info_rank_steps(f->s, "job-d"), 1202);
    assert_int_equal(count_steps(f->s, "job-d"), 1202);
    /* after a reopen the rings are empty: the DB answers for what is older */
    store_close(f->s);
    f->s = open_store(f);
    r = tbatch_new("agent-1", 4, "job-d", 0, 3, 695, 7, T0);
    r->b.epoch = 8; /* 695..701: rank 0 has up to 700, rank 1 up to 699, rank 2 none */
    assert_int_equal(store_ingest(f->s, &r->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    tbatch_free(r);
    assert_int_equal(job_info_rank_steps(f->s, "job-d"), 1202 + 1 + 2 + 7);
    assert_int_equal(count_steps(f->s, "job-d"), 1212);
    store_get_stats(f->s, &st);
    assert_int_equal(st.duplicate_records, 6 + 5);
    tbatch_free(t);
}

static void test_locked_dir(void **state)
{
    struct fix *f = *state;
    struct store *s2 = (struct store *)1;
    char err[256] = "";

    assert_int_equal(store_open(&f->o, &s2, err, sizeof(err)), -EBUSY);
    assert_null(s2);
    assert_non_null(strstr(err, f->dir));
}

static void test_odd_content(void **state)
{
    struct fix *f = *state;
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT, *rp = &r;
    Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT, *resp = &res;
    Argus__V1__NameEntry ne = ARGUS__V1__NAME_ENTRY__INIT, *nep = &ne;
    struct got g = {0};
    char err[256];

    b.seq = 1; /* empty agent, nothing in it */
    assert_int_equal(store_ingest(f->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    r.job = NULL; /* NULL strings count as "" */
    res.job = NULL;
    ne.job = NULL;
    ne.name = NULL;
    b.seq = 2;
    b.agent_id = NULL;
    b.n_steps = 1;
    b.steps = &rp;
    b.n_resources = 1;
    b.resources = &resp;
    b.n_names = 1;
    b.names = &nep;
    assert_int_equal(store_ingest(f->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_scan_steps(f->s, "", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
    r.step = UINT64_MAX;
    b.seq = 3;
    assert_int_equal(store_ingest(f->s, &b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_scan_steps(f->s, "", 0, 5, 0, collect, &g), 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
    assert_int_equal(store_scan_steps(f->s, "", -1, UINT64_MAX, UINT64_MAX, collect, &g), 0);
    assert_int_equal(g.n, 1);
    got_free(&g);
}

struct thread_arg {
    struct store *s;
    int id, errors;
};

static void *ingest_thread(void *p)
{
    struct thread_arg *a = p;
    char agent[16], err[256];

    snprintf(agent, sizeof(agent), "agent-%d", a->id);
    for (int i = 0; i < 50; i++) {
        struct tbatch *t = tbatch_new(agent, (uint64_t)i + 1, "job-mt", (uint32_t)a->id * 4, 4,
                                      (uint64_t)i * 2, 2, T0 + (uint64_t)i * NSEC_PER_SEC);
        if (store_ingest(a->s, &t->b, err, sizeof(err)) != STORE_INGEST_WRITTEN)
            a->errors++;
        tbatch_free(t);
    }
    return NULL;
}

/* Every record a scan returns must unpack. */
static int check_record(void *ctx, const void *v, size_t len)
{
    Argus__V1__StepRecord *r = argus__v1__step_record__unpack(NULL, len, v);

    if (!r || strcmp(r->job, "job-mt") || r->n_phases != 2)
        ++*(int *)ctx;
    if (r)
        argus__v1__step_record__free_unpacked(r, NULL);
    return 0;
}

struct reader_arg {
    struct store *s;
    int *stop;
    int errors, scans;
};

static void *reader_thread(void *p)
{
    struct reader_arg *a = p;

    while (!__atomic_load_n(a->stop, __ATOMIC_RELAXED)) {
        if (store_scan_steps(a->s, "job-mt", -1, 0, 0, check_record, &a->errors))
            a->errors++;
        a->scans++;
    }
    return NULL;
}

static void test_two_threads(void **state)
{
    struct fix *f = *state;
    struct thread_arg a[2] = {{f->s, 0, 0}, {f->s, 1, 0}};
    int stop = 0;
    struct reader_arg ra = {f->s, &stop, 0, 0};
    pthread_t th[2], reader;
    struct got g = {0};
    uint64_t hwm;

    pthread_create(&reader, NULL, reader_thread, &ra);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, ingest_thread, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(reader, NULL);
    assert_int_equal(a[0].errors + a[1].errors, 0);
    assert_int_equal(ra.errors, 0);
    assert_true(ra.scans > 0);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-mt");
    assert_int_equal(ji->rank_steps, 800);
    assert_int_equal(ji->ranks_seen, 8);
    assert_int_equal(ji->last_step, 99);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_steps(f->s, "job-mt", 5, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 100);
    got_free(&g);
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, 50);
}

/* Write kib KiB of zeros to path, or until the disk is full. */
static void fill(const char *path, uint64_t kib)
{
    static const char block[1024];
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    for (uint64_t i = 0; i < kib; i++)
        if (fwrite(block, 1, sizeof(block), fp) != sizeof(block) || fflush(fp))
            break;
    fclose(fp);
}

/* A full disk: -EIO with RocksDB's message, nothing half-written, and ingest
 * resumes by itself once space is back. */
static void test_disk_full(void **state)
{
    struct fix *f = *state;
    char err[256] = "", filler[128], filler2[128];
    struct tbatch *t = NULL;
    struct store_stats st;
    uint64_t seq, hwm;
    struct statvfs vfs;
    int rc = 0;

    fix_on_tmpfs(f, "size=8m", "the disk-full test");
    f->s = open_store(f);
    snprintf(filler, sizeof(filler), "%s/filler", f->dir);
    /* leave about 1 MiB free (RocksDB preallocates its MANIFEST) */
    assert_int_equal(statvfs(f->dir, &vfs), 0);
    fill(filler, vfs.f_bavail * vfs.f_bsize / 1024 - 1024);
    for (seq = 1; seq < 5000; seq++) {
        t = tbatch_new("agent-1", seq, "job-full", 0, 8, seq * 8, 8, T0 + seq * NSEC_PER_SEC);
        rc = store_ingest(f->s, &t->b, err, sizeof(err));
        if (rc != STORE_INGEST_WRITTEN)
            break;
        tbatch_free(t);
    }
    assert_int_equal(rc, -EIO);
    printf("after %" PRIu64 " batches: %s\n", seq, err);
    assert_non_null(strstr(err, "No space left"));
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, seq - 1);
    /* Take the rest of the space. The next call tries for real: it reopens
     * the DB, which releases the WAL's preallocated tail, so it may fail
     * again or get through; it must not crash or write half a batch. */
    snprintf(filler2, sizeof(filler2), "%s/filler2", f->dir);
    fill(filler2, UINT64_MAX);
    rc = store_ingest(f->s, &t->b, err, sizeof(err));
    assert_true(rc == -EIO || rc == STORE_INGEST_WRITTEN);
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(unlink(filler2), 0);
    for (int i = 0; i < 40 && rc != STORE_INGEST_WRITTEN; i++) {
        clock_sleep_ns(100 * NSEC_PER_MSEC);
        rc = store_ingest(f->s, &t->b, err, sizeof(err));
    }
    assert_int_equal(rc, STORE_INGEST_WRITTEN);
    tbatch_free(t);
    /* and it goes on */
    for (uint64_t last = seq + 20; seq < last; seq++) {
        t = tbatch_new("agent-1", seq + 1, "job-full", 0, 8, (seq + 1) * 8, 8,
                       T0 + (seq + 1) * NSEC_PER_SEC);
        assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
        tbatch_free(t);
    }
    assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
    assert_int_equal(hwm, seq);
    assert_int_equal(count_steps(f->s, "job-full"), seq * 64);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-full");
    assert_int_equal(ji->rank_steps, seq * 64);
    argus__v1__job_info__free_unpacked(ji, NULL);
    store_get_stats(f->s, &st);
    assert_true(st.write_errors >= 1);
    printf("disk full after %" PRIu64 " batches, resumed\n", seq - 21);
}

/* A job's state from diagnosis goes into its JobInfo, survives a reopen and
 * the next ingest of the job; a job without a JobInfo is left alone. */
static void test_job_state(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-s", 1, "sj", 0, 2, 0, 2, T0);
    char err[256];

    assert_true(store_ingest(f->s, &t->b, err, sizeof(err)) >= 0);
    assert_int_equal(store_put_job_state(f->s, "sj", ARGUS__V1__JOB_STATE__JOB_STATE_FAILED,
                                         "rank 1 killed by SIGKILL", 2, err, sizeof(err)),
                     0);
    assert_int_equal(store_put_job_state(f->s, "nobody", 1, "", 0, err, sizeof(err)), 0);
    assert_null(job_info(f->s, "nobody"));
    store_close(f->s);
    f->s = open_store(f);
    t->b.seq = 2;
    t->steps[0].step = t->steps[1].step = 5;
    assert_true(store_ingest(f->s, &t->b, err, sizeof(err)) >= 0);
    Argus__V1__JobInfo *ji = job_info(f->s, "sj");
    assert_non_null(ji);
    assert_int_equal(ji->state, ARGUS__V1__JOB_STATE__JOB_STATE_FAILED);
    assert_string_equal(ji->state_reason, "rank 1 killed by SIGKILL");
    assert_int_equal(ji->restart, 2);
    assert_int_equal(ji->last_step, 5);
    argus__v1__job_info__free_unpacked(ji, NULL);
    tbatch_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_duplicate_and_gaps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_distinct_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_odd_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_state, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
