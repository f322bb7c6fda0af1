/* The store's retention, for real, in a temporary directory: old steps,
 * the jobs left without steps (ranks, names, JobInfo), the time index and old
 * reports go; what is newer stays. Steps age by the collector's receive
 * time: a node whose clock is 8 days behind loses nothing early, and a replay
 * keeps old steps until it ages out too. The fixture is in store_fixture.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <rocksdb/c.h>

#include "tests/unit/store_fixture.h"

/* Drop one column family of the store in dir, as if an older collector had
 * written it. */
static void drop_family(const char *dir, const char *family)
{
    rocksdb_options_t *o = rocksdb_options_create();
    char *rerr = NULL, **names;
    size_t n = 0;

    names = rocksdb_list_column_families(o, dir, &n, &rerr);
    assert_null(rerr);
    const rocksdb_options_t **opts = calloc(n, sizeof(*opts));
    rocksdb_column_family_handle_t **cf = calloc(n, sizeof(*cf));
    for (size_t i = 0; i < n; i++)
        opts[i] = o;
    rocksdb_t *db =
        rocksdb_open_column_families(o, dir, (int)n, (const char *const *)names, opts, cf, &rerr);
    assert_null(rerr);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], family) == 0) {
            rocksdb_drop_column_family(db, cf[i], &rerr);
            assert_null(rerr);
        }
        rocksdb_column_family_handle_destroy(cf[i]);
    }
    rocksdb_close(db);
    rocksdb_list_column_families_destroy(names, n);
    rocksdb_options_destroy(o);
    free(opts);
    free(cf);
}

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
    assert_int_equal(store_ingest_raw(f->s, &o->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest_raw(f->s, &l1->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest_raw(f->s, &l2->b, NULL, T0 + 10 * hour, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
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
    assert_int_equal(store_ingest_raw(f->s, &o->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
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

/* A node whose clock is 8 days behind, next to one in sync, retention 7 days:
 * nothing goes early; everything goes once it was received over 7 days ago. */
static void test_node_clock_days_behind(void **state)
{
    struct fix *f = *state;
    const uint64_t day = 86400 * NSEC_PER_SEC, minute = 60 * NSEC_PER_SEC;
    struct tbatch *skewed = tbatch_new("node-behind", 1, "job-s", 0, 4, 0, 10, T0 - 8 * day);
    struct tbatch *synced = tbatch_new("node-ok", 1, "job-s", 4, 4, 0, 10, T0);
    struct time_got t = {0};
    char err[256];

    store_close(f->s);
    f->o.steps_retention_ns = 7 * day;
    f->s = open_store(f);
    assert_int_equal(store_ingest_raw(f->s, &skewed->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest_raw(f->s, &synced->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    /* the next passes, up to a second short of 7 days after receipt: all stays
     * (the time index, on the agents' clocks, forgets the skewed node's
     * seconds: it only indexes) */
    assert_true(store_apply_retention(f->s, T0 + minute) >= 0);
    assert_int_equal(count_steps(f->s, "job-s"), 80);
    assert_true(store_apply_retention(f->s, T0 + 7 * day - NSEC_PER_SEC) >= 0);
    assert_int_equal(count_steps(f->s, "job-s"), 80);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-s");
    assert_non_null(ji);
    assert_int_equal(ji->rank_steps, 80);
    assert_int_equal(ji->first_seen_unix_ns, T0);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_int_equal(store_scan_time(f->s, T0, 0, time_cb, &t), 0);
    assert_int_equal(t.n, 1);
    /* a minute later than that, the receiving minute has aged out: all goes */
    assert_true(store_apply_retention(f->s, T0 + 7 * day + 2 * minute) > 0);
    assert_int_equal(count_steps(f->s, "job-s"), 0);
    assert_null(job_info(f->s, "job-s"));
    tbatch_free(skewed);
    tbatch_free(synced);
}

/* Steps replayed two days later (a new epoch) are counted once, and keep the
 * job's steps from them on until the replay ages out too. */
static void test_replay_keeps_until_it_ages(void **state)
{
    struct fix *f = *state;
    const uint64_t day = 86400 * NSEC_PER_SEC;
    struct tbatch *first = tbatch_new("node-a", 1, "job-r", 0, 2, 0, 10, T0);
    struct tbatch *replay = tbatch_new("node-a", 1, "job-r", 0, 2, 0, 5, T0);
    char err[256];

    store_close(f->s);
    f->o.steps_retention_ns = 7 * day;
    f->s = open_store(f);
    replay->b.epoch = 8;
    assert_int_equal(store_ingest_raw(f->s, &first->b, NULL, T0, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    assert_int_equal(store_ingest_raw(f->s, &replay->b, NULL, T0 + 2 * day, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    Argus__V1__JobInfo *ji = job_info(f->s, "job-r");
    assert_int_equal(ji->rank_steps, 20);
    assert_int_equal(ji->last_seen_unix_ns, T0 + 2 * day);
    argus__v1__job_info__free_unpacked(ji, NULL);
    assert_true(store_apply_retention(f->s, T0 + 8 * day) >= 0);
    assert_int_equal(count_steps(f->s, "job-r"), 20);
    assert_true(store_apply_retention(f->s, T0 + 9 * day + 3600 * NSEC_PER_SEC) > 0);
    assert_int_equal(count_steps(f->s, "job-r"), 0);
    tbatch_free(first);
    tbatch_free(replay);
}

/* A store written before the received index existed gets it from the time
 * index at open (the agents' clocks are all it had), so its steps still age. */
static void test_received_index_built_at_open(void **state)
{
    struct fix *f = *state;
    const uint64_t day = 86400 * NSEC_PER_SEC;
    struct tbatch *t = tbatch_new("node-a", 1, "job-m", 0, 2, 0, 5, T0);
    char err[256];

    store_close(f->s);
    f->o.steps_retention_ns = 7 * day;
    f->s = open_store(f);
    assert_int_equal(store_ingest_raw(f->s, &t->b, NULL, T0 + 30 * day, err, sizeof(err)),
                     STORE_INGEST_WRITTEN);
    store_close(f->s);
    f->s = NULL;
    drop_family(f->dir, "received");
    f->s = open_store(f);
    assert_int_equal(count_steps(f->s, "job-m"), 10);
    assert_true(store_apply_retention(f->s, T0 + 7 * day + 120 * NSEC_PER_SEC) > 0);
    assert_int_equal(count_steps(f->s, "job-m"), 0);
    tbatch_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_clock_days_behind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_keeps_until_it_ages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_received_index_built_at_open, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
