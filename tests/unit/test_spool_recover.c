/* What spool_open finds on disk, on real files in a temporary directory:
 * crash snapshots (never a reused seq), corruption (flipped bytes, torn
 * tails, garbage files, random damage), segments of another epoch, and the
 * losses reported for them. The live spool is tested in test_spool.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/spool.h"
#include "tests/lib/spool_test.h"

static void flip_byte(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    uint8_t b;

    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* Copy the regular files of src into dst (a crash snapshot of a live spool). */
static void dir_copy(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    struct dirent *de;
    static uint8_t buf[1 << 20];

    assert_non_null(d);
    assert_int_equal(mkdir(dst, 0700), 0);
    while ((de = readdir(d))) {
        char a[256], b[256];
        ssize_t n;
        int in, out;
        if (de->d_type != DT_REG)
            continue;
        snprintf(a, sizeof(a), "%s/%s", src, de->d_name);
        snprintf(b, sizeof(b), "%s/%s", dst, de->d_name);
        in = open(a, O_RDONLY);
        out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(in >= 0 && out >= 0);
        while ((n = read(in, buf, sizeof(buf))) > 0)
            assert_int_equal(write(out, buf, (size_t)n), n);
        close(in);
        close(out);
    }
    closedir(d);
}

/* A kill -9 (or power loss) snapshot: unsynced records may vanish, but a seq
 * handed out before the crash is never handed out again. */
static void test_crash_never_reuses_seq(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.fsync = SPOOL_FSYNC_SEGMENT};
    char live[128], snap[128], names[8][128];
    struct spool *s, *c;
    uint64_t epoch, seq;

    snprintf(live, sizeof(live), "%s/live", f->dir);
    snprintf(snap, sizeof(snap), "%s/snap", f->dir);
    s = open_ok(live, &o);
    epoch = spool_epoch(s);
    append_n(s, 5, 500);
    assert_int_equal(spool_ack(s, 2), 0);
    dir_copy(live, snap);
    spool_close(s);
    assert_int_equal(seg_files(snap, names, 8), 1);
    assert_int_equal(truncate(names[0], 3 * (HDR + 500) + 100), 0); /* lose 4 (torn), 5 */

    c = open_ok(snap, &o);
    assert_int_equal(spool_epoch(c), epoch);
    assert_int_equal(stats_of(c).acked_seq, 2); /* from the ack file alone */
    assert_int_equal(read_all(c, 0, 500, NULL, 0), 1);
    assert_int_equal(stats_of(c).corrupt_records, 1);
    assert_int_equal(stats_of(c).corrupt_bytes, 100);
    assert_true(spool_next_seq(c) > 5);
    append_n(c, 1, 500);
    assert_int_equal(spool_read(c, 3, &seq, &(const void *){NULL}, &(size_t){0}), 1);
    assert_true(seq > 5);
    spool_close(c);
}

/* Past the first reserved block of seqs, a crash still never reuses one. */
static void test_crash_after_reservation_renewal(void **state)
{
    struct fixture *f = *state;
    char live[128], snap[128], names[8][128];
    struct spool *s, *c;

    snprintf(live, sizeof(live), "%s/live", f->dir);
    snprintf(snap, sizeof(snap), "%s/snap", f->dir);
    s = open_ok(live, NULL);
    append_n(s, 5000, 1);
    dir_copy(live, snap);
    spool_close(s);
    assert_int_equal(seg_files(snap, names, 8), 1);
    assert_int_equal(truncate(names[0], 100 * (HDR + 1)), 0); /* only 1..100 survive */
    c = open_ok(snap, NULL);
    assert_int_equal(read_all(c, 0, 1, NULL, 0), 100);
    assert_true(spool_next_seq(c) > 5000);
    spool_close(c);
}

static void test_corrupt_middle(void **state)
{
    struct fixture *f = *state;
    struct spool *s = open_ok(f->dir, NULL);
    uint64_t seqs[32];
    char names[4][128];
    const void *data;
    uint64_t seq;
    size_t len;
    const off_t rec = HDR + 1000;

    append_n(s, 20, 1000);
    spool_close(s);
    assert_int_equal(seg_files(f->dir, names, 4), 1);
    flip_byte(names[0], 6 * rec + HDR + 500); /* payload of 7 */
    flip_byte(names[0], 11 * rec);            /* magic of 12 */
    flip_byte(names[0], 0 * rec + 5);         /* length of 1: resync from the start */

    s = open_ok(f->dir, NULL);
    assert_int_equal(stats_of(s).corrupt_records, 3);
    assert_int_equal(stats_of(s).corrupt_bytes, 3 * rec);
    assert_int_equal(read_all(s, 0, 1000, seqs, 32), 17);
    assert_int_equal(seqs[0], 2);
    assert_int_equal(seqs[5], 8);
    assert_int_equal(seqs[9], 13);
    spool_close(s);

    s = open_ok(f->dir, NULL); /* the same damage is not counted twice */
    assert_int_equal(stats_of(s).corrupt_records, 3);
    flip_byte(names[0], 14 * rec + HDR + 10); /* 15, after open: found at replay */
    assert_int_equal(spool_read(s, 14, &seq, &data, &len), 1);
    assert_int_equal(seq, 16);
    assert_int_equal(stats_of(s).corrupt_records, 4);
    assert_int_equal(stats_of(s).records, 16);
    spool_close(s);

    s = open_ok(f->dir, NULL);
    assert_int_equal(stats_of(s).corrupt_records, 4);
    assert_int_equal(stats_of(s).corrupt_bytes, 4 * rec);
    assert_int_equal(read_all(s, 0, 1000, NULL, 0), 16);
    spool_close(s);
}

/* Files deleted or cut under a live spool: replay counts and skips, no loop. */
static void test_segment_vanishes(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.segment_bytes = 5 * (HDR + 1000)};
    struct spool *s = open_ok(f->dir, &o);
    char names[8][128];
    uint64_t seqs[16];

    append_n(s, 15, 1000); /* three closed segments: 1-5, 6-10, 11-15 */
    assert_int_equal(seg_files(f->dir, names, 8), 3);
    assert_int_equal(unlink(names[0]), 0);
    assert_int_equal(truncate(names[1], 2 * (HDR + 1000)), 0); /* 8-10 gone */
    assert_int_equal(read_all(s, 0, 1000, seqs, 16), 7);
    assert_int_equal(seqs[0], 6);
    assert_int_equal(seqs[2], 11);
    assert_int_equal(stats_of(s).corrupt_records, 8);
    assert_int_equal(stats_of(s).records, 7);
    assert_int_equal(read_all(s, 0, 1000, NULL, 0), 7);
    assert_int_equal(stats_of(s).corrupt_records, 8); /* counted once */
    spool_close(s);
}

static void test_torn_tail(void **state)
{
    struct fixture *f = *state;
    struct spool *s = open_ok(f->dir, NULL);
    char names[4][128];
    const off_t rec = HDR + 1000;

    append_n(s, 5, 1000);
    spool_close(s);
    assert_int_equal(seg_files(f->dir, names, 4), 1);
    assert_int_equal(truncate(names[0], 4 * rec + 300), 0);

    s = open_ok(f->dir, NULL);
    assert_int_equal(stats_of(s).corrupt_records, 1);
    assert_int_equal(stats_of(s).corrupt_bytes, 300);
    assert_int_equal(read_all(s, 0, 1000, NULL, 0), 4);
    assert_int_equal(file_size(names[0]), 4 * rec); /* torn tail cut away */
    assert_int_equal(spool_next_seq(s), 6);         /* 5 was handed out: not reused */
    append_n(s, 1, 1000);
    spool_close(s);

    s = open_ok(f->dir, NULL);
    assert_int_equal(stats_of(s).corrupt_records, 1);
    assert_int_equal(read_all(s, 0, 1000, NULL, 0), 5);
    spool_close(s);

    flip_byte(names[0], 1 * rec + HDR + 1); /* new damage in an older record: counted */
    s = open_ok(f->dir, NULL);
    assert_int_equal(stats_of(s).corrupt_records, 2);
    assert_int_equal(stats_of(s).corrupt_bytes, 300 + rec);
    assert_int_equal(read_all(s, 0, 1000, NULL, 0), 4);
    spool_close(s);
}

static void test_garbage_files(void **state)
{
    struct fixture *f = *state;
    struct spool *s = open_ok(f->dir, NULL);
    uint64_t epoch = spool_epoch(s);
    uint8_t junk[5000];
    char path[256];

    append_n(s, 5, 700);
    spool_close(s);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(rand() >> 7);
    snprintf(path, sizeof(path), "%s/notes.txt", f->dir);
    write_file(path, junk, sizeof(junk));
    snprintf(path, sizeof(path), "%s/seg-zz.log", f->dir);
    write_file(path, junk, 100);
    snprintf(path, sizeof(path), "%s/seg-%016" PRIx64 "-%016" PRIx64 ".log", f->dir, epoch,
             (uint64_t)3);
    write_file(path, junk, 4000); /* named like a segment, all garbage */
    snprintf(path, sizeof(path), "%s/seg-%016" PRIx64 "-%016" PRIx64 ".log", f->dir, epoch,
             (uint64_t)256);
    write_file(path, junk, 0);
    snprintf(path, sizeof(path), "%s/seg-%016" PRIx64 "-%016" PRIx64 ".log", f->dir, epoch,
             (uint64_t)512);
    assert_int_equal(mkdir(path, 0700), 0); /* a directory named like a segment */

    s = open_ok(f->dir, NULL);
    assert_int_equal(read_all(s, 0, 700, NULL, 0), 5);
    assert_int_equal(stats_of(s).corrupt_bytes, 4000);
    assert_int_equal(stats_of(s).segments, 1);
    assert_int_equal(spool_epoch(s), epoch);
    spool_close(s);
    snprintf(path, sizeof(path), "%s/notes.txt", f->dir);
    assert_int_equal(file_size(path), sizeof(junk)); /* not ours: untouched */

    snprintf(path, sizeof(path), "%s/meta", f->dir);
    write_file(path, junk, 84); /* garbage meta: the records keep their epoch */
    snprintf(path, sizeof(path), "%s/ack", f->dir);
    write_file(path, junk, 1000);
    s = open_ok(f->dir, NULL);
    assert_int_equal(spool_epoch(s), epoch);
    assert_int_equal(read_all(s, 0, 700, NULL, 0), 5);
    assert_int_equal(spool_next_seq(s), 6);
    spool_close(s);
}

/* Segments of an older epoch (a lost identity) are dropped and counted. */
static void test_foreign_epoch(void **state)
{
    struct fixture *f = *state;
    char old[128], cur[128], names[4][128], to[256], path[256];
    struct spool *s;
    uint64_t epoch;

    snprintf(old, sizeof(old), "%s/old", f->dir);
    snprintf(cur, sizeof(cur), "%s/cur", f->dir);
    s = open_ok(old, NULL);
    append_n(s, 3, 100);
    spool_close(s);
    s = open_ok(cur, NULL);
    epoch = spool_epoch(s);
    append_n(s, 2, 100);
    spool_close(s);
    assert_int_equal(seg_files(old, names, 4), 1);
    snprintf(to, sizeof(to), "%s/%s", cur, strrchr(names[0], '/') + 1);
    assert_int_equal(rename(names[0], to), 0);
    snprintf(path, sizeof(path), "%s/meta", cur);
    assert_int_equal(unlink(path), 0); /* meta lost: the newest epoch on disk wins */

    s = open_ok(cur, NULL);
    assert_int_equal(spool_epoch(s), epoch);
    assert_int_equal(read_all(s, 0, 100, NULL, 0), 2);
    assert_int_equal(stats_of(s).dropped_records, 3);
    assert_int_equal(stats_of(s).dropped_bytes, 300);
    assert_int_equal(stats_of(s).segments, 1);
    spool_close(s);
}

/* Random damage to a pristine spool: open never fails, every record returned
 * is intact and in order, a single flipped byte costs exactly one record, and
 * a second open counts nothing new. */
static void test_random_damage(void **state)
{
    struct fixture *f = *state;
    struct spool_options o = {.segment_bytes = 16 << 10};
    char pristine[128], names[32][128];
    struct spool *s;
    int nseg;

    srand(1234);
    snprintf(pristine, sizeof(pristine), "%s/pristine", f->dir);
    s = open_ok(pristine, &o);
    append_n(s, 60, 1500);
    spool_close(s);
    nseg = seg_files(pristine, names, 32);
    assert_true(nseg >= 4);
    for (int it = 0; it < 60; it++) {
        char dir[128];
        int kind = it % 3, k;
        struct spool_stats st;
        size_t got;

        snprintf(dir, sizeof(dir), "%s/d%d", f->dir, it);
        dir_copy(pristine, dir);
        nseg = seg_files(dir, names, 32);
        k = rand() % nseg;
        if (kind == 0) {
            flip_byte(names[k], rand() % file_size(names[k]));
        } else if (kind == 1) {
            assert_int_equal(truncate(names[k], rand() % file_size(names[k])), 0);
        } else {
            uint8_t junk[700];
            int fd = open(names[k], O_RDWR);
            for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (uint8_t)rand();
            assert_true(pwrite(fd, junk, sizeof(junk), rand() % file_size(names[k])) > 0);
            close(fd);
        }
        s = open_ok(dir, &o);
        got = read_all(s, 0, 1500, NULL, 0);
        st = stats_of(s);
        if (kind == 0) /* one flipped byte: exactly one record lost and counted */
            assert_int_equal(got + st.corrupt_records, 60);
        else if (kind == 1) /* a cut on a record boundary leaves no damaged bytes */
            assert_true(got < 60);
        else
            assert_true(st.corrupt_bytes > 0);
        spool_close(s);
        s = open_ok(dir, &o);
        assert_int_equal(stats_of(s).corrupt_records, st.corrupt_records);
        assert_int_equal(stats_of(s).corrupt_bytes, st.corrupt_bytes);
        assert_int_equal(read_all(s, 0, 1500, NULL, 0), got);
        spool_close(s);
    }
}

/* Corruption found at open and at replay reaches on_loss as it is counted;
 * a reopened spool reports the epoch's total once. */
static void test_corrupt_losses_reported(void **state)
{
    struct fixture *f = *state;
    struct drops *d = drops_new();
    struct spool_options o = {.on_loss = loss_to_drops, .on_loss_ctx = d};
    struct spool *s = open_ok(f->dir, &o);
    const off_t rec = HDR + 1000;
    char names[4][128];
    const void *data;
    uint64_t seq;
    size_t len;

    append_n(s, 20, 1000);
    spool_close(s);
    assert_int_equal(drops_count(d), 0);
    assert_int_equal(seg_files(f->dir, names, 4), 1);
    flip_byte(names[0], 6 * rec + HDR + 500); /* payload of 7 */
    flip_byte(names[0], 11 * rec);            /* magic of 12 */
    s = open_ok(f->dir, &o);
    assert_int_equal(stats_of(s).corrupt_records, 2);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CORRUPT, NULL, -1), 2);
    flip_byte(names[0], 14 * rec + HDR + 10); /* 15, after open: found at replay */
    assert_int_equal(spool_read(s, 14, &seq, &data, &len), 1);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CORRUPT, NULL, -1), 3);
    spool_close(s);
    drops_free(d);

    d = drops_new(); /* a restarted agent */
    o.on_loss_ctx = d;
    s = open_ok(f->dir, &o);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CORRUPT, NULL, -1), 3);
    assert_int_equal(drops_count(d), 1);
    spool_close(s);
    drops_free(d);
}

/* The records of another epoch's segments are reported with the cap's
 * drops, as spool_stats counts them. */
static void test_foreign_epoch_losses_reported(void **state)
{
    struct fixture *f = *state;
    struct drops *d = drops_new();
    struct spool_options o = {.on_loss = loss_to_drops, .on_loss_ctx = d};
    char old[128], cur[128], names[4][128], to[256], path[256];
    struct spool *s;

    snprintf(old, sizeof(old), "%s/old", f->dir);
    snprintf(cur, sizeof(cur), "%s/cur", f->dir);
    s = open_ok(old, NULL);
    append_n(s, 3, 100);
    spool_close(s);
    s = open_ok(cur, NULL);
    append_n(s, 2, 100);
    spool_close(s);
    assert_int_equal(seg_files(old, names, 4), 1);
    snprintf(to, sizeof(to), "%s/%s", cur, strrchr(names[0], '/') + 1);
    assert_int_equal(rename(names[0], to), 0);
    snprintf(path, sizeof(path), "%s/meta", cur);
    assert_int_equal(unlink(path), 0);

    s = open_ok(cur, &o);
    assert_int_equal(stats_of(s).dropped_records, 3);
    assert_int_equal(drops_get(d, SPOOL_LOSS_CAP, NULL, -1), 3);
    assert_int_equal(drops_count(d), 1);
    spool_close(s);
    drops_free(d);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_never_reuses_seq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_reservation_renewal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_vanishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_epoch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_losses_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_epoch_losses_reported, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
