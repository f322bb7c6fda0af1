/* The store's reads, for real, in a temporary directory: every scan (steps
 * by window and rank, ranks, jobs, reports), compaction, names, reports by id,
 * and the time index with its cache. The fixture is in store_fixture.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/store_fixture.h"

/* ---- tests -------------------------------------------------------------------------- */

static void test_ingest_and_scan(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-a", 0, 4, 10, 5, T0);
    struct store_stats st;
    struct got g = {0};
    char err[256] = "";

    /* received an hour after the steps started by the agent's clock */
    assert_int_equal(
        store_ingest_raw(f->s, &t->b, NULL, T0 + 3600 * NSEC_PER_SEC, err, sizeof(err)),
        STORE_INGEST_WRITTEN);
    /* all ranks: ordered by (step, rank), identical bytes */
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 20);
    for (size_t i = 0; i < 20; i++)
        assert_same_step(&g, i, t->step_ptrs[i]);
    got_free(&g);
    /* a step window of one rank */
    assert_int_equal(store_scan_steps(f->s, "job-a", 2, 11, 13, collect, &g), 0);
    assert_int_equal(g.n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_same_step(&g, i, t->step_ptrs[(1 + i) * 4 + 2]);
    got_free(&g);
    /* a window of all ranks, and a rank that does not exist */
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 12, 12, collect, &g), 0);
    assert_int_equal(g.n, 4);
    assert_same_step(&g, 0, t->step_ptrs[8]);
    got_free(&g);
    assert_int_equal(store_scan_steps(f->s, "job-a", 9, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 0);
    /* a job whose id is a prefix of this one sees nothing */
    assert_int_equal(store_scan_steps(f->s, "job-", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 0);
    /* stop early */
    g.stop_after = 2;
    assert_int_equal(store_scan_steps(f->s, "job-a", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 2);
    got_free(&g);
    /* ranks, by rank */
    assert_int_equal(store_scan_ranks(f->s, "job-a", collect, &g), 0);
    assert_int_equal(g.n, 4);
    for (size_t i = 0; i < 4; i++) {
        Argus__V1__Resource *r = argus__v1__resource__unpack(NULL, g.len[i], g.bytes[i]);
        assert_non_null(r);
        assert_int_equal(r->rank, i);
        assert_string_equal(r->node, "node-a");
        argus__v1__resource__free_unpacked(r, NULL);
    }
    got_free(&g);
    /* JobInfo */
    Argus__V1__JobInfo *ji = job_info(f->s, "job-a");
    assert_non_null(ji);
    assert_int_equal(ji->rank_steps, 20);
    assert_int_equal(ji->ranks_seen, 4);
    assert_int_equal(ji->world_size, 17);
    assert_int_equal(ji->last_step, 14);
    /* first and last seen: the collector's receive clock */
    assert_int_equal(ji->first_seen_unix_ns, T0 + 3600 * NSEC_PER_SEC);
    assert_int_equal(ji->last_seen_unix_ns, T0 + 3600 * NSEC_PER_SEC);
    argus__v1__job_info__free_unpacked(ji, NULL);
    /* flushed and compacted, the same records are read from SST files */
    assert_int_equal(store_compact(f->s), 0);
    store_get_stats(f->s, &st);
    assert_true(st.live_sst_bytes > 0);
    assert_int_equal(store_scan_steps(f->s, "job-a", 3, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 5);
    assert_same_step(&g, 4, t->step_ptrs[4 * 4 + 3]);
    got_free(&g);
    tbatch_free(t);
}

static void test_names(void **state)
{
    struct fix *f = *state;
    struct tbatch *t = tbatch_new("agent-1", 1, "job-a", 0, 1, 0, 1, T0);
    char err[256], *name;

    t->names[1].name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    assert_int_equal(store_ingest(f->s, &t->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    name = store_get_name(f->s, "job-a", 100);
    assert_string_equal(name, "forward");
    free(name);
    name = store_get_name(f->s, "job-a", 101);
    assert_string_equal(name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    free(name);
    assert_null(store_get_name(f->s, "job-a", 102));
    assert_null(store_get_name(f->s, "job-b", 100));
    tbatch_free(t);
}

static uint64_t report_created(const struct got *g, size_t i)
{
    Argus__V1__Report *r = argus__v1__report__unpack(NULL, g->len[i], g->bytes[i]);
    uint64_t c;

    assert_non_null(r);
    c = r->created_unix_ns;
    argus__v1__report__free_unpacked(r, NULL);
    return c;
}

static void test_reports(void **state)
{
    struct fix *f = *state;
    struct got g = {0};

    put_report(f->s, "r3", "job-a", T0 + 30);
    put_report(f->s, "r1", "job-a", T0 + 10);
    put_report(f->s, "r2", "job-a", T0 + 20);
    put_report(f->s, "r9", "job-b", T0 + 15);
    assert_int_equal(store_scan_reports(f->s, "job-a", 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(report_created(&g, 0), T0 + 10);
    assert_int_equal(report_created(&g, 2), T0 + 30);
    got_free(&g);
    assert_int_equal(store_scan_reports(f->s, "job-a", T0 + 15, T0 + 20, collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(report_created(&g, 0), T0 + 20);
    got_free(&g);
    assert_int_equal(store_get_report(f->s, "r9", collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(report_created(&g, 0), T0 + 15);
    got_free(&g);
    assert_int_equal(store_get_report(f->s, "nope", collect, &g), -ENOENT);
    /* the same id put again moves, it is not duplicated */
    put_report(f->s, "r1", "job-a", T0 + 40);
    assert_int_equal(store_scan_reports(f->s, "job-a", 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(report_created(&g, 2), T0 + 40);
    got_free(&g);
}

static void test_time_index(void **state)
{
    struct fix *f = *state;
    /* job-a steps 0..9 at T0..T0+9 s; job-b steps 100..104 at T0+5..T0+9 s */
    struct tbatch *a = tbatch_new("agent-1", 1, "job-a", 0, 2, 0, 10, T0);
    struct tbatch *b = tbatch_new("agent-2", 1, "job-b", 0, 2, 100, 5, T0 + 5 * NSEC_PER_SEC);
    struct tbatch *a2 = tbatch_new("agent-1", 2, "job-a", 2, 2, 3, 1, T0 + 3 * NSEC_PER_SEC);
    struct time_got t = {0};
    char err[256];

    assert_int_equal(store_ingest(f->s, &a->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &b->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    /* more ranks of step 3, same second: read-modify-write through the cache */
    assert_int_equal(store_ingest(f->s, &a2->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(
        store_scan_time(f->s, T0 + 2 * NSEC_PER_SEC, T0 + 3 * NSEC_PER_SEC, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.h[0].job, "job-a");
    assert_int_equal(t.h[0].lo, 2);
    assert_int_equal(t.h[0].hi, 3);
    t.n = 0;
    assert_int_equal(
        store_scan_time(f->s, T0 + 4 * NSEC_PER_SEC, T0 + 6 * NSEC_PER_SEC, time_cb, &t), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.h[1].job, "job-b");
    assert_int_equal(t.h[0].lo, 4);
    assert_int_equal(t.h[0].hi, 6);
    assert_int_equal(t.h[1].lo, 100);
    assert_int_equal(t.h[1].hi, 101);
    t.n = 0;
    assert_int_equal(store_scan_time(f->s, T0 + 60 * NSEC_PER_SEC, 0, time_cb, &t), 0);
    assert_int_equal(t.n, 0);
    /* after a reopen the cache is cold: the update reads the DB */
    store_close(f->s);
    f->s = open_store(f);
    a2->b.seq = 3;
    for (size_t i = 0; i < a2->b.n_steps; i++)
        a2->steps[i].step = 1; /* step 1 reported again at T0+3 s */
    assert_int_equal(store_ingest(f->s, &a2->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(
        store_scan_time(f->s, T0 + 3 * NSEC_PER_SEC, T0 + 3 * NSEC_PER_SEC, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.h[0].lo, 1);
    assert_int_equal(t.h[0].hi, 3);
    tbatch_free(a);
    tbatch_free(b);
    tbatch_free(a2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ingest_and_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_index, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
