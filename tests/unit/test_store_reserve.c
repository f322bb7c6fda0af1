/* The store's reserve (collector/store/store_reserve.h): the file is made,
 * released once, taken back after space has stayed free; ingest is refused
 * while it is not held and less than its size is free; and, on a real full
 * tmpfs (root), a store killed with records in its WAL opens again by
 * releasing it, keeps every record it had acked, refuses new ones until
 * space returns, then stores them and takes the reserve back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "collector/store/store_reserve.h"
#include "tests/unit/store_fixture.h"

#define MiB (UINT64_C(1) << 20)

static bool file_exists(const char *dir)
{
    char path[128];
    struct stat st;

    snprintf(path, sizeof(path), "%s/reserve", dir);
    return stat(path, &st) == 0;
}

/* Made at init, released once, back after the settle time. */
static void test_reserve_cycle(void **state)
{
    struct fix *f = *state;
    struct store_reserve r;
    uint64_t t = 1000 * NSEC_PER_SEC;

    assert_int_equal(store_reserve_init(&r, f->dir, MiB), 0);
    assert_int_equal(r.held, MiB);
    assert_true(file_exists(f->dir));
    assert_false(store_reserve_short(&r));
    assert_true(store_reserve_release(&r, "a test"));
    assert_false(file_exists(f->dir));
    assert_int_equal(r.held, 0);
    assert_int_equal(r.released, 1);
    assert_false(store_reserve_release(&r, "a test")); /* nothing held */
    assert_true(store_reserve_short(&r));           /* released: refused although plenty is free */
    assert_int_equal(store_reserve_tick(&r, t), 0); /* not settled yet */
    assert_int_equal(store_reserve_tick(&r, t + STORE_RESERVE_SETTLE_NS / 2), 0);
    assert_false(file_exists(f->dir));
    assert_int_equal(store_reserve_tick(&r, t + STORE_RESERVE_SETTLE_NS), 1);
    assert_true(file_exists(f->dir));
    assert_int_equal(r.held, MiB);
    assert_false(store_reserve_short(&r)); /* taken back: ingest again */
    store_reserve_fini(&r);
    /* the next start keeps the file; a reserve of 0 removes it */
    assert_int_equal(store_reserve_init(&r, f->dir, MiB), 0);
    assert_int_equal(r.held, MiB);
    store_reserve_fini(&r);
    assert_int_equal(store_reserve_init(&r, f->dir, 0), 0);
    assert_false(file_exists(f->dir));
    assert_false(store_reserve_short(&r));
    store_reserve_fini(&r);
}

/* A reserve bigger than the free space: not made, and ingest would be
 * refused (what is free is below it). */
static void test_reserve_no_room(void **state)
{
    struct fix *f = *state;
    struct store_reserve r;
    uint64_t free_b, total;

    assert_int_equal(store_disk_usage(f->dir, &free_b, &total), 0);
    assert_true(total >= free_b && free_b > 0);
    assert_int_equal(store_reserve_init(&r, f->dir, free_b + 1024 * MiB), 0);
    assert_int_equal(r.held, 0);
    assert_false(file_exists(f->dir));
    assert_true(store_reserve_short(&r));
    assert_int_equal(store_reserve_tick(&r, 1), 0);
    assert_int_equal(store_reserve_tick(&r, 1 + 2 * STORE_RESERVE_SETTLE_NS), 0);
    store_reserve_fini(&r);
}

static void test_is_nospace(void **state)
{
    (void)state;
    assert_true(store_is_nospace("IO error: No space left on device: While appending to file: "
                                 "/x/000012.log: No space left on device"));
    assert_true(store_is_nospace("write: IO error: NoSpace: ..."));
    assert_false(store_is_nospace("IO error: lock hold by current process"));
    assert_false(store_is_nospace("Corruption: bad block"));
    assert_false(store_is_nospace(NULL));
}

/* Write zeros to path until the disk is full. */
static void fill_up(const char *path)
{
    static const char block[4096];
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    while (fwrite(block, 1, sizeof(block), fp) == sizeof(block) && fflush(fp) == 0)
        ;
    fclose(fp);
}

static int ingest_one(struct store *s, uint64_t seq, char *err, size_t errlen)
{
    struct tbatch *t = tbatch_new("agent-1", seq, "job-r", 0, 8, seq * 8, 8, T0 + seq);
    int rc = store_ingest(s, &t->b, err, errlen);

    tbatch_free(t);
    return rc;
}

/* A store with acked records in its WAL, "killed" (closed: RocksDB 7.8 does
 * not flush at close with the WAL on, so the next open recovers it), the
 * disk then filled: the open releases the reserve and succeeds. */
static void test_open_on_full_disk(void **state)
{
    struct fix *f = *state;
    char err[256] = "", filler[128];
    struct store_stats st;
    uint64_t seq;

    fix_on_tmpfs(f, "size=96m", "the full-disk open");
    f->o.reserve_bytes = 16 * MiB;
    f->s = open_store(f);
    store_get_stats(f->s, &st);
    assert_int_equal(st.reserve_bytes, 16 * MiB);
    for (seq = 1; seq <= 50; seq++)
        assert_int_equal(ingest_one(f->s, seq, err, sizeof(err)), STORE_INGEST_WRITTEN);
    store_close(f->s);
    f->s = NULL;
    snprintf(filler, sizeof(filler), "%s/filler", f->dir);
    fill_up(filler);
    f->s = open_store(f); /* asserts it opens */
    store_get_stats(f->s, &st);
    printf("opened on a full disk: %" PRIu64 " bytes free, reserve %" PRIu64 "\n",
           st.disk_free_bytes, st.reserve_bytes);
    assert_int_equal(st.reserve_released, 1);
    assert_int_equal(st.reserve_bytes, 0);
    assert_int_equal(count_steps(f->s, "job-r"), 50 * 64); /* nothing acked lost */
    /* nothing new while the headroom is short */
    assert_int_equal(ingest_one(f->s, seq, err, sizeof(err)), -EIO);
    assert_non_null(strstr(err, "disk full"));
    store_get_stats(f->s, &st);
    assert_true(st.failing);
    assert_int_equal(count_steps(f->s, "job-r"), 50 * 64);
    /* space returns: still refused until the reserve is back, then the
     * batch goes in */
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(ingest_one(f->s, seq, err, sizeof(err)), -EIO);
    assert_int_equal(store_tick(f->s, T0), 0);
    assert_int_equal(store_tick(f->s, T0 + STORE_RESERVE_SETTLE_NS), 1);
    store_get_stats(f->s, &st);
    assert_int_equal(st.reserve_bytes, 16 * MiB);
    assert_int_equal(ingest_one(f->s, seq, err, sizeof(err)), STORE_INGEST_WRITTEN);
    store_get_stats(f->s, &st);
    assert_false(st.failing);
    assert_int_equal(count_steps(f->s, "job-r"), 51 * 64);
}

/* A running store whose writes fail for space releases the reserve once;
 * the reopen then finds room, ingest is refused (the headroom stays the
 * store's), reads go on, and ingest resumes once space returns and the
 * reserve is taken back. */
static void test_write_on_full_disk(void **state)
{
    struct fix *f = *state;
    char err[256] = "", filler[128];
    struct store_stats st;
    uint64_t seq = 1, stored = 0;

    fix_on_tmpfs(f, "size=96m", "the full-disk write");
    f->o.reserve_bytes = 16 * MiB;
    f->s = open_store(f);
    snprintf(filler, sizeof(filler), "%s/filler", f->dir);
    fill_up(filler);
    for (; seq < 100000 && ingest_one(f->s, seq, err, sizeof(err)) == 0; seq++)
        stored++;
    printf("failed at batch %" PRIu64 ": %s\n", seq, err);
    assert_non_null(strstr(err, "No space left"));
    store_get_stats(f->s, &st);
    assert_int_equal(st.reserve_released, 1);
    assert_int_equal(st.reserve_bytes, 0);
    clock_sleep_ns(1100 * NSEC_PER_MSEC); /* the reopen is due: it finds room */
    for (; seq < 100000 && ingest_one(f->s, seq, err, sizeof(err)) == 0; seq++)
        stored++;
    printf("refused at batch %" PRIu64 ": %s\n", seq, err);
    assert_non_null(strstr(err, "disk full"));
    store_get_stats(f->s, &st);
    assert_int_equal(st.reserve_released, 1);
    assert_true(st.failing);
    assert_true(st.disk_free_bytes > 8 * MiB);                 /* the headroom stayed */
    assert_int_equal(count_steps(f->s, "job-r"), stored * 64); /* reads work */
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(ingest_one(f->s, seq, err, sizeof(err)), -EIO);
    assert_int_equal(store_tick(f->s, T0), 0);
    assert_int_equal(store_tick(f->s, T0 + STORE_RESERVE_SETTLE_NS), 1);
    store_get_stats(f->s, &st);
    assert_int_equal(st.reserve_bytes, 16 * MiB);
    assert_int_equal(ingest_one(f->s, seq, err, sizeof(err)), STORE_INGEST_WRITTEN);
    assert_int_equal(count_steps(f->s, "job-r"), (stored + 1) * 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reserve_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_no_room, setup, teardown),
        cmocka_unit_test(test_is_nospace),
        cmocka_unit_test_setup_teardown(test_open_on_full_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_on_full_disk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
