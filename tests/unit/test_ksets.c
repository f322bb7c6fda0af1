/* agent/delivery/ksets: a skeleton seen twice defines its set, the first
 * defining batch's ack makes it held, records of the skeleton then refer
 * to it whatever their work ids (up to half moved); more moved defines a
 * new set that replaces the held one once acked, while records go whole
 * when another set of theirs is in flight; a reset forgets every set; a
 * full table forgets every skeleton. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agent/delivery/ksets.h"

#define NG 4

struct rec {
    Argus__V1__StepRecord r;
    Argus__V1__KernelGroup g[NG], *gp[NG];
};

/* NG groups of names 1.., stream skel, work ids work + i. */
static void rec_init(struct rec *x, uint32_t skel, uint32_t work)
{
    argus__v1__step_record__init(&x->r);
    for (int i = 0; i < NG; i++) {
        argus__v1__kernel_group__init(&x->g[i]);
        x->g[i].name_id = 1000 + (uint64_t)i;
        x->g[i].stream = skel;
        x->g[i].work_id = work + (uint32_t)i;
        x->gp[i] = &x->g[i];
    }
    x->r.n_kernels = NG;
    x->r.kernels = x->gp;
}

/* Plan r as the batcher would, put it in the open batch when it defines. */
static enum ksets_use plan(struct ksets *k, const struct rec *x, struct ksets_plan *p)
{
    ksets_plan(k, 0, &x->r, p);
    if (p->use == KSETS_DEFINE)
        ksets_defined(k, 0, p->skel);
    return p->use;
}

static void test_lifecycle(void **state)
{
    struct ksets *k = ksets_new();
    struct ksets_plan p;
    struct rec a, moved1, moved3;
    size_t held;

    (void)state;
    rec_init(&a, 7, 100);
    rec_init(&moved1, 7, 100);
    moved1.g[2].work_id = 5;                        /* one of four moved */
    rec_init(&moved3, 7, 900);                      /* four of four */
    assert_int_equal(plan(k, &a, &p), KSETS_WHOLE); /* seen once */
    assert_int_equal(plan(k, &a, &p), KSETS_DEFINE);
    assert_int_equal(p.define, kernel_code_record_set(&a.r));
    ksets_sealed(k, 1);
    assert_int_equal(plan(k, &moved1, &p), KSETS_WHOLE); /* another set, a's in flight */
    assert_int_equal(plan(k, &a, &p), KSETS_DEFINE);     /* a's again, until acked */
    ksets_sealed(k, 2);
    ksets_ack(k, 1); /* the first batch that defined it */
    assert_int_equal(ksets_count(k, &held), 1);
    assert_int_equal(held, 1);
    assert_int_equal(plan(k, &moved1, &p), KSETS_REFER);
    assert_int_equal(p.base.id, kernel_code_record_set(&a.r));
    assert_int_equal(p.base.n, NG);
    assert_int_equal(p.base.ids[2].work_id, 102);
    /* most moved: its own set, referred to once acked; a's meanwhile held */
    assert_int_equal(plan(k, &moved3, &p), KSETS_DEFINE);
    ksets_sealed(k, 3);
    assert_int_equal(plan(k, &moved1, &p), KSETS_REFER);
    assert_int_equal(p.base.id, kernel_code_record_set(&a.r));
    ksets_ack(k, 3);
    assert_int_equal(plan(k, &moved3, &p), KSETS_REFER);
    assert_int_equal(p.base.id, kernel_code_record_set(&moved3.r));
    /* a reset: defined again before referred to */
    ksets_reset(k);
    ksets_count(k, &held);
    assert_int_equal(held, 0);
    assert_int_equal(plan(k, &moved3, &p), KSETS_DEFINE);
    ksets_sealed(k, 4);
    ksets_ack(k, 4);
    assert_int_equal(plan(k, &moved3, &p), KSETS_REFER);
    ksets_free(k);
}

/* Past KSETS_MAX skeletons the table starts over: bounded, and the newest
 * skeleton is still tracked. */
static void test_full_table(void **state)
{
    struct ksets *k = ksets_new();
    struct ksets_plan p;
    struct rec x;
    size_t held, n = 0;

    (void)state;
    for (uint32_t s = 0; s <= KSETS_MAX; s++) {
        rec_init(&x, s, 1);
        plan(k, &x, &p);
        n = ksets_count(k, &held);
        assert_true(n >= 1 && n <= KSETS_MAX);
    }
    assert_int_equal(n, 1);
    assert_int_equal(plan(k, &x, &p), KSETS_DEFINE); /* its second sighting */
    ksets_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_full_table),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
