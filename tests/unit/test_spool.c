/* The live spool on real files in a temporary directory: round trip,
 * restart, identity, cap (and the losses it reports), fsync policies, one
 * owner per directory, disk full (tmpfs, needs root). What spool_open finds
 * after crashes and damage is tested in test_spool_recover.c. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/spool.h"
#include "common/clock.h"
#include "tests/lib/spool_test.h"

static void test_round_trip(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.max_record_bytes = 4096};
    struct spool *s = open_ok(f->dir, &o);
    uint8_t buf[8192];
    const void *data;
    uint64_t seq;
    size_t len;

    assert_true(spool_epoch(s) != 0);
    assert_int_equal(spool_next_seq(s), 1);
    assert_int_equal(spool_read(s, 0, &seq, &data, &len), 0);
    append_n(s, 3, 300);
    assert_int_equal(read_all(s, 0, 300, NULL, 0), 3);
    assert_int_equal(spool_read(s, 1, &seq, &data, &len), 1);
    assert_int_equal(seq, 2);
    assert_int_equal(spool_read(s, 3, &seq, &data, &len), 0);
    assert_int_equal(spool_ack(s, 2), 0);
    assert_int_equal(spool_read(s, 0, &seq, &data, &len), 1);
    assert_int_equal(seq, 3);
    assert_int_equal(spool_ack(s, 1), 0); /* lower watermark: ignored */
    assert_int_equal(stats_of(s).acked_seq, 2);
    assert_int_equal(spool_ack(s, 4), -ERANGE);
    assert_int_equal(spool_append(s, buf, 4097, &seq), -EMSGSIZE);
    assert_int_equal(spool_next_seq(s), 4); /* a failed append keeps the seq */
    assert_int_equal(stats_of(s).appended, 3);
    assert_int_equal(stats_of(s).acked, 2);
    assert_int_equal(stats_of(s).records, 1);
    assert_int_equal(spool_append(s, "", 0, &seq), 0); /* empty batch is fine */
    assert_int_equal(seq, 4);
    assert_int_equal(spool_read(s, 3, &seq, &data, &len), 1);
    assert_int_equal(len, 0);
    spool_close(s);
}

static void test_restart_replays_unacked(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.segment_bytes = 4096};
    struct spool *s = open_ok(f->dir, &o);
    uint64_t epoch = spool_epoch(s), seqs[32], before;
    char names[64][128];

    append_n(s, 20, 1000);
    before = stats_of(s).segments;
    assert_true(before >= 4);
    assert_int_equal(spool_ack(s, 9), 0);
    assert_true(stats_of(s).segments < before); /* fully acked segments deleted */
    assert_int_equal(seg_files(f->dir, names, 64), (int)stats_of(s).segments);
    spool_close(s);

    s = open_ok(f->dir, &o);
    assert_int_equal(spool_epoch(s), epoch);
    assert_int_equal(stats_of(s).acked_seq, 9);
    assert_int_equal(stats_of(s).records, 11);
    assert_int_equal(read_all(s, 0, 1000, seqs, 32), 11);
    for (int i = 0; i < 11; i++)
        assert_int_equal(seqs[i], 10 + i);
    assert_int_equal(read_all(s, 15, 1000, seqs, 32), 5);
    assert_int_equal(seqs[0], 16);
    assert_int_equal(spool_next_seq(s), 21); /* clean restart: no gap */
    append_n(s, 1, 1000);
    assert_int_equal(stats_of(s).corrupt_records, 0);
    spool_close(s);
}

static void test_all_acked_restart(void **state)
{
    struct fixture *f = *state;
    struct spool *s = open_ok(f->dir, NULL);
    uint64_t epoch = spool_epoch(s);
    char names[8][128], path[128];

    append_n(s, 5, 100);
    assert_int_equal(spool_ack(s, 5), 0);
    spool_close(s);
    assert_int_equal(seg_files(f->dir, names, 8), 0);

    s = open_ok(f->dir, NULL);
    assert_int_equal(stats_of(s).records, 0);
    /* the property: a seq is never reused within an epoch */
    assert_true(spool_epoch(s) != epoch || spool_next_seq(s) > 5);
    /* this design: the identity survives in meta, seq continues */
    assert_int_equal(spool_epoch(s), epoch);
    assert_int_equal(spool_next_seq(s), 6);
    append_n(s, 1, 100);
    assert_int_equal(spool_ack(s, 6), 0);
    spool_close(s);

    snprintf(path, sizeof(path), "%s/meta", f->dir);
    assert_int_equal(unlink(path), 0); /* identity lost, no records: new epoch */
    s = open_ok(f->dir, NULL);
    assert_true(spool_epoch(s) != epoch);
    assert_int_equal(spool_next_seq(s), 1);
    spool_close(s);
}

/* Every appended record is, at any time, exactly one of: dropped, acked or held. */
static void check_accounting(struct spool *s, uint64_t appended, uint64_t cap)
{
    struct spool_stats st = stats_of(s);

    assert_true(st.bytes <= cap);
    assert_int_equal(st.dropped_records + st.acked + st.records, appended);
}

static void test_cap_drops_oldest(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.cap_bytes = 64 << 10, .segment_bytes = 16 << 10};
    struct spool *s = open_ok(f->dir, &o);
    struct spool_stats st;
    uint64_t seqs[128], dropped;
    size_t n;

    for (int i = 0; i < 100; i++) {
        append_n(s, 1, 2000);
        check_accounting(s, (uint64_t)i + 1, o.cap_bytes);
    }
    st = stats_of(s);
    assert_true(st.dropped_records > 50);
    assert_int_equal(st.dropped_bytes, st.dropped_records * 2000);
    n = read_all(s, 0, 2000, seqs, 128);
    assert_int_equal(n, st.records);
    assert_int_equal(seqs[0], st.dropped_records + 1); /* oldest went first */
    assert_int_equal(seqs[n - 1], 100);

    /* acked records in a dropped segment are not counted as dropped */
    assert_int_equal(spool_ack(s, seqs[2]), 0);
    for (int i = 0; i < 60; i++) {
        append_n(s, 1, 2000);
        check_accounting(s, 101 + (uint64_t)i, o.cap_bytes);
    }
    dropped = stats_of(s).dropped_records;
    spool_close(s);

    s = open_ok(f->dir, &o); /* the counters survive a restart */
    assert_int_equal(stats_of(s).dropped_records, dropped);
    assert_int_equal(stats_of(s).dropped_bytes, dropped * 2000);
    n = read_all(s, 0, 2000, seqs, 128);
    assert_int_equal(n, stats_of(s).records);
    assert_int_equal(seqs[n - 1], 160);
    assert_int_equal(spool_append(s, NULL, 64 << 10, NULL), -EMSGSIZE); /* over the cap */
    spool_close(s);
}

static void test_fsync_policies(void **state)
{
    struct fixture *f = *state;
    const struct spool_options opts[] = {
        {.fsync = SPOOL_FSYNC_INTERVAL, .segment_bytes = 8192},
        {.fsync = SPOOL_FSYNC_INTERVAL, .fsync_interval_ns = 1, .segment_bytes = 8192},
        {.fsync = SPOOL_FSYNC_SEGMENT, .segment_bytes = 8192},
        {.fsync = SPOOL_FSYNC_ALWAYS, .segment_bytes = 8192},
    };
    struct spool_options bad = {.fsync = (enum spool_fsync)7};
    struct spool *s = NULL;

    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        char dir[128];
        uint64_t f0, f1;

        snprintf(dir, sizeof(dir), "%s/p%zu", f->dir, i);
        s = open_ok(dir, &opts[i]);
        f0 = stats_of(s).fsyncs;
        append_n(s, 30, 1000);
        f1 = stats_of(s).fsyncs;
        if (opts[i].fsync == SPOOL_FSYNC_ALWAYS || opts[i].fsync_interval_ns == 1)
            assert_true(f1 - f0 >= 30);
        else
            assert_true(f1 - f0 > 0 && f1 - f0 < 30); /* per segment (and dir) only */
        if (i == 0) {                                 /* interval: tick does the fsync */
            assert_int_equal(spool_tick(s, clock_mono_ns()), 0);
            assert_int_equal(stats_of(s).fsyncs, f1); /* interval not over */
            assert_int_equal(spool_tick(s, clock_mono_ns() + 2 * NSEC_PER_SEC), 0);
            assert_int_equal(stats_of(s).fsyncs, f1 + 1);
            assert_int_equal(spool_tick(s, clock_mono_ns() + 4 * NSEC_PER_SEC), 0);
            assert_int_equal(stats_of(s).fsyncs, f1 + 1); /* nothing new to sync */
        }
        assert_int_equal(stats_of(s).fsync_errors, 0);
        spool_close(s);
        s = open_ok(dir, &opts[i]);
        assert_int_equal(read_all(s, 0, 1000, NULL, 0), 30);
        spool_close(s);
    }
    assert_int_equal(spool_open(f->dir, &bad, &s), -EINVAL);
    assert_null(s);
}

static void test_one_owner(void **state)
{
    struct fixture *f = *state;
    struct spool *a = open_ok(f->dir, NULL), *b = NULL;
    char sub[128];
    struct stat sb;

    assert_int_equal(spool_open(f->dir, NULL, &b), -EBUSY);
    assert_null(b);
    spool_close(a);
    a = open_ok(f->dir, NULL);
    spool_close(a);
    snprintf(sub, sizeof(sub), "%s/a/b/spool", f->dir); /* parents created, 0700 */
    a = open_ok(sub, NULL);
    assert_int_equal(stat(sub, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    spool_close(a);
    spool_close(NULL);
}

/* Disk full: a tmpfs of 256 KiB in a private mount namespace. */
static void test_disk_full(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.cap_bytes = 1 << 20, .segment_bytes = 64 << 10};
    char mnt[128], dir[160];
    struct spool *s;
    uint8_t buf[16384];
    uint64_t seq, ok = 0, on_disk = 0;
    char names[16][128];
    int err = 0, nseg;

    if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("skip: disk-full test needs root and mount namespaces\n");
        skip();
    }
    snprintf(mnt, sizeof(mnt), "%s/mnt", f->dir);
    assert_int_equal(mkdir(mnt, 0700), 0);
    assert_int_equal(mount("tmpfs", mnt, "tmpfs", 0, "size=256k"), 0);
    snprintf(dir, sizeof(dir), "%s/spool", mnt);
    s = open_ok(dir, &o);
    while (ok < 64) {
        payload(spool_next_seq(s), sizeof(buf), buf);
        err = spool_append(s, buf, sizeof(buf), &seq);
        if (err)
            break;
        ok++;
    }
    assert_int_equal(err, -ENOSPC);
    assert_true(ok > 4);
    assert_int_equal(spool_next_seq(s), ok + 1);
    nseg = seg_files(dir, names, 16);
    for (int i = 0; i < nseg; i++)
        on_disk += (uint64_t)file_size(names[i]);
    assert_int_equal(on_disk, stats_of(s).bytes); /* the partial record was cut off */
    assert_int_equal(on_disk, ok * (HDR + sizeof(buf)));
    assert_int_equal(spool_ack(s, ok), 0); /* frees the closed segments */
    append_n(s, 1, sizeof(buf));
    spool_close(s);
    s = open_ok(dir, &o);
    assert_int_equal(stats_of(s).corrupt_records, 0); /* no torn record left behind */
    assert_int_equal(read_all(s, 0, sizeof(buf), &seq, 1), 1);
    assert_int_equal(seq, ok + 1);
    spool_close(s);
    assert_int_equal(umount2(mnt, MNT_DETACH), 0);
}

/* The cap's losses reach on_loss as they are counted; a reopened spool
 * reports the epoch's total once, so the table always equals
 * dropped_records. */
static void test_cap_losses_reported(void **state)
{
    struct fixture *f = *state;
    struct drops *d = drops_new();
    struct spool_options o = {.cap_bytes = 64 << 10,
                              .segment_bytes = 16 << 10,
                              .on_loss = loss_to_drops,
                              .on_loss_ctx = d};
    struct spool *s = open_ok(f->dir, &o);
    uint64_t dropped;

    assert_int_equal(drops_count(d), 0); /* nothing lost, nothing reported */
    for (int i = 0; i < 100; i++) {
        append_n(s, 1, 2000);
        assert_int_equal(drops_get(d, SPOOL_LOSS_CAP, NULL, -1), stats_of(s).dropped_records);
    }
    dropped = stats_of(s).dropped_records;
    assert_true(dropped > 50);
    assert_int_equal(drops_count(d), 1);
    spool_close(s);
    drops_free(d);

    d = drops_new(); /* a restarted agent */
    o.on_loss_ctx = d;
    s = open_ok(f->dir, &o);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CAP, NULL, -1), dropped);
    assert_int_equal(drops_count(d), 1);
    append_n(s, 10, 2000); /* over the cap again */
    assert_true(stats_of(s).dropped_records > dropped);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CAP, NULL, -1), stats_of(s).dropped_records);
    spool_close(s);
    drops_free(d);
}
/* Records the cap deletes at or below the delivered watermark (a
 * collector has them) are counted as behind, not as a loss; spool_peek
 * finds the oldest unacked seq without reading. */
static void test_cap_behind_delivered(void **state)
{
    struct fixture *f = *state;
    struct drops *d = drops_new();
    struct spool_options o = {.cap_bytes = 64 << 10,
                              .segment_bytes = 16 << 10,
                              .on_loss = loss_to_drops,
                              .on_loss_ctx = d};
    struct spool *s = open_ok(f->dir, &o);
    uint64_t seq = 0, behind;

    assert_int_equal(spool_peek(s, 0, &seq), 0);
    append_n(s, 10, 2000);
    assert_int_equal(spool_peek(s, 0, &seq), 1);
    assert_int_equal(seq, 1);
    assert_int_equal(spool_peek(s, 4, &seq), 1);
    assert_int_equal(seq, 5);
    assert_int_equal(spool_peek(s, 10, &seq), 0);
    assert_int_equal(spool_count(s, 0, UINT64_MAX), 10);
    assert_int_equal(spool_count(s, 2, 6), 3); /* 3, 4, 5 */
    assert_int_equal(spool_count(s, 9, 3), 0);
    spool_set_delivered(s, 20); /* every record up to 20 reached a live collector */
    append_n(s, 30, 2000);
    behind = stats_of(s).behind_records;
    assert_true(behind > 0);
    assert_int_equal(stats_of(s).dropped_records, 0);
    assert_int_equal(drops_get(d, SPOOL_LOSS_BEHIND, NULL, -1), behind);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CAP, NULL, -1), 0);
    assert_int_equal(spool_peek(s, 0, &seq), 1);
    assert_true(seq > behind); /* the oldest left */
    append_n(s, 40, 2000);     /* past the delivered watermark: a loss again */
    assert_true(stats_of(s).dropped_records > 0);
    assert_true(stats_of(s).behind_records <= 20);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CAP, NULL, -1), stats_of(s).dropped_records);
    spool_close(s);
    drops_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_replays_unacked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_acked_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_drops_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_losses_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_behind_delivered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_policies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
