/* The store's retention, for real, in a temporary directory: old steps,
 * the jobs left without steps (ranks, names, JobInfo), the time index and old
 * reports go; what is newer stays. The fixture is in store_fixture.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/store_fixture.h"

/* ---- tests -------------------------------------------------------------------------- */

static void test_retention(void **state)
{
    struct fix *f = *state;
    const uint64_t hour = 3600 * NSEC_PER_SEC;
    /* job-old: only old steps; job-live: steps 0..4 old, 5..9 new */
    struct tbatch *o = tbatch_new("agent-1", 1, "job-old", 0, 2, 0, 4, T0);
    struct tbatch *l1 = tbatch_new("agent-2", 1, "job-live", 0, 3, 0, 5, T0);
    struct tbatch *l2 = tbatch_new("agent-2", 2, "job-live", 0, 3, 5, 5, T0 + 10 * hour);
    struct got g = {0};
    struct time_got t = {0};
    char err[256], *name;
    int64_t removed;

    store_close(f->s);
    f->o.steps_retention_ns = 24 * hour;
    f->o.reports_retention_ns = 24 * hour;
    f->s = open_store(f);
    assert_int_equal(store_ingest(f->s, &o->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &l1->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest(f->s, &l2->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    put_report(f->s, "old", "job-live", T0 + hour);
    put_report(f->s, "new", "job-live", T0 + 20 * hour);
    /* nothing is old yet */
    assert_int_equal(store_apply_retention(f->s, T0 + 20 * hour), 0);
    assert_int_equal(count_steps(f->s, "job-live"), 30);
    /* cutoff T0 + 5 h: job-old and the first half of job-live go */
    removed = store_apply_retention(f->s, T0 + 29 * hour);
    assert_true(removed > 0);
    assert_int_equal(count_steps(f->s, "job-old"), 0);
    assert_int_equal(store_scan_steps(f->s, "job-live", -1, 0, 0, collect, &g), 0);
    assert_int_equal(g.n, 15);
    assert_same_step(&g, 0, l2->step_ptrs[0]);
    got_free(&g);
    assert_null(job_info(f->s, "job-old"));
    Argus__V1__JobInfo *ji = job_info(f->s, "job-live");
    assert_non_null(ji);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_ranks(f->s, "job-old", collect, &g), 0);
    assert_int_equal(g.n, 0);
    assert_int_equal(store_scan_ranks(f->s, "job-live", collect, &g), 0);
    assert_int_equal(g.n, 3);
    got_free(&g);
    assert_null(store_get_name(f->s, "job-old", 100));
    name = store_get_name(f->s, "job-live", 100);
    assert_non_null(name);
    free(name);
    assert_int_equal(store_scan_time(f->s, 0, 0, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.h[0].lo, 5);
    assert_int_equal(store_get_report(f->s, "old", collect, &g), -ENOENT);
    assert_int_equal(store_get_report(f->s, "new", collect, &g), 0);
    got_free(&g);
    /* the job cache forgot job-old: it starts over when it comes back */
    o->b.seq = 2;
    assert_int_equal(store_ingest(f->s, &o->b, err, sizeof(err)), STORE_INGEST_WRITTEN);
    ji = job_info(f->s, "job-old");
    assert_int_equal(ji->rank_steps, 8);
    assert_int_equal(ji->ranks_seen, 2);
    argus__v1__job_info__free_unpacked(ji, NULL);
    /* a second run finds nothing more to do but the job that came back */
    assert_int_equal(store_apply_retention(f->s, T0 + 29 * hour) > 0, 1);
    assert_int_equal(store_apply_retention(f->s, T0 + 29 * hour), 0);
    tbatch_free(o);
    tbatch_free(l1);
    tbatch_free(l2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
