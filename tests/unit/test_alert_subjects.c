/* collector/alerts: an alert's subject comes from its evidence. A node only
 * when the evidence is node-wide (two or more of its ranks suspects of the
 * cause at once, or a node-level finding), else the rank; an alert lists
 * only its own suspects and resolves when they recover, whatever the other
 * ranks of the node do; a node alert takes in the rank alerts of its ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collector/alerts/alert_book.h"

#define SEC 1000000000ull
#define HOST ARGUS__V1__CAUSE__CAUSE_HOST
#define COMPUTE ARGUS__V1__CAUSE__CAUSE_COMPUTE

struct report {
    Argus__V1__Report r;
    Argus__V1__Suspect s[8];
    Argus__V1__Suspect *ps[8];
};

static void report_init(struct report *f)
{
    memset(f, 0, sizeof(*f));
    argus__v1__report__init(&f->r);
    f->r.id = "rep";
    f->r.job = "job1";
    f->r.summary = "";
    f->r.suspects = f->ps;
}

/* A suspect of rank on node "vm" (all ranks on one node, as in the issue). */
static void suspect(struct report *f, uint32_t rank, Argus__V1__Cause cause, bool pages)
{
    Argus__V1__Suspect *s = &f->s[f->r.n_suspects];

    argus__v1__suspect__init(s);
    s->rank = rank;
    s->node = "vm";
    s->group = "pp=0,tp=0";
    s->gpu = -1;
    s->cause = cause;
    s->level = ARGUS__V1__LEVEL__LEVEL_L2_PHASE;
    s->pages = pages;
    s->evidence = "";
    f->ps[f->r.n_suspects++] = s;
}

static struct alert_book *book(void)
{
    struct alert_book_options o = {.clear_steps = 60, .job_idle_ns = 30 * SEC};

    return alert_book_new(&o, NULL, NULL);
}

static void observe(struct alert_book *b, struct report *f, uint64_t steps)
{
    Argus__V1__Report *reps[1] = {f ? &f->r : NULL};

    assert_int_equal(alert_book_observe(b, "job1", reps, f ? 1 : 0, steps, steps * SEC), 0);
}

struct found {
    const char *subject; /* in */
    int cause;
    const struct alert *a; /* out: the open alert of that subject and cause */
    int open;              /* open alerts in all */
};

static void find_each(void *ctx, const struct alert *a, bool forgotten)
{
    struct found *f = ctx;

    (void)forgotten;
    if (a->status == ALERT_RESOLVED)
        return;
    f->open++;
    if (strcmp(a->subject, f->subject) == 0 && a->cause == f->cause)
        f->a = a;
}

static struct found find(struct alert_book *b, const char *subject, int cause)
{
    struct found f = {subject, cause, NULL, 0};

    alert_book_foreach(b, find_each, &f);
    return f;
}

static void test_one_rank_is_its_own_subject(void **state)
{
    struct alert_book *b = book();
    struct report f;

    (void)state;
    report_init(&f);
    suspect(&f, 2, HOST, true); /* one throttled rank of four on the node */
    observe(b, &f, 40);
    struct found x = find(b, "rank:2", HOST);
    assert_non_null(x.a);
    assert_int_equal(x.open, 1);
    assert_int_equal(x.a->status, ALERT_FIRING);
    assert_int_equal(x.a->n_ranks, 1); /* never the healthy ranks 0, 1, 3 */
    assert_int_equal(x.a->ranks[0], 2);
    assert_null(find(b, "node:vm", HOST).a);
    alert_book_free(b);
}

static void test_node_wide_evidence_is_the_node(void **state)
{
    struct alert_book *b = book();
    struct report f;

    (void)state;
    report_init(&f);
    suspect(&f, 3, COMPUTE, true);
    suspect(&f, 1, COMPUTE, true);
    suspect(&f, 2, HOST, true); /* another cause: not node-wide evidence for it */
    observe(b, &f, 40);
    struct found x = find(b, "node:vm", COMPUTE);
    assert_non_null(x.a);
    assert_int_equal(x.a->n_ranks, 2);
    assert_int_equal(x.a->ranks[0], 1);
    assert_int_equal(x.a->ranks[1], 3);
    assert_non_null(find(b, "rank:2", HOST).a);
    assert_int_equal(x.open, 2);
    /* rank 3 alone later: still the node alert's, one of its ranks */
    report_init(&f);
    suspect(&f, 3, COMPUTE, true);
    observe(b, &f, 50);
    assert_int_equal(find(b, "node:vm", COMPUTE).open, 2);
    /* rank 0 alone: not one of them, its own alert */
    report_init(&f);
    suspect(&f, 0, COMPUTE, true);
    observe(b, &f, 60);
    assert_non_null(find(b, "rank:0", COMPUTE).a);
    assert_int_equal(find(b, "node:vm", COMPUTE).a->n_ranks, 2);
    alert_book_free(b);
}

/* An intermittent straggler recovers while findings about other ranks of
 * its node go on: its alert resolves on time. */
static void test_resolves_when_its_suspects_recover(void **state)
{
    struct alert_book *b = book();
    struct report f;
    uint64_t step = 40;

    (void)state;
    report_init(&f);
    suspect(&f, 1, HOST, true);
    observe(b, &f, step);
    assert_int_equal(find(b, "rank:1", HOST).a->status, ALERT_FIRING);
    for (int i = 0; i < 7; i++) { /* 70 steps: rank 1 never named again */
        step += 10;
        report_init(&f);
        suspect(&f, i % 2 ? 0 : 3, HOST, false); /* others' findings, one at a time */
        observe(b, &f, step);
        if (step - 40 < 60)
            assert_non_null(find(b, "rank:1", HOST).a);
    }
    assert_null(find(b, "rank:1", HOST).a); /* resolved after its 60 clean steps */
    assert_null(find(b, "node:vm", HOST).a);
    alert_book_free(b);
}

/* A node alert opens over an open rank alert: that rank's alert resolves
 * into it; a rank of the node alert that recovers leaves its list. */
static void test_node_alert_takes_in_rank_alerts(void **state)
{
    struct alert_book *b = book();
    struct report f;

    (void)state;
    report_init(&f);
    suspect(&f, 2, COMPUTE, true);
    observe(b, &f, 40);
    assert_non_null(find(b, "rank:2", COMPUTE).a);
    report_init(&f);
    suspect(&f, 2, COMPUTE, true);
    suspect(&f, 3, COMPUTE, true);
    observe(b, &f, 50);
    struct found x = find(b, "node:vm", COMPUTE);
    assert_non_null(x.a);
    assert_int_equal(x.open, 1); /* rank:2 resolved into it */
    assert_int_equal(x.a->n_ranks, 2);
    for (uint64_t step = 60; step <= 120; step += 10) { /* only rank 3 goes on */
        report_init(&f);
        suspect(&f, 3, COMPUTE, true);
        observe(b, &f, step);
    }
    x = find(b, "node:vm", COMPUTE);
    assert_non_null(x.a);
    assert_int_equal(x.a->n_ranks, 1); /* rank 2 recovered: no longer listed */
    assert_int_equal(x.a->ranks[0], 3);
    assert_int_equal(x.a->status, ALERT_FIRING);
    alert_book_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_is_its_own_subject),
        cmocka_unit_test(test_node_wide_evidence_is_the_node),
        cmocka_unit_test(test_resolves_when_its_suspects_recover),
        cmocka_unit_test(test_node_alert_takes_in_rank_alerts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
