/* collector/store/store_alerts and the queue of collector/alerts on it: put,
 * scan by prefix in key order, delete, durable across a reopen; an alert
 * that fires while its sink is down stays queued across alerts_free and
 * alerts_new; the queue of a sink no longer configured is dropped; bad sink
 * settings are refused naming the key. */
#include "tests/unit/store_fixture.h"

#include <unistd.h>

#include "collector/alerts/alerts.h"
#include "collector/alerts/sinks/sinks.h"

/* o's targets of the sink called name (a row of the sinks table). */
static void set_targets(struct alerts_options *o, const char *name, const char *list)
{
    int row = alert_sink_index(alert_sink_find(name));

    assert_true(row >= 0);
    o->targets[row] = list;
}

struct keys {
    int n;
    char first[64];
    char first_key[128];
    size_t first_klen;
};

static int count_key(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct keys *k = ctx;

    if (k->n == 0)
        k->first_klen = klen;
    if (k->n == 0 && klen <= sizeof(k->first_key))
        memcpy(k->first_key, key, klen);
    if (k->n++ == 0)
        snprintf(k->first, sizeof(k->first), "%.*s", (int)vlen, (const char *)val);
    return 0;
}

static void test_put_scan_delete(void **state)
{
    struct fix *f = *state;
    char err[256];
    struct keys k = {0};

    assert_int_equal(store_put_alert(f->s, "q:b\0\2", 5, "b2", 2, err, sizeof(err)), 0);
    assert_int_equal(store_put_alert(f->s, "q:a\0\2", 5, "a2", 2, err, sizeof(err)), 0);
    assert_int_equal(store_put_alert(f->s, "q:a\0\1", 5, "a1", 2, err, sizeof(err)), 0);
    assert_int_equal(store_put_alert(f->s, "s:x", 3, "{}", 2, err, sizeof(err)), 0);
    assert_int_equal(store_scan_alerts(f->s, "q:a", 4, count_key, &k), 0);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.first, "a1");
    assert_int_equal(store_delete_alert(f->s, "q:a\0\1", 5, err, sizeof(err)), 0);
    store_close(f->s);
    f->s = open_store(f);
    k = (struct keys){0};
    assert_int_equal(store_scan_alerts(f->s, "q:a", 4, count_key, &k), 0);
    assert_int_equal(k.n, 1);
    assert_string_equal(k.first, "a2");
    k = (struct keys){0};
    assert_int_equal(store_scan_alerts(f->s, NULL, 0, count_key, &k), 0);
    assert_int_equal(k.n, 3);
}

static void fire_one(struct alerts *a)
{
    Argus__V1__Report r = ARGUS__V1__REPORT__INIT;
    Argus__V1__Suspect s = ARGUS__V1__SUSPECT__INIT, *ps = &s;
    Argus__V1__Report *reps[1] = {&r};

    r.id = "r1";
    r.job = "j";
    r.n_suspects = 1;
    r.suspects = &ps;
    s.rank = 3;
    s.node = "n1";
    s.cause = ARGUS__V1__CAUSE__CAUSE_COMPUTE;
    s.pages = true;
    alerts_observe(a, "j", reps, 1, 10);
}

static void count_queued(void *ctx, const struct alerts_sink_stats *st)
{
    *(uint64_t *)ctx += st->queued;
}

static void test_queue_survives(void **state)
{
    struct fix *f = *state;
    struct alerts_options o = {.window = 40,
                               .resolve_after = 20,
                               .backoff_max_ns = NSEC_PER_SEC,
                               .http_timeout_ns = NSEC_PER_SEC};
    struct alerts *a = NULL;
    struct keys k = {0};
    char err[256];
    uint64_t seen = 0;
    static const char prefix[] = "q:webhook:http://127.0.0.1:1/down"; /* and its \0 */

    set_targets(&o, "webhook", "http://127.0.0.1:1/down");
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), 0);
    fire_one(a);
    alerts_free(a);
    assert_int_equal(store_scan_alerts(f->s, "q:", 2, count_key, &k), 0);
    assert_int_equal(k.n, 1); /* never delivered: still queued */
    /* the key earlier builds wrote, which a restart must find: "q:" kind
     * ":" target \0 seq (8 bytes) */
    assert_int_equal(k.first_klen, sizeof(prefix) + 8);
    assert_memory_equal(k.first_key, prefix, sizeof(prefix));
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), 0);
    alerts_foreach_sink(a, count_queued, &seen);
    assert_int_equal(seen, 1);
    alerts_free(a);
    set_targets(&o, "webhook", "");
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), 0); /* sink gone: dropped */
    alerts_free(a);
    k = (struct keys){0};
    assert_int_equal(store_scan_alerts(f->s, "q:", 2, count_key, &k), 0);
    assert_int_equal(k.n, 0);
    k = (struct keys){0};
    assert_int_equal(store_scan_alerts(f->s, "s:", 2, count_key, &k), 0);
    assert_int_equal(k.n, 1); /* the alert's state is kept */
}

static void test_bad_settings(void **state)
{
    struct fix *f = *state;
    struct alerts_options o = {.window = 40, .resolve_after = 20};
    struct alerts *a = NULL;
    char err[256];

    set_targets(&o, "alertmanager", "localhost:9093");
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "alerts.alertmanager: 'localhost:9093' is not an http"));
    assert_null(a);
    assert_int_equal(alerts_check(&o, err, sizeof(err)), -EINVAL);
    set_targets(&o, "alertmanager", "http://a:9093,https://");
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "'https://' is not an http"));
    set_targets(&o, "alertmanager", "");
    set_targets(&o, "exec", "relative/hook");
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "alerts.exec: 'relative/hook' is not an absolute path"));
    set_targets(&o, "exec", "/nonexistent/hook");
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "No such file"));
    set_targets(&o, "exec", "");
    o.webhook_token_file = "/nonexistent/token";
    assert_int_equal(alerts_new(f->s, &o, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "alerts.webhook_token_file: cannot read /nonexistent/token"));
    o.webhook_token_file = "";
    set_targets(&o, "alertmanager", "http://a:9093, https://b:9093");
    assert_int_equal(alerts_check(&o, err, sizeof(err)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_scan_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_survives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_settings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
