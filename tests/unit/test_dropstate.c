/* agent/delivery/dropstate: drop counters saved and loaded across an agent restart,
 * only within one spool epoch, without the spool's own counters, and a
 * damaged file never loads garbage. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/delivery/batcher.h"
#include "agent/delivery/dropstate.h"
#include "agent/delivery/names.h"

static const char *const skip[] = {"spool_cap", NULL};

struct fixture {
    char dir[64];
    struct names *names;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    snprintf(f->dir, sizeof(f->dir), "/tmp/argus-dropstate.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->names = names_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char path[128];

    snprintf(path, sizeof(path), "%s/%s", f->dir, DROPSTATE_FILE);
    unlink(path);
    rmdir(f->dir);
    names_free(f->names);
    free(f);
    return 0;
}

static struct batcher *batcher(struct fixture *f)
{
    struct batcher_options o = {"agent-1", 16, 1 << 20, 1000000000ull};

    return batcher_new(&o, f->names);
}

struct seen {
    char text[1024];
};

static void collect(void *ctx, const char *reason, const char *job, int32_t rank, uint64_t total)
{
    struct seen *s = ctx;
    size_t n = strlen(s->text);

    snprintf(s->text + n, sizeof(s->text) - n, "%s/%s/%d=%llu;", reason, job ? job : "-", rank,
             (unsigned long long)total);
}

static const char *counters(const struct batcher *b, struct seen *s)
{
    s->text[0] = 0;
    batcher_foreach_drop(b, collect, s);
    return s->text;
}

static void test_round_trip(void **state)
{
    struct fixture *f = *state;
    struct batcher *a = batcher(f), *b = batcher(f);
    struct seen s;

    batcher_drop(a, "cupti_ring_full", NULL, -1, 7);
    batcher_drop(a, "stacks_queue_full", "job 12", 5, 3);
    batcher_drop(a, "spool_cap", NULL, -1, 9);
    batcher_drop(a, "cupti_ring_full", NULL, -1, 1);
    assert_true(batcher_drops_changed(a));
    assert_int_equal(dropstate_save(f->dir, 42, a, skip), 0);
    batcher_drops_saved(a);
    assert_false(batcher_drops_changed(a));

    assert_int_equal(dropstate_load(f->dir, 42, b, skip), 2);
    assert_string_equal(counters(b, &s), "cupti_ring_full/-/-1=8;stacks_queue_full/job 12/5=3;");
    /* counting goes on from the saved totals */
    batcher_drop(b, "cupti_ring_full", NULL, -1, 2);
    assert_string_equal(counters(b, &s), "cupti_ring_full/-/-1=10;stacks_queue_full/job 12/5=3;");
    batcher_free(a);
    batcher_free(b);
}

static void test_other_epoch_and_no_file(void **state)
{
    struct fixture *f = *state;
    struct batcher *a = batcher(f), *b = batcher(f);
    struct seen s;

    assert_int_equal(dropstate_load(f->dir, 1, b, skip), 0); /* no file yet */
    batcher_drop(a, "collector_rejected", NULL, -1, 4);
    assert_int_equal(dropstate_save(f->dir, 1, a, skip), 0);
    assert_int_equal(dropstate_load(f->dir, 2, b, skip), 0); /* a new spool epoch */
    assert_string_equal(counters(b, &s), "");
    batcher_free(a);
    batcher_free(b);
}

static void write_file(struct fixture *f, const char *text)
{
    char path[128];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/%s", f->dir, DROPSTATE_FILE);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_damaged_files(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = batcher(f);
    struct seen s;

    write_file(f, "garbage\n");
    assert_int_equal(dropstate_load(f->dir, 3, b, skip), -EBADMSG);
    write_file(f, "argus-drops 1 3\nnot a line\n-5\t-1\tx\t-\n1\t-7\tx\t-\n");
    assert_int_equal(dropstate_load(f->dir, 3, b, skip), -EBADMSG);
    assert_string_equal(counters(b, &s), "");
    write_file(f, "argus-drops 1 3\n5\t-1\tgood\t-\nbroken\n6\t2\tspool_cap\t-\n");
    assert_int_equal(dropstate_load(f->dir, 3, b, skip), 1); /* the spool's own is ignored */
    assert_string_equal(counters(b, &s), "good/-/-1=5;");
    batcher_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_epoch_and_no_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_files, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
