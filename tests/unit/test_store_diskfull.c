/* The store on a disk that fills up again and again (a tmpfs: root). Each
 * cycle: the disk is filled, batches go in until a write fails, the rest of
 * the space is taken so that the reopen fails too (the store is closed), the
 * writers that build their own batches (owners, alerts, actions) are called
 * while it is closed, then space is freed and ingest resumes by itself. After
 * every cycle, every batch acked so far is there, counted once.
 *
 * What it guards: the owners, alerts and actions writers built their batch
 * with the family handles before taking the writers' lock, which a closed
 * store has as NULL (the collector crashed on a full disk; this test crashed
 * too). The loss that RocksDB 7.8's compressed WAL (store.wal_compression)
 * caused after such failures needs less compressible records than these to
 * show (12 cycles x 3 runs with it on passed here);
 * tests/integration/collector_diskfull.sh is the one that met it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tests/unit/store_fixture.h"

#define CYCLES 12
#define RANKS 8
#define STEPS 8

/* Fill path until about leave_kib KiB stay free on dir's file system. */
static void fill_leaving(const char *dir, const char *path, uint64_t leave_kib)
{
    static const char block[1024];
    struct statvfs vfs;
    FILE *fp = fopen(path, "w");
    uint64_t kib;

    assert_non_null(fp);
    assert_int_equal(statvfs(dir, &vfs), 0);
    kib = vfs.f_bavail * vfs.f_bsize / 1024;
    kib = kib > leave_kib ? kib - leave_kib : 0;
    for (uint64_t i = 0; i < kib || (!leave_kib && i < UINT64_MAX); i++)
        if (fwrite(block, 1, sizeof(block), fp) != sizeof(block) || fflush(fp))
            break;
    fclose(fp);
}

/* The writers that build their own batch, while the store may be closed:
 * each answers 0 or an error, and does not crash. */
static void side_writers(struct store *s, uint64_t cycle)
{
    char err[256], key[32];
    const char *keys[1] = {key};
    const void *vals[1] = {"v"};
    size_t vlens[1] = {1};
    struct store_pair kv = {key, 0, "owner", 5};
    int rc[5];

    snprintf(key, sizeof(key), "job-full%c%04" PRIu64, 0, cycle);
    kv.klen = strlen("job-full") + 5;
    rc[0] = store_put_owners(s, &kv, 1, err, sizeof(err));
    rc[1] = store_put_alert(s, key, kv.klen, "a", 1, err, sizeof(err));
    rc[2] = store_delete_alert(s, key, kv.klen, err, sizeof(err));
    rc[3] = store_put_actions(s, 1, keys, vals, vlens, err, sizeof(err));
    rc[4] = store_delete_owners(s, "job-gone", err, sizeof(err));
    for (int i = 0; i < 5; i++)
        assert_true(rc[i] == 0 || rc[i] == -EIO);
}

static void test_fill_free_cycles(void **state)
{
    struct fix *f = *state;
    char err[256] = "", filler[128], filler2[128];
    struct store_stats st;
    uint64_t seq = 0, acked = 0, hwm;
    int closed = 0, rc;

    fix_on_tmpfs(f, "size=24m", "the disk-full cycles");
    f->o.memtable_bytes = 4u << 20; /* WALs preallocated to 4.4 MiB */
    f->s = open_store(f);
    snprintf(filler, sizeof(filler), "%s/filler", f->dir);
    snprintf(filler2, sizeof(filler2), "%s/filler2", f->dir);
    for (uint64_t cycle = 0; cycle < CYCLES; cycle++) {
        struct tbatch *t = NULL;

        /* room for a few batches past the WAL's preallocation */
        fill_leaving(f->dir, filler, 1024 + 256 * (cycle % 4));
        for (rc = STORE_INGEST_WRITTEN; rc == STORE_INGEST_WRITTEN && seq < 100000;) {
            if (t)
                tbatch_free(t);
            t = tbatch_new("agent-1", seq + 1, "job-full", 0, RANKS, seq * STEPS, STEPS,
                           T0 + seq * NSEC_PER_SEC);
            rc = store_ingest(f->s, &t->b, err, sizeof(err));
            if (rc == STORE_INGEST_WRITTEN)
                acked = ++seq;
        }
        assert_int_equal(rc, -EIO);
        /* no room at all: the reopen after the failure fails too */
        fill_leaving(f->dir, filler2, 0);
        clock_sleep_ns(NSEC_PER_SEC + 100 * NSEC_PER_MSEC);
        rc = store_ingest(f->s, &t->b, err, sizeof(err));
        assert_true(rc == -EIO || rc == STORE_INGEST_WRITTEN);
        if (rc == STORE_INGEST_WRITTEN)
            acked = ++seq;
        store_get_stats(f->s, &st);
        closed += strcmp(st.last_error, "store is closed") == 0 || st.failing;
        side_writers(f->s, cycle);
        assert_int_equal(unlink(filler), 0);
        assert_int_equal(unlink(filler2), 0);
        /* space is back: the batch that failed goes in within a few reopens */
        for (int i = 0; i < 40 && rc != STORE_INGEST_WRITTEN; i++) {
            clock_sleep_ns(100 * NSEC_PER_MSEC);
            rc = store_ingest(f->s, &t->b, err, sizeof(err));
            if (rc == STORE_INGEST_WRITTEN)
                acked = ++seq;
        }
        assert_int_equal(rc, STORE_INGEST_WRITTEN);
        tbatch_free(t);
        side_writers(f->s, cycle);
        /* every batch acked so far, after this cycle's reopens */
        assert_int_equal(store_high_water(f->s, "agent-1", 7, &hwm), 0);
        assert_int_equal(hwm, acked);
        assert_int_equal(count_steps(f->s, "job-full"), acked * RANKS * STEPS);
        assert_int_equal(job_info_rank_steps(f->s, "job-full"), acked * RANKS * STEPS);
    }
    printf("%d cycles, %" PRIu64 " batches acked and all there; the store was failing or closed "
           "after %d of the full disks\n",
           CYCLES, acked, closed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fill_free_cycles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
