/* collector/alerts/sinks: the registration table (the sinks of earlier
 * builds, under the names their store queue keys and config keys carry;
 * only Alertmanager re-sends), each sink's check of a target, and the
 * delivery of the exec and webhook sinks (a hook's exit status, its
 * environment and its timeout; a POST nobody answers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/alerts/sinks/sink.h"
#include "collector/alerts/sinks/sinks.h"
#include "common/clock.h"

static const char event[] =
    "{\"schema\":\"argus.alert.v1\",\"status\":\"firing\",\"alert\":{\"id\":\"a1\","
    "\"job\":\"job7\",\"cause\":\"compute\",\"labels\":{\"ranks\":\"3\",\"gpu\":1}}}";

static void test_table(void **state)
{
    static const char *const names[] = {"alertmanager", "webhook", "exec"};

    assert_int_equal(alert_sinks_count, 3);
    for (size_t i = 0; i < alert_sinks_count; i++) {
        const struct alert_sink_ops *ops = alert_sinks[i];
        assert_string_equal(ops->name, names[i]); /* order: the config's, the set-up's */
        assert_non_null(ops->check);
        assert_non_null(ops->deliver);
        assert_ptr_equal(alert_sink_find(ops->name), ops);
        assert_int_equal(alert_sink_index(ops), (int)i);
        assert_int_equal(ops->resends, strcmp(ops->name, "alertmanager") == 0);
    }
    assert_null(alert_sink_find("pager"));
    assert_int_equal(alert_sink_index(NULL), -ENOENT);
}

static void test_check_http(void **state)
{
    char err[256];

    for (size_t i = 0; i < 2; i++) {
        const struct alert_sink_ops *ops = alert_sink_find(i ? "webhook" : "alertmanager");
        assert_int_equal(ops->check("http://am:9093", err, sizeof(err)), 0);
        assert_int_equal(ops->check("https://hooks.example/x", err, sizeof(err)), 0);
        assert_int_equal(ops->check("https://", err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "'https://' is not an http:// or https:// URL");
        assert_int_equal(ops->check("am:9093", err, sizeof(err)), -EINVAL);
        assert_int_equal(ops->check("ftp://am", err, sizeof(err)), -EINVAL);
    }
}

static void test_check_exec(void **state)
{
    const struct alert_sink_ops *ops = alert_sink_find("exec");
    char err[256];

    assert_int_equal(ops->check("/bin/true", err, sizeof(err)), 0);
    assert_int_equal(ops->check("true", err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "'true' is not an absolute path to an executable file");
    assert_int_equal(ops->check("/nonexistent/hook", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "No such file"));
}

/* A hook that writes its stdin and ARGUS_ALERT_JOB to out, then exits code. */
static void write_hook(const char *path, const char *out, int code)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fprintf(f, "#!/bin/sh\ncat > %s\necho \"$ARGUS_ALERT_JOB $ARGUS_ALERT_RANKS\" >> %s\nexit %d\n",
            out, out, code);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_exec_deliver(void **state)
{
    const struct alert_sink_settings set = {.exec_timeout_ns = 5 * NSEC_PER_SEC};
    char dir[] = "/tmp/test_alert_sinks.XXXXXX", hook[128], out[128], text[1024], err[256];
    const char *events[] = {event};
    struct alert_sink s = {alert_sink_find("exec"), hook, &set};
    struct alert_sink_batch b = {events, 1, 0};
    FILE *f;
    size_t n;

    assert_non_null(mkdtemp(dir));
    snprintf(hook, sizeof(hook), "%s/hook", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    write_hook(hook, out, 0);
    assert_int_equal(s.ops->deliver(&s, &b, err, sizeof(err)), 0);
    f = fopen(out, "r");
    assert_non_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "\"schema\":\"argus.alert.v1\"")); /* the event on stdin */
    assert_non_null(strstr(text, "job7 3"));                        /* and in the env */
    write_hook(hook, out, 3);
    assert_int_equal(s.ops->deliver(&s, &b, err, sizeof(err)), -EIO);
    assert_non_null(strstr(err, "exit status 3"));
    unlink(hook);
    unlink(out);
    rmdir(dir);
}

static void test_exec_timeout(void **state)
{
    const struct alert_sink_settings set = {.exec_timeout_ns = 200 * NSEC_PER_MSEC};
    char dir[] = "/tmp/test_alert_sinks.XXXXXX", hook[128], err[256];
    const char *events[] = {event};
    struct alert_sink s = {alert_sink_find("exec"), hook, &set};
    struct alert_sink_batch b = {events, 1, 0};
    uint64_t t0 = clock_mono_ns();
    FILE *f;

    assert_non_null(mkdtemp(dir));
    snprintf(hook, sizeof(hook), "%s/hook", dir);
    f = fopen(hook, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nsleep 30\n");
    fclose(f);
    assert_int_equal(chmod(hook, 0755), 0);
    assert_int_equal(s.ops->deliver(&s, &b, err, sizeof(err)), -EIO);
    assert_non_null(strstr(err, "still running after 0.2 s: killed"));
    assert_true(clock_mono_ns() - t0 < 5 * NSEC_PER_SEC);
    unlink(hook);
    rmdir(dir);
}

static void test_http_refused(void **state)
{
    const struct alert_sink_settings set = {.http_timeout_ns = NSEC_PER_SEC,
                                            .resend_ns = 60 * NSEC_PER_SEC};
    const char *events[] = {event};
    struct alert_sink_batch b = {events, 1, 1700000000 * NSEC_PER_SEC};
    char err[256];

    for (size_t i = 0; i < 2; i++) {
        struct alert_sink s = {alert_sink_find(i ? "webhook" : "alertmanager"),
                               "http://127.0.0.1:1/down", &set};
        assert_int_equal(s.ops->deliver(&s, &b, err, sizeof(err)), -EIO); /* retried later */
    }
    events[0] = "{\"schema\":\"other\"}";
    struct alert_sink am = {alert_sink_find("alertmanager"), "http://127.0.0.1:1", &set};
    assert_int_equal(am.ops->deliver(&am, &b, err, sizeof(err)), -EINVAL); /* dropped */
    assert_non_null(strstr(err, "not argus.alert.v1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),        cmocka_unit_test(test_check_http),
        cmocka_unit_test(test_check_exec),   cmocka_unit_test(test_exec_deliver),
        cmocka_unit_test(test_exec_timeout), cmocka_unit_test(test_http_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
