/* The causes table: a row for every argus.v1.Cause value and nothing else,
 * names that round-trip, the paging rule (COMPUTE, LINK, HOST, SILENT), the
 * labels alerts and series have always used, and the persisted causes in
 * the order of collector/diag/diag_persist.h's index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_persist.h"
#include "common/causes.h"

static void test_covers_the_enum(void **state)
{
    const ProtobufCEnumDescriptor *d = &argus__v1__cause__descriptor;
    char want[64];

    (void)state;
    assert_int_equal(causes_count(), (int)d->n_values);
    for (unsigned i = 0; i < d->n_values; i++) {
        const struct causes_row *c = causes_get(d->values[i].value);
        assert_true(causes_known(d->values[i].value));
        assert_int_equal(c->value, d->values[i].value);
        snprintf(want, sizeof(want), "CAUSE_%s", c->name);
        assert_string_equal(d->values[i].name, want);
    }
    /* the values are 0 .. n-1: a row per value, nothing else */
    for (int v = 0; v < causes_count(); v++)
        assert_non_null(protobuf_c_enum_descriptor_get_value(d, v));
    assert_false(causes_known(-1));
    assert_false(causes_known(causes_count()));
    assert_int_equal(causes_get(-1)->value, ARGUS__V1__CAUSE__CAUSE_UNKNOWN);
    assert_int_equal(causes_get(causes_count())->value, ARGUS__V1__CAUSE__CAUSE_UNKNOWN);
    assert_int_equal(causes_get(1000)->value, ARGUS__V1__CAUSE__CAUSE_UNKNOWN);
}

static void test_every_row_is_filled(void **state)
{
    (void)state;
    for (int v = 0; v < causes_count(); v++) {
        const struct causes_row *c = causes_get(v);
        assert_non_null(c->label);
        assert_non_null(c->word);
        assert_non_null(c->meaning);
        assert_non_null(c->evidence);
        /* a cause that pages is for the node's on-call, and comes from some level */
        assert_int_equal(c->pages, c->audience == CAUSES_FOR_ON_CALL);
        assert_int_equal(c->levels == 0, v == ARGUS__V1__CAUSE__CAUSE_UNKNOWN);
        /* persisted per rank: a rank's fault (pages) or its imbalance (its owner's) */
        assert_false(c->persists && c->audience == CAUSES_FOR_NOBODY);
    }
}

static void test_names_round_trip(void **state)
{
    char buf[64];

    (void)state;
    for (int v = 0; v < causes_count(); v++) {
        const struct causes_row *c = causes_get(v);
        assert_ptr_equal(causes_by_name(c->name), c);
        assert_ptr_equal(causes_by_name(c->label), c); /* lowercase */
        snprintf(buf, sizeof(buf), "CAUSE_%s", c->name);
        assert_ptr_equal(causes_by_name(buf), c);
        snprintf(buf, sizeof(buf), "cause_%s", c->label);
        assert_ptr_equal(causes_by_name(buf), c);
    }
    assert_int_equal(causes_by_name("host")->value, ARGUS__V1__CAUSE__CAUSE_HOST);
    assert_int_equal(causes_by_name("Data_Skew")->value, ARGUS__V1__CAUSE__CAUSE_DATA_SKEW);
}

static void test_by_name_rejects_others(void **state)
{
    (void)state;
    assert_null(causes_by_name(NULL));
    assert_null(causes_by_name(""));
    assert_null(causes_by_name("CAUSE_"));
    assert_null(causes_by_name("gpu"));
    assert_null(causes_by_name("hosts"));
    assert_null(causes_by_name("data skew"));
    assert_null(causes_by_name("CAUSE_CAUSE_HOST"));
    assert_null(causes_by_name("LEVEL_HOST"));
}

static void test_paging_rule(void **state)
{
    (void)state;
    for (int v = -2; v < causes_count() + 2; v++)
        assert_int_equal(
            causes_pages(v),
            v == ARGUS__V1__CAUSE__CAUSE_COMPUTE || v == ARGUS__V1__CAUSE__CAUSE_LINK ||
                v == ARGUS__V1__CAUSE__CAUSE_HOST || v == ARGUS__V1__CAUSE__CAUSE_SILENT ||
                v == ARGUS__V1__CAUSE__CAUSE_HANG || v == ARGUS__V1__CAUSE__CAUSE_EXITED ||
                v == ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED ||
                v == ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND);
}

/* Every cause pages as ArgusStraggler, severity page, but argus's own
 * blindness: ArgusBlind, a warning, about the job as a whole. */
static void test_alert_names(void **state)
{
    (void)state;
    for (int v = -1; v < causes_count() + 1; v++) {
        bool blind = v == ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND;
        assert_string_equal(causes_alertname(v), blind ? "ArgusBlind" : "ArgusStraggler");
        assert_string_equal(causes_severity(v), blind ? "warning" : "page");
    }
    assert_int_equal(causes_get(ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND)->grouping, CAUSES_GROUP_JOB);
    assert_false(causes_fleet(ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND));
}

/* What users have seen so far: series and alert labels, summary words,
 * alert grouping, the levels that find each cause. */
static void test_names_as_before(void **state)
{
    static const char *const labels[] = {"unknown",   "compute",   "link",           "host",
                                         "data_skew", "silent",    "job_regression", "hang",
                                         "exited",    "imbalance", "gpu_throttled",  "diag_blind"};
    static const char *const words[] = {
        "unknown",       "compute",        "link", "host",      "data skew",
        "silent",        "job regression", "hang", "rank died", "workload imbalance",
        "GPU throttled", "diagnosis blind"};

    (void)state;
    assert_int_equal(causes_count(), 12);
    for (int v = 0; v < 12; v++) {
        assert_string_equal(causes_get(v)->label, labels[v]);
        assert_string_equal(causes_get(v)->word, words[v]);
        assert_int_equal(causes_get(v)->grouping,
                         v == ARGUS__V1__CAUSE__CAUSE_LINK         ? CAUSES_GROUP_PEERS
                         : v == ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND ? CAUSES_GROUP_JOB
                                                                   : CAUSES_GROUP_NODE);
    }
    assert_string_equal(causes_get(99)->label, "unknown");
    assert_string_equal(causes_get(99)->name, "UNKNOWN");
    assert_int_equal(causes_get(ARGUS__V1__CAUSE__CAUSE_SILENT)->levels,
                     CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_SILENT));
    assert_true(causes_get(ARGUS__V1__CAUSE__CAUSE_COMPUTE)->levels &
                CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_L3_KERNEL));
}

static void test_persisted_match_diag_persist(void **state)
{
    int n = 0;

    (void)state;
    for (int v = 0; v < causes_count(); v++)
        n += causes_get(v)->persists;
    assert_int_equal(n, DIAG_CAUSE_N);
    assert_int_equal(causes_persisted(DIAG_CAUSE_COMPUTE), ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_int_equal(causes_persisted(DIAG_CAUSE_LINK), ARGUS__V1__CAUSE__CAUSE_LINK);
    assert_int_equal(causes_persisted(DIAG_CAUSE_HOST), ARGUS__V1__CAUSE__CAUSE_HOST);
    assert_int_equal(causes_persisted(DIAG_CAUSE_IMBALANCE), ARGUS__V1__CAUSE__CAUSE_IMBALANCE);
    assert_false(causes_pages(ARGUS__V1__CAUSE__CAUSE_IMBALANCE));
    assert_int_equal(causes_persisted(DIAG_CAUSE_N), ARGUS__V1__CAUSE__CAUSE_UNKNOWN);
    assert_int_equal(causes_persisted(-1), ARGUS__V1__CAUSE__CAUSE_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_covers_the_enum),
        cmocka_unit_test(test_every_row_is_filled),
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_by_name_rejects_others),
        cmocka_unit_test(test_paging_rule),
        cmocka_unit_test(test_alert_names),
        cmocka_unit_test(test_names_as_before),
        cmocka_unit_test(test_persisted_match_diag_persist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
