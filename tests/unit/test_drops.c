/* agent/delivery/drops: the drop table. Totals add up per (reason, job,
 * rank), node-level and per-rank counters stay apart, foreach keeps the
 * creation order, changed/saved and the version follow every add; and its
 * reader, the batcher, attaches every total to each batch it seals. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/delivery/batcher.h"
#include "agent/delivery/drops.h"
#include "agent/delivery/names.h"
#include "common/frame.h"
#include "proto/argus.pb-c.h"

struct seen {
    char text[1024];
};

static void collect(void *ctx, const char *reason, const char *job, int32_t rank, uint64_t total)
{
    struct seen *s = ctx;
    size_t n = strlen(s->text);

    snprintf(s->text + n, sizeof(s->text) - n, "%s/%s/%d=%llu;", reason, job ? job : "(null)", rank,
             (unsigned long long)total);
}

static const char *counters(const struct drops *d, struct seen *s)
{
    s->text[0] = 0;
    drops_foreach(d, collect, s);
    return s->text;
}

static void test_add_and_get(void **state)
{
    struct drops *d = drops_new();

    assert_non_null(d);
    assert_int_equal(drops_count(d), 0);
    assert_int_equal(drops_get(d, "cupti_ring_full", NULL, -1), 0);
    assert_int_equal(drops_add(d, "cupti_ring_full", NULL, -1, 5), 0);
    assert_int_equal(drops_add(d, "cupti_ring_full", NULL, -1, 2), 0);
    assert_int_equal(drops_get(d, "cupti_ring_full", NULL, -1), 7);
    assert_int_equal(drops_add(d, "spool_cap", NULL, -1, 0), 0); /* a counter at 0 exists */
    assert_int_equal(drops_count(d), 2);
    assert_int_equal(drops_get(d, "spool_cap", NULL, -1), 0);
    assert_int_equal(drops_get(d, "other", NULL, -1), 0);
    assert_int_equal(drops_count(d), 2); /* a lookup creates nothing */
    drops_free(d);
    drops_free(NULL);
}

static void test_node_level_and_per_rank(void **state)
{
    struct drops *d = drops_new();
    char job[] = "job-a";

    drops_add(d, "stacks_queue_full", NULL, -1, 1);
    drops_add(d, "stacks_queue_full", job, 0, 10);
    drops_add(d, "stacks_queue_full", job, 1, 100);
    drops_add(d, "stacks_queue_full", "job-b", 0, 1000);
    job[0] = 'X'; /* the job was copied */
    drops_add(d, "stacks_queue_full", "job-a", 1, 100);
    drops_add(d, "stacks_queue_full", "", -1, 1); /* "" is node-level, like NULL */
    assert_int_equal(drops_count(d), 4);
    assert_int_equal(drops_get(d, "stacks_queue_full", NULL, -1), 2);
    assert_int_equal(drops_get(d, "stacks_queue_full", "job-a", 0), 10);
    assert_int_equal(drops_get(d, "stacks_queue_full", "job-a", 1), 200);
    assert_int_equal(drops_get(d, "stacks_queue_full", "job-b", 0), 1000);
    assert_int_equal(drops_get(d, "stacks_queue_full", "job-b", 1), 0);
    drops_free(d);
}

static void test_foreach_order(void **state)
{
    struct drops *d = drops_new();
    struct seen s;

    assert_string_equal(counters(d, &s), "");
    drops_add(d, "b", NULL, -1, 1);
    drops_add(d, "a", "j", 3, 2);
    drops_add(d, "c", NULL, -1, 3);
    drops_add(d, "a", "j", 3, 4); /* an add to an old counter keeps its place */
    drops_add(d, "b", NULL, -1, 5);
    assert_string_equal(counters(d, &s), "b/(null)/-1=6;a/j/3=6;c/(null)/-1=3;");
    drops_free(d);
}

static void test_changed_and_saved(void **state)
{
    struct drops *d = drops_new();
    uint64_t v;

    assert_false(drops_changed(d)); /* an empty table has nothing to save */
    v = drops_version(d);
    drops_add(d, "x", NULL, -1, 1);
    assert_true(drops_changed(d));
    assert_true(drops_version(d) > v);
    drops_saved(d);
    assert_false(drops_changed(d));
    v = drops_version(d);
    drops_add(d, "x", NULL, -1, 0); /* an add of 0 is a change too */
    assert_true(drops_changed(d));
    assert_true(drops_version(d) > v);
    drops_saved(d);
    drops_saved(d);
    assert_false(drops_changed(d));
    drops_free(d);
}

/* The counters of a sealed frame as "reason/job/rank=total;". */
static const char *sealed_counters(void *frame, size_t len, struct seen *s)
{
    void *raw = NULL;
    size_t rawlen = 0;
    Argus__V1__Batch *b;

    assert_int_equal(frame_decode(frame, len, NULL, &raw, &rawlen, NULL), 0);
    b = argus__v1__batch__unpack(NULL, rawlen, raw);
    assert_non_null(b);
    s->text[0] = 0;
    for (size_t i = 0; i < b->n_drops; i++)
        collect(s, b->drops[i]->reason, b->drops[i]->job, b->drops[i]->rank, b->drops[i]->total);
    argus__v1__batch__free_unpacked(b, NULL);
    free(raw);
    free(frame);
    return s->text;
}

/* The batcher only reads the table: each batch carries every total as it is
 * at the seal, and a change alone makes a batch due (after max_age). */
static void test_batcher_carries_totals(void **state)
{
    struct batcher_options o = {"agent-1", 16, 1 << 20, 1000};
    struct names *names = names_new();
    struct drops *d = drops_new();
    struct batcher *b = batcher_new(&o, names, d);
    struct seen s;
    void *frame;
    size_t len;

    assert_non_null(b);
    assert_false(batcher_due(b, UINT64_MAX / 2));
    assert_int_equal(batcher_seal(b, 1, 1, &frame, &len), -ENODATA);
    drops_add(d, "cupti_ring_full", NULL, -1, 3);
    drops_add(d, "batcher_nomem", "job-a", 2, 1);
    assert_true(batcher_due(b, UINT64_MAX / 2));
    assert_int_equal(batcher_seal(b, 1, 1, &frame, &len), 0);
    assert_string_equal(sealed_counters(frame, len, &s),
                        "cupti_ring_full//-1=3;batcher_nomem/job-a/2=1;");
    assert_false(batcher_due(b, UINT64_MAX / 2)); /* nothing new */
    assert_int_equal(batcher_seal(b, 1, 2, &frame, &len), -ENODATA);
    drops_add(d, "cupti_ring_full", NULL, -1, 4);
    assert_true(batcher_due(b, UINT64_MAX / 2));
    assert_int_equal(batcher_seal(b, 1, 2, &frame, &len), 0);
    assert_string_equal(sealed_counters(frame, len, &s),
                        "cupti_ring_full//-1=7;batcher_nomem/job-a/2=1;");
    assert_int_equal(drops_count(d), 2); /* the batcher added nothing */
    batcher_free(b);
    drops_free(d);
    names_free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_and_get),
        cmocka_unit_test(test_node_level_and_per_rank),
        cmocka_unit_test(test_foreach_order),
        cmocka_unit_test(test_changed_and_saved),
        cmocka_unit_test(test_batcher_carries_totals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
