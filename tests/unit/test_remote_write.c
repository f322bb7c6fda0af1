/* collector/series/remote_write's pure parts: the request decodes (snappy, then
 * prometheus.WriteRequest) to the series given, __name__ first and labels
 * sorted, each sample at the timestamp; which answers are retried; the
 * backoff. The sender itself runs against real Prometheus and a failing
 * receiver in tests/integration/prometheus_remote_write.sh. */
#include <setjmp.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/series/remote_write.h"
#include "collector/series/series.h"
#include "common/clock.h"
#include "proto/remote_write.pb-c.h"

static Prometheus__WriteRequest *decode(const void *z, size_t len)
{
    size_t raw_len;
    char *raw;

    assert_int_equal(snappy_uncompressed_length(z, len, &raw_len), SNAPPY_OK);
    raw = malloc(raw_len + 1);
    assert_int_equal(snappy_uncompress(z, len, raw, &raw_len), SNAPPY_OK);
    Prometheus__WriteRequest *req =
        prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *)raw);
    free(raw);
    assert_non_null(req);
    return req;
}

static void test_encode(void **state)
{
    struct series_set s = {0};
    void *z = NULL;
    size_t len = 0;

    assert_int_equal(series_add(&s, SERIES_TOP_STRAGGLER, "job", "train", "rank", "11", 39.5), 0);
    assert_int_equal(series_add(&s, SERIES_SUSPECTS, "cause", "compute", "job", "train", 1), 0);
    assert_int_equal(series_add(&s, SERIES_LAST_STEP, "job", "train", NULL, NULL, 119), 0);
    assert_int_equal(remote_write_encode(&s, NULL, NULL, 1796000000123, &z, &len), 0);
    Prometheus__WriteRequest *req = decode(z, len);
    assert_int_equal(req->n_timeseries, 3);
    const char *want[3][3][2] = {
        {{"__name__", "argus_job_top_straggler_slowdown"}, {"job", "train"}, {"rank", "11"}},
        {{"__name__", "argus_job_suspects"}, {"cause", "compute"}, {"job", "train"}},
        {{"__name__", "argus_job_last_step"}, {"job", "train"}, {NULL, NULL}},
    };
    const double values[] = {39.5, 1, 119};
    for (size_t i = 0; i < 3; i++) {
        Prometheus__TimeSeries *ts = req->timeseries[i];
        assert_int_equal(ts->n_labels, want[i][2][0] ? 3 : 2);
        for (size_t l = 0; l < ts->n_labels; l++) {
            assert_string_equal(ts->labels[l]->name, want[i][l][0]);
            assert_string_equal(ts->labels[l]->value, want[i][l][1]);
        }
        assert_int_equal(ts->n_samples, 1);
        assert_true(ts->samples[0]->value == values[i]);
        assert_int_equal(ts->samples[0]->timestamp, 1796000000123);
    }
    prometheus__write_request__free_unpacked(req, NULL);
    free(z);

    /* the collector's name as label collector, in its place among the sorted labels */
    assert_int_equal(remote_write_encode(&s, "col-a", NULL, 7, &z, &len), 0);
    req = decode(z, len);
    assert_int_equal(req->timeseries[1]->n_labels, 4);
    assert_string_equal(req->timeseries[1]->labels[2]->name, "collector");
    assert_string_equal(req->timeseries[1]->labels[2]->value, "col-a");
    assert_int_equal(req->timeseries[2]->n_labels, 3);
    assert_string_equal(req->timeseries[2]->labels[1]->name, "collector");
    prometheus__write_request__free_unpacked(req, NULL);
    free(z);

    /* an HA pair's member: replica="c1" in its place among the sorted labels,
     * and no collector label (it would keep the pair's series apart) */
    assert_int_equal(remote_write_encode(&s, "col-a", "c1", 7, &z, &len), 0);
    req = decode(z, len);
    assert_int_equal(req->n_timeseries, 3);
    Prometheus__TimeSeries *top = req->timeseries[0];
    assert_int_equal(top->n_labels, 4);
    assert_string_equal(top->labels[0]->name, "__name__");
    assert_string_equal(top->labels[1]->name, "job");
    assert_string_equal(top->labels[2]->name, "rank");
    assert_string_equal(top->labels[3]->name, "replica");
    assert_string_equal(top->labels[3]->value, "c1");
    assert_int_equal(req->timeseries[2]->n_labels, 3);
    prometheus__write_request__free_unpacked(req, NULL);
    free(z);
    assert_int_equal(remote_write_encode(&s, "", "", 7, &z, &len), 0); /* "": no label */
    req = decode(z, len);
    assert_int_equal(req->timeseries[0]->n_labels, 3);
    prometheus__write_request__free_unpacked(req, NULL);
    free(z);

    /* nothing to send is still a valid (empty) request */
    series_set_clear(&s);
    assert_int_equal(remote_write_encode(&s, NULL, NULL, 1, &z, &len), 0);
    req = decode(z, len);
    assert_int_equal(req->n_timeseries, 0);
    prometheus__write_request__free_unpacked(req, NULL);
    free(z);
}

static void test_classify(void **state)
{
    assert_int_equal(remote_write_classify(true, 200), REMOTE_WRITE_SENT);
    assert_int_equal(remote_write_classify(true, 204), REMOTE_WRITE_SENT);
    assert_int_equal(remote_write_classify(true, 400), REMOTE_WRITE_REJECT);
    assert_int_equal(remote_write_classify(true, 404), REMOTE_WRITE_REJECT);
    assert_int_equal(remote_write_classify(true, 429), REMOTE_WRITE_RETRY);
    assert_int_equal(remote_write_classify(true, 500), REMOTE_WRITE_RETRY);
    assert_int_equal(remote_write_classify(true, 503), REMOTE_WRITE_RETRY);
    assert_int_equal(remote_write_classify(false, 0), REMOTE_WRITE_RETRY);
    assert_int_equal(remote_write_classify(true, 302), REMOTE_WRITE_RETRY);
}

static void test_backoff(void **state)
{
    assert_int_equal(remote_write_backoff_ns(1), 500 * NSEC_PER_MSEC);
    assert_int_equal(remote_write_backoff_ns(2), NSEC_PER_SEC);
    assert_int_equal(remote_write_backoff_ns(3), 2 * NSEC_PER_SEC);
    assert_int_equal(remote_write_backoff_ns(7), 30 * NSEC_PER_SEC);
    assert_int_equal(remote_write_backoff_ns(1000), 30 * NSEC_PER_SEC);
}

static int no_series(void *ctx, struct series_set *out)
{
    return 0;
}

/* Bad settings are refused with what was wrong. */
static void test_new_errors(void **state)
{
    struct remote_write_options o = {.url = "ftp://x/",
                                     .interval_ns = NSEC_PER_SEC,
                                     .timeout_ns = NSEC_PER_SEC,
                                     .queue_bytes = 1 << 20};
    char err[256] = "";

    assert_null(remote_write_new(&o, no_series, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "remote_write.url ftp://x/"));
    o.url = "http://127.0.0.1:9/api/v1/write";
    o.bearer_token_file = "/nonexistent/token";
    assert_null(remote_write_new(&o, no_series, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "remote_write.bearer_token_file /nonexistent/token"));
    o.bearer_token_file = "/dev/null";
    assert_null(remote_write_new(&o, no_series, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "empty"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_new_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
