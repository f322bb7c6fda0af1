/* collector/ingest/kernel_sets over a real store on disk: a batch's record
 * that defines its identity set is kept (and its id zeroed) before the
 * batch would be acked, a later record coded as that set expands to the same
 * groups, also after the store is reopened (from disk, the cache cold) and
 * through a cache too small to hold the sets; a definition whose id is not
 * its groups' is ignored and counted; a record of a set not held is stored
 * without kernels and counted. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/ingest/kernel_sets.h"
#include "common/kernel_code.h"
#include "tests/unit/store_fixture.h"

#define NG 3

/* A record of job with NG groups of one cluster each; variant changes the
 * groups' streams (another set). */
struct rec {
    Argus__V1__StepRecord r;
    Argus__V1__KernelGroup g[NG], *gp[NG];
    Argus__V1__Cluster c[NG], *cp[NG];
};

static void rec_init(struct rec *x, const char *job, uint32_t variant)
{
    argus__v1__step_record__init(&x->r);
    x->r.job = (char *)job;
    x->r.rank = 2;
    x->r.step = 9;
    for (int i = 0; i < NG; i++) {
        argus__v1__kernel_group__init(&x->g[i]);
        argus__v1__cluster__init(&x->c[i]);
        x->c[i].count = 10 + (uint64_t)i;
        x->c[i].sum_ns = x->c[i].count * 1000;
        x->c[i].p50_ns = 1000;
        x->c[i].p99_ns = 1100 + (uint64_t)i;
        x->cp[i] = &x->c[i];
        x->g[i].name_id = 0x1234567890abcdefULL * (uint64_t)(i + 1);
        x->g[i].stream = (uint32_t)i + variant;
        x->g[i].work_id = 500 + (uint32_t)i;
        x->g[i].n_clusters = 1;
        x->g[i].clusters = &x->cp[i];
        x->gp[i] = &x->g[i];
    }
    x->r.n_kernels = NG;
    x->r.kernels = x->gp;
}

/* x coded as the agent codes it (as set as_set when not 0; defining def),
 * in a batch of its own, packed and unpacked. */
static Argus__V1__Batch *shipped(const struct rec *x, uint64_t as_set, uint64_t def)
{
    struct kernel_code_buf buf = {0};
    Argus__V1__StepRecord coded, *rp = &coded;
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT, *back;
    uint8_t *wire;
    size_t n;

    struct kernel_code_ident ids[NG];
    struct kernel_code_set held = {as_set, ids, NG};

    for (int i = 0; i < NG; i++) /* the set as held: x's own identities */
        ids[i] = (struct kernel_code_ident){x->g[i].name_id, x->g[i].stream, x->g[i].work_id};
    assert_int_equal(kernel_code_compact_as(&buf, &x->r, NULL, as_set ? &held : NULL, &coded), 0);
    assert_int_equal(coded.packed_kernels_as_set, as_set != 0);
    if (def)
        coded.packed_kernels_set = def;
    b.agent_id = "agent-1";
    b.n_steps = 1;
    b.steps = &rp;
    n = argus__v1__batch__get_packed_size(&b);
    wire = malloc(n);
    assert_non_null(wire);
    argus__v1__batch__pack(&b, wire);
    back = argus__v1__batch__unpack(NULL, n, wire);
    assert_non_null(back);
    free(wire);
    kernel_code_buf_free(&buf);
    return back;
}

static void same_groups(const Argus__V1__StepRecord *got, const struct rec *want)
{
    assert_int_equal(got->n_kernels, NG);
    for (int i = 0; i < NG; i++) {
        assert_int_equal(got->kernels[i]->name_id, want->g[i].name_id);
        assert_int_equal(got->kernels[i]->stream, want->g[i].stream);
        assert_int_equal(got->kernels[i]->work_id, want->g[i].work_id);
        assert_int_equal(got->kernels[i]->clusters[0]->p99_ns, want->c[i].p99_ns);
    }
}

/* Expand b through k: it expands its one record, of a set held or not. */
static void expand(struct kernel_sets *k, Argus__V1__Batch *b)
{
    size_t unknown;

    assert_int_equal(kernel_sets_expand(k, b, 4096, 64, NULL, &unknown), 1);
    assert_int_equal(unknown, b->steps[0]->n_kernels == 0);
}

static void test_define_then_refer(void **state)
{
    struct fix *f = *state;
    struct kernel_sets *k = kernel_sets_new(f->s, 1 << 20);
    struct kernel_sets_stats st;
    struct rec x;
    Argus__V1__Batch *b;
    uint64_t set;
    char err[256];

    rec_init(&x, "job-k", 0);
    set = kernel_code_record_set(&x.r);
    /* defined: kept, the id gone from the record */
    b = shipped(&x, 0, set);
    expand(k, b);
    assert_int_equal(b->steps[0]->packed_kernels_set, set);
    assert_int_equal(kernel_sets_keep(k, b, err, sizeof(err)), 0);
    assert_int_equal(b->steps[0]->packed_kernels_set, 0);
    same_groups(b->steps[0], &x);
    argus__v1__batch__free_unpacked(b, NULL);
    /* referred to: the same groups */
    b = shipped(&x, set, 0);
    expand(k, b);
    same_groups(b->steps[0], &x);
    argus__v1__batch__free_unpacked(b, NULL);
    kernel_sets_get_stats(k, &st);
    assert_int_equal(st.defined, 1);
    assert_int_equal(st.referred, 1);
    assert_int_equal(st.unknown, 0);
    assert_int_equal(st.cached, 1);
    kernel_sets_free(k);

    /* the collector restarted: from disk */
    store_close(f->s);
    f->s = open_store(f);
    k = kernel_sets_new(f->s, 1 << 20);
    b = shipped(&x, set, 0);
    expand(k, b);
    same_groups(b->steps[0], &x);
    argus__v1__batch__free_unpacked(b, NULL);
    kernel_sets_get_stats(k, &st);
    assert_int_equal(st.referred, 1);
    assert_int_equal(st.cached, 1);
    /* another job does not have it */
    rec_init(&x, "job-other", 0);
    b = shipped(&x, set, 0);
    expand(k, b);
    assert_int_equal(b->steps[0]->n_kernels, 0);
    argus__v1__batch__free_unpacked(b, NULL);
    kernel_sets_get_stats(k, &st);
    assert_int_equal(st.unknown, 1);
    kernel_sets_free(k);
}

/* A definition under another id: ignored, counted; nothing kept. */
static void test_bad_definition(void **state)
{
    struct fix *f = *state;
    struct kernel_sets *k = kernel_sets_new(f->s, 1 << 20);
    struct kernel_sets_stats st;
    struct rec x;
    Argus__V1__Batch *b;
    uint64_t set;
    char err[256];

    rec_init(&x, "job-k", 0);
    set = kernel_code_record_set(&x.r);
    b = shipped(&x, 0, set ^ 1);
    expand(k, b);
    assert_int_equal(kernel_sets_keep(k, b, err, sizeof(err)), 0);
    argus__v1__batch__free_unpacked(b, NULL);
    b = shipped(&x, set ^ 1, 0);
    expand(k, b);
    assert_int_equal(b->steps[0]->n_kernels, 0);
    argus__v1__batch__free_unpacked(b, NULL);
    kernel_sets_get_stats(k, &st);
    assert_int_equal(st.defined, 0);
    assert_int_equal(st.bad, 1);
    assert_int_equal(st.unknown, 1);
    kernel_sets_free(k);
}

/* A cache with room for one set: two sets kept, both still expand (the
 * other read back from the store), and the cache never holds both. */
static void test_small_cache(void **state)
{
    struct fix *f = *state;
    struct kernel_sets *k = kernel_sets_new(f->s, 150); /* a set is 80 B here */
    struct kernel_sets_stats st;
    struct rec x[2];
    uint64_t set[2];
    char err[256];

    for (uint32_t v = 0; v < 2; v++) {
        Argus__V1__Batch *b;

        rec_init(&x[v], "job-k", v);
        set[v] = kernel_code_record_set(&x[v].r);
        b = shipped(&x[v], 0, set[v]);
        expand(k, b);
        assert_int_equal(kernel_sets_keep(k, b, err, sizeof(err)), 0);
        argus__v1__batch__free_unpacked(b, NULL);
    }
    assert_int_not_equal(set[0], set[1]);
    for (int round = 0; round < 3; round++)
        for (int v = 0; v < 2; v++) {
            Argus__V1__Batch *b = shipped(&x[v], set[v], 0);

            expand(k, b);
            same_groups(b->steps[0], &x[v]);
            argus__v1__batch__free_unpacked(b, NULL);
            kernel_sets_get_stats(k, &st);
            assert_true(st.cached <= 1);
        }
    kernel_sets_get_stats(k, &st);
    assert_int_equal(st.referred, 6);
    assert_int_equal(st.unknown, 0);
    kernel_sets_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_define_then_refer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_definition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_cache, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
