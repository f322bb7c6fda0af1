/* common/kernel_code: the summarizer's records shipped the way the agent
 * ships them (the batcher's coded copy, the hand encoder) and expanded the
 * way the collector expands them (protobuf-c unpack of the batch,
 * kernel_code_expand_batch) come back with the same groups and clusters, in
 * fewer bytes, with the default encoding and exact values, and the steps of
 * a batch coded against the one before when their groups are the same; the
 * format pinned
 * on two groups of one name; identity sets: their ids, records coded as
 * one (with the work ids that moved) and expanded through a resolver, a set
 * not held (records without kernels, counted) and a store error; malformed bytes, limits and a
 * record with both forms refused; records it must not code copied as they are. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/summarize.h"
#include "common/kernel_code.h"
#include "common/wire_steps.h"
#include "tests/lib/rng.h"

/* A record of rank 3 as the summarizer makes it: 60 groups of 1-3 modes. */
static void summarized_seed(Argus__V1__StepRecord *r, const struct summarize_options *o,
                            uint64_t rng)
{
    struct summarizer *s = summarizer_new(o);

    assert_non_null(s);
    for (uint64_t g = 0; g < 60; g++)
        for (int i = 0; i < 400; i++) {
            double mode = 3000.0 * (double)(g + 1) * (1 + (double)(i % (1 + g % 3)) * 2.5);

            summarizer_add_shape(s, 0x9e3779b97f4a7c15ULL * (g / 2 + 1), (uint32_t)(g % 2),
                                 (uint64_t)(mode * (1 + 0.05 * rng_normal(&rng))),
                                 g % 4 ? (uint32_t)g : 0);
        }
    argus__v1__step_record__init(r);
    r->job = "job-7";
    r->rank = 3;
    r->step = 41;
    assert_int_equal(summarizer_finish(s, r), 0);
    summarizer_free(s);
}

static void summarized(Argus__V1__StepRecord *r, const struct summarize_options *o)
{
    summarized_seed(r, o, 2606);
}

static void groups_equal(Argus__V1__KernelGroup *const *a, Argus__V1__KernelGroup *const *b,
                         size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i]->name_id, b[i]->name_id);
        assert_int_equal(a[i]->stream, b[i]->stream);
        assert_int_equal(a[i]->work_id, b[i]->work_id);
        assert_int_equal(a[i]->n_clusters, b[i]->n_clusters);
        for (size_t k = 0; k < a[i]->n_clusters; k++) {
            const Argus__V1__Cluster *x = a[i]->clusters[k], *y = b[i]->clusters[k];

            assert_int_equal(x->count, y->count);
            assert_int_equal(x->sum_ns, y->sum_ns);
            assert_int_equal(x->p50_ns, y->p50_ns);
            assert_int_equal(x->p99_ns, y->p99_ns);
            assert_int_equal(x->min_ns, y->min_ns);
            assert_int_equal(x->max_ns, y->max_ns);
        }
    }
}

/* The agent's path, then the collector's: the same groups. Returns the
 * coded record's size against the plain one's, in percent. */
static size_t ship_and_expand(const struct summarize_options *o)
{
    Argus__V1__StepRecord r, copy;
    Argus__V1__Batch *b;
    struct kernel_code_buf buf = {0};
    uint8_t *wire;
    size_t n, plain;

    summarized(&r, o);
    plain = wire_steps_record_size(&r);
    assert_int_equal(kernel_code_compact(&buf, &r, NULL, &copy), 0);
    assert_int_equal(copy.n_kernels, 0);
    n = wire_steps_record_size(&copy);
    wire = malloc(n + WIRE_STEPS_ENTRY_OVERHEAD);
    assert_non_null(wire);
    b = argus__v1__batch__unpack(NULL, wire_steps_entry_put(wire, &copy, n), wire);
    assert_non_null(b);
    assert_int_equal(b->n_steps, 1);
    assert_int_equal(b->steps[0]->step, 41);
    assert_int_equal(kernel_code_expand_batch(b, 4096, 64, NULL), 1);
    assert_int_equal(b->steps[0]->packed_kernels.len, 0);
    assert_int_equal(b->steps[0]->n_kernels, r.n_kernels);
    groups_equal(b->steps[0]->kernels, r.kernels, r.n_kernels);
    assert_int_equal(kernel_code_expand_batch(b, 4096, 64, NULL), 0); /* nothing left */
    argus__v1__batch__free_unpacked(b, NULL);                         /* the expanded groups too */
    free(wire);
    kernel_code_buf_free(&buf);
    summarizer_free_groups(&r);
    return n * 100 / plain;
}

static void test_summarizer_round_trip(void **state)
{
    struct summarize_options o;

    (void)state;
    summarize_options_default(&o);
    assert_true(ship_and_expand(&o) < 55);
    o.fields = SUMMARIZE_FIELDS_ALL; /* min/max too */
    assert_true(ship_and_expand(&o) < 55);
    o.quantize_bits = 0; /* exact ns */
    assert_true(ship_and_expand(&o) < 80);
}

/* name 0x0807060504030201 on streams 7 (work id 5, one cluster under
 * header 0x19) and 9 (same name, no work id, no cluster). */
static const uint8_t pinned[] = {0x12, 1,   2, 3, 4,    5,    6,    7,    8, 0x07,
                                 5,    0,   0, 0, 0x19, 0x03, 0xfa, 0x04, 6, 2, /* 20 */
                                 0x01, 0x09};

static void test_pinned_bytes(void **state)
{
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cp = &c;
    Argus__V1__KernelGroup g[2], *gp[2] = {&g[0], &g[1]};
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__KernelGroup **back;
    uint8_t out[256];
    size_t n;

    (void)state;
    c.count = 3;
    c.p50_ns = 1000;
    c.p99_ns = 1024;
    c.sum_ns = 3008;
    for (int i = 0; i < 2; i++) {
        argus__v1__kernel_group__init(&g[i]);
        g[i].name_id = 0x0807060504030201ULL;
    }
    g[0].stream = 7;
    g[0].work_id = 5;
    g[0].n_clusters = 1;
    g[0].clusters = &cp;
    g[1].stream = 9;
    r.n_kernels = 2;
    r.kernels = gp;
    assert_true(kernel_code_bound(&r) <= sizeof(out));
    assert_int_equal(kernel_code_encode(&r, false, out), sizeof(pinned));
    assert_memory_equal(out, pinned, sizeof(pinned));
    assert_int_equal(kernel_code_decode(pinned, sizeof(pinned), NULL, 2, 1, NULL, &back, &n), 0);
    assert_int_equal(n, 2);
    groups_equal(back, gp, 2);
    for (size_t i = 0; i < n; i++)
        argus__v1__kernel_group__free_unpacked(back[i], NULL);
    free(back);
}

static void test_malformed_and_limits(void **state)
{
    Argus__V1__KernelGroup **g;
    size_t n;

    (void)state;
    for (size_t len = 1; len < sizeof(pinned); len++)
        if (len != 20) /* 20: the first group alone, whole */
            assert_int_equal(kernel_code_decode(pinned, len, NULL, 2, 1, NULL, &g, &n), -EBADMSG);
    assert_int_equal(kernel_code_decode(pinned, 20, NULL, 2, 1, NULL, &g, &n), 0);
    assert_int_equal(n, 1);
    argus__v1__kernel_group__free_unpacked(g[0], NULL);
    free(g);
    assert_int_equal(kernel_code_decode(pinned, sizeof(pinned), NULL, 1, 1, NULL, &g, &n),
                     -EMSGSIZE);
    assert_int_equal(kernel_code_decode(pinned, sizeof(pinned), NULL, 2, 0, NULL, &g, &n),
                     -EMSGSIZE);
    assert_null(g);
}

/* A record with both forms is malformed: refused, not merged. */
static void test_both_forms(void **state)
{
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT, *gp = &g;
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT, *rp = &r;
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;

    (void)state;
    r.n_kernels = 1;
    r.kernels = &gp;
    r.packed_kernels.data = (uint8_t *)pinned;
    r.packed_kernels.len = sizeof(pinned);
    b.n_steps = 1;
    b.steps = &rp;
    assert_int_equal(kernel_code_expand_batch(&b, 8, 8, NULL), -EBADMSG);
}

/* No kernels, already coded, or unknown fields in a group: copied as is. */
static void test_copied_as_is(void **state)
{
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT, *gp = &g;
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT, out;
    struct kernel_code_buf buf = {0};

    (void)state;
    assert_int_equal(kernel_code_compact(&buf, &r, NULL, &out), 0);
    assert_int_equal(out.packed_kernels.len, 0);
    r.n_kernels = 1;
    r.kernels = &gp;
    g.base.n_unknown_fields = 1;
    assert_int_equal(kernel_code_compact(&buf, &r, NULL, &out), 0);
    assert_int_equal(out.n_kernels, 1);
    assert_int_equal(out.packed_kernels.len, 0);
    g.base.n_unknown_fields = 0;
    assert_int_equal(kernel_code_compact(&buf, &r, NULL, &out), 0);
    assert_int_equal(out.n_kernels, 0);
    assert_int_equal(out.packed_kernels.len, 9); /* head, name; stream 0 as before */
    r = out;
    assert_int_equal(kernel_code_compact(&buf, &r, NULL, &out), 0);
    assert_memory_equal(&out, &r, sizeof(r));
    kernel_code_buf_free(&buf);
}

/* Steps 41-43 of rank 3 and one of another job, coded as the batcher codes
 * a batch: 42 and 43 only as clusters against the one before, the other
 * job's whole; expanded, every record has its groups back. */
static void test_as_previous(void **state)
{
    Argus__V1__StepRecord r[4], copy[4], *rp[4] = {&copy[0], &copy[1], &copy[2], &copy[3]};
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT, *back;
    struct kernel_code_buf buf[4] = {{0}};
    struct kernel_code_prev last = {0};
    struct summarize_options o;
    uint8_t *wire;
    size_t n;

    (void)state;
    summarize_options_default(&o);
    for (int i = 0; i < 4; i++) {
        summarized_seed(&r[i], &o, 7 + (uint64_t)i);
        r[i].step = 41 + (uint64_t)i;
        r[i].job = i == 3 ? "job-8" : "job-7";
        assert_int_equal(kernel_code_compact(&buf[i], &r[i], &last, &copy[i]), 0);
        assert_int_equal(kernel_code_prev_set(&last, &r[i]), 0);
        assert_int_equal(copy[i].packed_kernels_as_previous, i == 1 || i == 2);
    }
    assert_true(copy[1].packed_kernels.len * 10 < copy[0].packed_kernels.len * 8);
    b.agent_id = "a";
    b.n_steps = 4;
    b.steps = rp;
    n = argus__v1__batch__get_packed_size(&b);
    wire = malloc(n);
    assert_non_null(wire);
    argus__v1__batch__pack(&b, wire);
    back = argus__v1__batch__unpack(NULL, n, wire);
    assert_non_null(back);
    assert_int_equal(kernel_code_expand_batch(back, 4096, 64, NULL), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(back->steps[i]->n_kernels, r[i].n_kernels);
        assert_false(back->steps[i]->packed_kernels_as_previous);
        groups_equal(back->steps[i]->kernels, r[i].kernels, r[i].n_kernels);
    }
    argus__v1__batch__free_unpacked(back, NULL);
    /* against nothing, or another job: malformed */
    back = argus__v1__batch__unpack(NULL, n, wire);
    back->steps[0]->packed_kernels_as_previous = true;
    assert_int_equal(kernel_code_expand_batch(back, 4096, 64, NULL), -EBADMSG);
    argus__v1__batch__free_unpacked(back, NULL);
    back = argus__v1__batch__unpack(NULL, n, wire);
    back->steps[3]->packed_kernels_as_previous = true;
    assert_int_equal(kernel_code_expand_batch(back, 4096, 64, NULL), -EBADMSG);
    argus__v1__batch__free_unpacked(back, NULL);
    /* a new batch: nothing to code against */
    kernel_code_prev_clear(&last);
    assert_int_equal(kernel_code_compact(&buf[0], &r[1], &last, &copy[0]), 0);
    assert_false(copy[0].packed_kernels_as_previous);
    free(wire);
    kernel_code_prev_free(&last);
    for (int i = 0; i < 4; i++) {
        kernel_code_buf_free(&buf[i]);
        summarizer_free_groups(&r[i]);
    }
}

/* The identities of r's groups, malloc'd. */
static struct kernel_code_ident *idents_of(const Argus__V1__StepRecord *r)
{
    struct kernel_code_ident *ids = malloc(r->n_kernels * sizeof(*ids));

    assert_non_null(ids);
    for (size_t i = 0; i < r->n_kernels; i++)
        ids[i] = (struct kernel_code_ident){r->kernels[i]->name_id, r->kernels[i]->stream,
                                            r->kernels[i]->work_id};
    return ids;
}

/* A resolver that holds one set of one job, or fails with its error. */
struct one_set {
    const char *job;
    uint64_t set;
    const Argus__V1__StepRecord *of;
    int fail; /* 0: answer; else this error for every set */
    int asked;
};

static int one_set_lookup(void *ctx, const char *job, uint64_t set, struct kernel_code_ident **ids,
                          size_t *n)
{
    struct one_set *o = ctx;

    o->asked++;
    if (o->fail)
        return o->fail;
    if (strcmp(job, o->job) != 0 || set != o->set)
        return -ENOENT;
    *ids = idents_of(o->of);
    *n = o->of->n_kernels;
    return 0;
}

/* Set ids: the same for the same identities (from a record or a list),
 * another when one stream or the order changes; never 0. */
static void test_set_ids(void **state)
{
    Argus__V1__StepRecord r, q;
    struct summarize_options o;
    struct kernel_code_ident *ids;
    uint64_t a;

    (void)state;
    summarize_options_default(&o);
    summarized_seed(&r, &o, 7);
    summarized_seed(&q, &o, 8); /* other durations, the same groups */
    a = kernel_code_record_set(&r);
    assert_int_not_equal(a, 0);
    assert_int_equal(kernel_code_record_set(&q), a);
    ids = idents_of(&r);
    assert_int_equal(kernel_code_set_id(ids, r.n_kernels), a);
    ids[5].stream ^= 1;
    assert_int_not_equal(kernel_code_set_id(ids, r.n_kernels), a);
    ids[5].stream ^= 1;
    struct kernel_code_ident t = ids[0];
    ids[0] = ids[1], ids[1] = t;
    assert_int_not_equal(kernel_code_set_id(ids, r.n_kernels), a);
    assert_int_not_equal(kernel_code_set_id(ids, r.n_kernels - 1), a);
    assert_int_equal(kernel_code_set_id(ids, 0), 0);
    free(ids);
    summarizer_free_groups(&r);
    summarizer_free_groups(&q);
}

/* Pack steps[0..n) as one batch and unpack it. */
static Argus__V1__Batch *batch_round_trip(Argus__V1__StepRecord **steps, size_t n, uint8_t **wire,
                                          size_t *len)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;

    b.agent_id = "a";
    b.n_steps = n;
    b.steps = steps;
    *len = argus__v1__batch__get_packed_size(&b);
    *wire = malloc(*len);
    assert_non_null(*wire);
    argus__v1__batch__pack(&b, *wire);
    return argus__v1__batch__unpack(NULL, *len, *wire);
}

/* Step 41 of job-7 coded as its identity set, 42 as the one before, a step
 * of job-8 whole and defining its set: expanded through a resolver that
 * holds job-7's set, every record has its groups back, the reference's id
 * is gone, the definition's kept; a resolver without the set gives the two
 * job-7 records no kernels (counted), job-8's whole; a store error is the
 * batch's. */
static void test_as_set(void **state)
{
    Argus__V1__StepRecord r[3], copy[3], *rp[3] = {&copy[0], &copy[1], &copy[2]};
    struct kernel_code_buf buf[3] = {{0}};
    struct kernel_code_prev last = {0};
    struct summarize_options o;
    Argus__V1__Batch *back;
    uint8_t *wire;
    struct kernel_code_set_counts counts;
    size_t len;
    uint64_t set7, set8;

    (void)state;
    summarize_options_default(&o);
    for (int i = 0; i < 3; i++) {
        summarized_seed(&r[i], &o, 7 + (uint64_t)i);
        r[i].step = 41 + (uint64_t)i;
        r[i].job = i == 2 ? "job-8" : "job-7";
    }
    r[2].kernels[0]->stream = 9; /* job-8's groups differ */
    set7 = kernel_code_record_set(&r[0]);
    set8 = kernel_code_record_set(&r[2]);
    struct kernel_code_ident *ids7 = idents_of(&r[0]);
    struct kernel_code_set held7 = {set7, ids7, r[0].n_kernels};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kernel_code_compact_as(&buf[i], &r[i], &last, &held7, &copy[i]), 0);
        assert_int_equal(kernel_code_prev_set(&last, &r[i]), 0);
    }
    assert_true(copy[0].packed_kernels_as_set);
    assert_int_equal(copy[0].packed_kernels_set, set7);
    assert_true(copy[1].packed_kernels_as_previous); /* the cheaper of the two */
    assert_false(copy[1].packed_kernels_as_set);
    assert_false(copy[2].packed_kernels_as_set); /* job-8's groups are not set7's */
    assert_true(copy[0].packed_kernels.len * 10 < copy[2].packed_kernels.len * 8);
    copy[2].packed_kernels_set = set8; /* defines it */

    struct one_set held = {"job-7", set7, &r[0], 0, 0};
    struct kernel_code_sets sets = {one_set_lookup, &held};
    back = batch_round_trip(rp, 3, &wire, &len);
    assert_non_null(back);
    assert_int_equal(kernel_code_expand_batch_sets(back, 4096, 64, NULL, &sets, &counts), 3);
    assert_int_equal(counts.unknown, 0);
    assert_int_equal(counts.referred, 1);
    assert_int_equal(held.asked, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(back->steps[i]->n_kernels, r[i].n_kernels);
        groups_equal(back->steps[i]->kernels, r[i].kernels, r[i].n_kernels);
        assert_false(back->steps[i]->packed_kernels_as_set);
    }
    assert_int_equal(back->steps[0]->packed_kernels_set, 0);
    assert_int_equal(back->steps[2]->packed_kernels_set, set8);
    argus__v1__batch__free_unpacked(back, NULL);

    /* not held: job-7's records without kernels, counted; job-8's whole */
    held.set = set8;
    back = argus__v1__batch__unpack(NULL, len, wire);
    assert_int_equal(kernel_code_expand_batch_sets(back, 4096, 64, NULL, &sets, &counts), 3);
    assert_int_equal(counts.unknown, 2);
    assert_int_equal(counts.referred, 0);
    assert_int_equal(back->steps[0]->n_kernels, 0);
    assert_int_equal(back->steps[1]->n_kernels, 0);
    assert_int_equal(back->steps[1]->packed_kernels.len, 0);
    assert_int_equal(back->steps[2]->n_kernels, r[2].n_kernels);
    argus__v1__batch__free_unpacked(back, NULL);
    /* no resolver at all: the same, and no set ids left */
    back = argus__v1__batch__unpack(NULL, len, wire);
    assert_int_equal(kernel_code_expand_batch(back, 4096, 64, NULL), 3);
    assert_int_equal(back->steps[0]->n_kernels, 0);
    assert_int_equal(back->steps[2]->packed_kernels_set, 0);
    argus__v1__batch__free_unpacked(back, NULL);
    /* the store could not be read: the batch's error */
    held.fail = -EIO;
    back = argus__v1__batch__unpack(NULL, len, wire);
    assert_int_equal(kernel_code_expand_batch_sets(back, 4096, 64, NULL, &sets, &counts), -EIO);
    argus__v1__batch__free_unpacked(back, NULL);
    /* a set of other groups: as many groups as it has, or malformed */
    held = (struct one_set){"job-7", set7, &r[2], 0, 0};
    r[2].n_kernels--;
    back = argus__v1__batch__unpack(NULL, len, wire);
    assert_int_equal(kernel_code_expand_batch_sets(back, 4096, 64, NULL, &sets, &counts), -EBADMSG);
    argus__v1__batch__free_unpacked(back, NULL);
    r[2].n_kernels++;
    free(wire);
    /* work ids moved in two groups (the step's work): coded against set7
     * with those two work ids, they come back */
    kernel_code_prev_clear(&last);
    assert_int_equal(kernel_code_compact_as(&buf[1], &r[1], &last, &held7, &copy[1]), 0);
    len = copy[1].packed_kernels.len; /* none moved */
    r[1].kernels[3]->work_id += 11;
    r[1].kernels[41]->work_id = 0;
    assert_int_equal(kernel_code_compact_as(&buf[1], &r[1], &last, &held7, &copy[1]), 0);
    assert_true(copy[1].packed_kernels_as_set);
    assert_int_equal(copy[1].packed_kernels.len, len + 2 * 4);
    held = (struct one_set){"job-7", set7, &r[0], 0, 0};
    back = batch_round_trip(&rp[1], 1, &wire, &len);
    assert_non_null(back);
    assert_int_equal(kernel_code_expand_batch_sets(back, 4096, 64, NULL, &sets, &counts), 1);
    groups_equal(back->steps[0]->kernels, r[1].kernels, r[1].n_kernels);
    argus__v1__batch__free_unpacked(back, NULL);
    free(wire);
    /* a stream moved: not the set's skeleton, whole */
    r[1].kernels[7]->stream += 1;
    assert_int_equal(kernel_code_compact_as(&buf[1], &r[1], &last, &held7, &copy[1]), 0);
    assert_false(copy[1].packed_kernels_as_set);
    free(ids7);
    kernel_code_prev_free(&last);
    for (int i = 0; i < 3; i++) {
        kernel_code_buf_free(&buf[i]);
        summarizer_free_groups(&r[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summarizer_round_trip),
        cmocka_unit_test(test_pinned_bytes),
        cmocka_unit_test(test_malformed_and_limits),
        cmocka_unit_test(test_both_forms),
        cmocka_unit_test(test_copied_as_is),
        cmocka_unit_test(test_as_previous),
        cmocka_unit_test(test_set_ids),
        cmocka_unit_test(test_as_set),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
