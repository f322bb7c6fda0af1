/* Report ids and alerts from the data only (issue 28: the primary and the
 * standby of a job diagnose it from the same records and must page with the
 * same alert, which an Alertmanager cluster then sends once): two engines
 * fed the same records at other wall clocks, with the records of each step
 * in another order and batches at other intervals, give byte-identical
 * report ids, alert ids, Alertmanager labels, annotations and startsAt;
 * distinct findings get distinct ids, sorted by onset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/alert_json.h"
#include "collector/alerts/sinks/alertmanager.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_report.h"
#include "tools/argus-sim/diag_scenario.h"

#define SEC 1000000000ull
#define MAX_IDS 256
#define MAX_PAGES 16

/* What one collector said: its report ids (in order) and, for every alert
 * that fired, what Alertmanager got from it less endsAt. */
struct said {
    char *ids[MAX_IDS];
    uint64_t onsets[MAX_IDS];
    size_t n_ids;
    char *pages[MAX_PAGES];
    size_t n_pages;
    uint64_t now; /* this collector's clock */
};

/* The Alertmanager alert of a firing change, endsAt dropped (it is this
 * collector's now + a resend interval, and not part of an alert's identity),
 * with the alert's own id and created time. */
static void on_change(void *ctx, const struct alert *a, bool forgotten)
{
    struct said *s = ctx;
    char *ev = NULL;

    if (forgotten || a->status != ALERT_FIRING || s->n_pages == MAX_PAGES)
        return;
    ev = alert_event_json(a, "https://argus.example/report/{id}?job={job}");
    assert_non_null(ev);
    struct json_object *e = json_tokener_parse(ev), *am = json_object_new_array(), *v;
    assert_int_equal(alert_sink_alertmanager_append(am, e, s->now, 240 * SEC), 0);
    v = json_object_array_get_idx(am, 0);
    json_object_object_del(v, "endsAt");
    json_object_object_add(v, "argus_id", json_object_new_string(a->id));
    json_object_object_add(v, "argus_created", json_object_new_uint64(a->created_ns));
    s->pages[s->n_pages++] = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    json_object_put(am);
    json_object_put(e);
    free(ev);
}

static void take(struct diag_engine *e, struct alert_book *b, const char *job, struct said *s)
{
    Argus__V1__Report **reps;
    size_t n = diag_engine_take_reports(e, &reps);

    assert_int_equal(alert_book_observe(b, job, reps, n, diag_engine_steps_closed(e), s->now), 0);
    for (size_t i = 0; i < n; i++) {
        if (s->n_ids < MAX_IDS) {
            s->onsets[s->n_ids] = reps[i]->onset_unix_ns;
            s->ids[s->n_ids++] = strdup(reps[i]->id);
        }
        diag_report_free(reps[i]);
    }
    free(reps);
}

/* One collector: the scenario's records, each step's in forward or
 * backward order, batches every `every` ns of a clock that starts at
 * clock0 (not the records' clock). */
static void collect(enum diag_scn_fault fault, uint64_t clock0, uint64_t every, bool backward,
                    struct said *s)
{
    struct diag_scn_config c = {.fault = fault, .ranks = 32, .tp = 2, .seed = 28, .fault_rank = 9};
    struct diag_scn *scn = diag_scn_new(&c);
    struct diag_options o = {.step_timeout_ns = 60 * SEC, .name = diag_scn_name};
    struct alert_book_options bo = {.clear_steps = 80, .job_idle_ns = 3600 * SEC};
    size_t nres;
    uint64_t end;

    assert_non_null(scn);
    o.name_ctx = scn;
    struct diag_engine *e = diag_engine_new(&o);
    struct alert_book *b = alert_book_new(&bo, on_change, s);
    assert_non_null(e);
    assert_non_null(b);
    Argus__V1__Resource *const *res = diag_scn_resources(scn, &nres);
    for (size_t i = 0; i < nres; i++)
        assert_int_equal(diag_engine_add_resource(e, res[i]), 0);
    s->now = clock0;
    for (int k = 0; k < 120; k++) {
        Argus__V1__StepRecord *const *recs;
        size_t n = diag_scn_next(scn, &recs, &end);
        for (size_t i = 0; i < n; i++)
            assert_true(diag_engine_add_step(e, recs[backward ? n - 1 - i : i], s->now + i) >= 0);
        s->now += every;
        assert_true(diag_engine_tick(e, s->now) >= 0);
        take(e, b, diag_scn_job(scn), s);
    }
    assert_true(diag_engine_flush(e, s->now) >= 0);
    take(e, b, diag_scn_job(scn), s);
    alert_book_free(b);
    diag_engine_free(e);
    diag_scn_free(scn);
}

static void said_free(struct said *s)
{
    for (size_t i = 0; i < s->n_ids; i++)
        free(s->ids[i]);
    for (size_t i = 0; i < s->n_pages; i++)
        free(s->pages[i]);
}

/* The primary and the standby of a straggling job: the same ids and the same
 * page, whatever their clocks and the order records came in. */
static void test_pair_agrees(void **state)
{
    struct said a = {0}, b = {0};

    (void)state;
    collect(DIAG_SCN_COMPUTE_STRAGGLER, 1900000000 * SEC, SEC / 2, false, &a);
    collect(DIAG_SCN_COMPUTE_STRAGGLER, 1900000777 * SEC + 12345, SEC / 3, true, &b);
    assert_true(a.n_ids > 0);
    assert_int_equal(a.n_ids, b.n_ids);
    for (size_t i = 0; i < a.n_ids; i++) {
        assert_string_equal(a.ids[i], b.ids[i]);
        assert_true(a.onsets[i] > 0); /* from the records, and it leads the id */
        char lead[24];
        snprintf(lead, sizeof(lead), "%020llu-", (unsigned long long)a.onsets[i]);
        assert_memory_equal(a.ids[i], lead, 21);
    }
    assert_int_equal(a.n_pages, 1);
    assert_int_equal(b.n_pages, 1);
    assert_string_equal(a.pages[0], b.pages[0]);
    assert_non_null(strstr(a.pages[0], "\"rank\":\"9\""));
    assert_non_null(strstr(a.pages[0], "\"startsAt\":\"2027")); /* the records' time */
    said_free(&a);
    said_free(&b);
}

/* Ids of one job's findings are distinct and sort by onset. */
static void test_ids_distinct_sorted(void **state)
{
    struct said a = {0};

    (void)state;
    collect(DIAG_SCN_JIT, 1900000000 * SEC, SEC / 2, false, &a);
    assert_true(a.n_ids > 1);
    for (size_t i = 0; i < a.n_ids; i++)
        for (size_t j = i + 1; j < a.n_ids; j++) {
            assert_string_not_equal(a.ids[i], a.ids[j]);
            if (a.onsets[i] < a.onsets[j])
                assert_true(strcmp(a.ids[i], a.ids[j]) < 0);
        }
    said_free(&a);
}

static Argus__V1__Suspect *suspect(uint32_t rank, const char *node, Argus__V1__Cause cause,
                                   Argus__V1__Level level)
{
    return diag_suspect_new(rank, node, 0, "dp=0", level, cause, "forward", 2.0, 30, 40,
                            "forward 2x");
}

/* A report of job at to_step naming (rank, cause) pairs (L2, or L1 when
 * spike); its id. */
static char *id_of(const char *job, uint64_t to_step, uint64_t onset, const uint32_t *ranks,
                   const Argus__V1__Cause *causes, size_t n, double score, bool spike)
{
    Argus__V1__Report *r = diag_report_new(job, 42 /* the clock: not in the id */, 7);
    char *id;

    assert_non_null(r);
    for (size_t i = 0; i < n; i++) {
        Argus__V1__Suspect *s = suspect(ranks[i], "node-1", causes[i],
                                        spike ? ARGUS__V1__LEVEL__LEVEL_L1_ITERATION
                                              : ARGUS__V1__LEVEL__LEVEL_L2_PHASE);
        s->score = score;
        assert_int_equal(diag_report_add(r, s), 0);
    }
    r->to_step = to_step;
    assert_int_equal(diag_report_identify(r, onset), 0);
    assert_int_equal(r->onset_unix_ns, onset);
    id = strdup(r->id);
    diag_report_free(r);
    return id;
}

/* The id covers job, onset, step and what the suspects point at (rank, node,
 * group, cause, level); not the collector's clock, the suspects' order or
 * their scores. */
static void test_identify(void **state)
{
    const uint32_t r12[] = {1, 2}, r21[] = {2, 1}, r13[] = {1, 3};
    const Argus__V1__Cause cc[] = {ARGUS__V1__CAUSE__CAUSE_COMPUTE,
                                   ARGUS__V1__CAUSE__CAUSE_COMPUTE};
    const Argus__V1__Cause cl[] = {ARGUS__V1__CAUSE__CAUSE_COMPUTE, ARGUS__V1__CAUSE__CAUSE_LINK};
    char *base = id_of("j", 10, 5 * SEC, r12, cc, 2, 1.0, false);
    char *other[] = {
        id_of("j", 10, 5 * SEC, r21, cc, 2, 9.0, false), /* same finding */
        id_of("k", 10, 5 * SEC, r12, cc, 2, 1.0, false),
        id_of("j", 11, 5 * SEC, r12, cc, 2, 1.0, false),
        id_of("j", 10, 6 * SEC, r12, cc, 2, 1.0, false),
        id_of("j", 10, 5 * SEC, r13, cc, 2, 1.0, false),
        id_of("j", 10, 5 * SEC, r12, cl, 2, 1.0, false),
        id_of("j", 10, 5 * SEC, r12, cc, 1, 1.0, false),
        id_of("j", 10, 5 * SEC, r12, cc, 2, 1.0, true),
    };

    (void)state;
    assert_int_equal(strlen(base), 20 + 1 + 8 + 1 + 12);
    assert_memory_equal(base, "00000000005000000000-", 21);
    assert_string_equal(other[0], base);
    for (size_t i = 1; i < sizeof(other) / sizeof(other[0]); i++)
        assert_string_not_equal(other[i], base);
    assert_true(strcmp(base, other[3]) < 0); /* a later onset sorts after */
    free(base);
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        free(other[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_agrees),
        cmocka_unit_test(test_ids_distinct_sorted),
        cmocka_unit_test(test_identify),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
