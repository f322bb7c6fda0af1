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

#include "agent/delivery/dropstate.h"
#include "agent/delivery/drops.h"

static const char *const skip[] = {"spool_cap", NULL};

struct fixture {
    char dir[64];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    snprintf(f->dir, sizeof(f->dir), "/tmp/argus-dropstate.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
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
    free(f);
    return 0;
}

static struct drops *table(void)
{
    struct drops *d = drops_new();

    assert_non_null(d);
    return d;
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

static const char *counters(const struct drops *d, struct seen *s)
{
    s->text[0] = 0;
    drops_foreach(d, collect, s);
    return s->text;
}

static void test_round_trip(void **state)
{
    struct fixture *f = *state;
    struct drops *a = table(), *b = table();
    struct seen s;

    drops_add(a, "cupti_ring_full", NULL, -1, 7);
    drops_add(a, "stacks_queue_full", "job 12", 5, 3);
    drops_add(a, "spool_cap", NULL, -1, 9);
    drops_add(a, "cupti_ring_full", NULL, -1, 1);
    assert_true(drops_changed(a));
    assert_int_equal(dropstate_save(f->dir, 42, a, skip), 0);
    drops_saved(a);
    assert_false(drops_changed(a));

    assert_int_equal(dropstate_load(f->dir, 42, b, skip), 2);
    assert_string_equal(counters(b, &s), "cupti_ring_full/-/-1=8;stacks_queue_full/job 12/5=3;");
    /* counting goes on from the saved totals */
    drops_add(b, "cupti_ring_full", NULL, -1, 2);
    assert_string_equal(counters(b, &s), "cupti_ring_full/-/-1=10;stacks_queue_full/job 12/5=3;");
    drops_free(a);
    drops_free(b);
}

static void test_other_epoch_and_no_file(void **state)
{
    struct fixture *f = *state;
    struct drops *a = table(), *b = table();
    struct seen s;

    assert_int_equal(dropstate_load(f->dir, 1, b, skip), 0); /* no file yet */
    drops_add(a, "collector_rejected", NULL, -1, 4);
    assert_int_equal(dropstate_save(f->dir, 1, a, skip), 0);
    assert_int_equal(dropstate_load(f->dir, 2, b, skip), 0); /* a new spool epoch */
    assert_string_equal(counters(b, &s), "");
    drops_free(a);
    drops_free(b);
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
    struct drops *b = table();
    struct seen s;

    write_file(f, "garbage\n");
    assert_int_equal(dropstate_load(f->dir, 3, b, skip), -EBADMSG);
    write_file(f, "argus-drops 1 3\nnot a line\n-5\t-1\tx\t-\n1\t-7\tx\t-\n");
    assert_int_equal(dropstate_load(f->dir, 3, b, skip), -EBADMSG);
    assert_string_equal(counters(b, &s), "");
    write_file(f, "argus-drops 1 3\n5\t-1\tgood\t-\nbroken\n6\t2\tspool_cap\t-\n");
    assert_int_equal(dropstate_load(f->dir, 3, b, skip), 1); /* the spool's own is ignored */
    assert_string_equal(counters(b, &s), "good/-/-1=5;");
    drops_free(b);
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
