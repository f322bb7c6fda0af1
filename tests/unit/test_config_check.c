/* What the config table refuses beyond types and bounds, and what is built
 * from it: option checks (addresses, lists) with the file and line, table
 * checks between keys, every error reported, --check-config and --man
 * flags, SIGHUP change reporting, the manual page; and the daemons' own
 * tables: their defaults pass, and what they used to adjust is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/config.h"
#include "collector/alerts/sinks/sinks.h"
#include "collector/config.h"
#include "common/config.h"
#include "common/config_man.h"
#include "common/config_value.h"
#include "common/log.h"

struct check_config {
    char *listen;
    char *target;
    char *http;
    char *fruits;
    uint64_t lo, hi;
    int level;
};

static const char *const fruit_names[] = {"apple", "pear", "plum", NULL};

static int check_fruits(const struct config_option *o, const void *field, char *err, size_t errlen)
{
    return config_check_list(o, *(char *const *)field, fruit_names, err, errlen);
}

#define OPT(k, ty, f, def, lo, hi, h, chk, lv)                                                     \
    CONFIG_OPTION(struct check_config, k, ty, f, def, lo, hi, h, NULL, chk, lv)

static const struct config_option options[] = {
    OPT("net.listen", CONFIG_STRING, listen, "0.0.0.0:7700", 0, 0, "listen",
        config_check_grpc_listen, false),
    OPT("net.target", CONFIG_STRING, target, "127.0.0.1:7700", 0, 0, "dial",
        config_check_grpc_target, false),
    OPT("net.http", CONFIG_STRING, http, "127.0.0.1:0", 0, 0, "http", config_check_http_listen,
        true),
    OPT("box.fruits", CONFIG_STRING, fruits, "apple,pear", 0, 0, "fruits", check_fruits, false),
    OPT("box.lo", CONFIG_UINT, lo, "1", 0, 100, "low", NULL, true),
    OPT("box.hi", CONFIG_UINT, hi, "10", 0, 100, "high", NULL, false),
    CONFIG_OPTION(struct check_config, "log.level", CONFIG_ENUM, level, "info", 0, 0, "level",
                  config_log_levels, NULL, true),
};

static const struct config_table table;

static int check_lo_hi(const void *cfg, struct config_result *res)
{
    const struct check_config *c = cfg;
    char a[128], b[128];

    if (c->lo > c->hi) {
        config_error(res, "%s: box.lo = %llu is above box.hi = %llu (%s)",
                     config_where(&table, res, "box.lo", a, sizeof(a)), (unsigned long long)c->lo,
                     (unsigned long long)c->hi, config_where(&table, res, "box.hi", b, sizeof(b)));
        return 1;
    }
    return 0;
}

static const struct config_command commands[] = {
    {"eat", "--box.fruits F", "eat the fruit"},
    {"-weird.name", NULL, "a name roff must not take for a request"},
};

static const struct config_table table = {
    .program = "checker",
    .summary = "config check test",
    .default_path = "/etc/argus/checker.conf",
    .options = options,
    .count = sizeof(options) / sizeof(options[0]),
    .check = check_lo_hi,
    .commands = commands,
    .ncommands = 2,
};

static char path[64];

static void write_file(const char *text)
{
    strcpy(path, "/tmp/argus-test-check-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int teardown(void **state)
{
    if (path[0])
        unlink(path);
    path[0] = '\0';
    return 0;
}

static int load(struct check_config *c, struct config_result *res, int argc, char **argv)
{
    memset(c, 0, sizeof(*c));
    return config_load(&table, c, argc, argv, res);
}

/* value of key is accepted (1) or refused (0). */
static int accepts(const char *key, const char *value)
{
    struct check_config c = {0};
    struct config_result res;
    char flag[256];
    snprintf(flag, sizeof(flag), "--%s=%s", key, value);
    char *argv[] = {"t", flag};
    int r = load(&c, &res, 2, argv);
    config_free(&table, &c);
    return r == 0;
}

static void test_addresses(void **state)
{
    static const char *const listen_ok[] = {
        "0.0.0.0:7700",      "127.0.0.1:0",      "[::1]:7700",         "[::]:1",
        "host-a.example:80", "unix:/run/x.sock", "unix-abstract:argus"};
    static const char *const listen_bad[] = {
        "garbage", "127.0.0.1", ":7700", "1.2.3.4:65536", "1.2.3.4:-1",  "1.2.3.4:80x",
        "[::1:80", "[zz]:80",   "unix:", "host a:80",     "dns:///a:80", ""};
    for (size_t i = 0; i < sizeof(listen_ok) / sizeof(listen_ok[0]); i++)
        assert_true(accepts("net.listen", listen_ok[i]));
    for (size_t i = 0; i < sizeof(listen_bad) / sizeof(listen_bad[0]); i++) {
        if (accepts("net.listen", listen_bad[i]))
            fail_msg("net.listen accepted '%s'", listen_bad[i]);
    }
    assert_true(accepts("net.target", "dns:///collector.example:7700"));
    assert_true(accepts("net.target", "dns:collector:7700"));
    assert_true(accepts("net.target", "dns://8.8.8.8:53/collector:7700"));
    assert_false(accepts("net.target", "dns:///nope"));
    assert_false(accepts("net.target", "collector"));
    assert_true(accepts("net.http", ""));
    assert_true(accepts("net.http", ":0"));
    assert_true(accepts("net.http", "localhost:9"));
    assert_false(accepts("net.http", "example.com:80")); /* http.c binds IPv4 addresses only */
    assert_false(accepts("net.http", "[::1]:80"));
    assert_false(accepts("net.http", "127.0.0.1"));
}

static void test_list(void **state)
{
    struct check_config c;
    struct config_result res;
    char *argv[] = {"t", "--box.fruits=apple,kiwi"};

    assert_true(accepts("box.fruits", ""));
    assert_true(accepts("box.fruits", "plum"));
    assert_true(accepts("box.fruits", "apple,pear,plum"));
    assert_false(accepts("box.fruits", "apple,apple"));
    assert_false(accepts("box.fruits", "apple, pear"));
    assert_int_equal(load(&c, &res, 2, argv), -EINVAL);
    assert_non_null(strstr(res.error, "--box.fruits: unknown 'kiwi'"));
    assert_non_null(strstr(res.error, "apple, pear, plum"));
    config_free(&table, &c);
}

/* A bad line is reported with file and line, and loading goes on: every
 * error of the file and the flags, one per line; the table's rule too. */
static void test_every_error_with_file_and_line(void **state)
{
    struct check_config c;
    struct config_result res;
    char want[256];

    write_file("[net]\nlisten = garbage\n[box]\nfruits = kiwi\nlo = 50\nhi = 5\n");
    char *argv[] = {"t", "--config", path, "--net.http=nope", "--log.level=trace"};
    assert_int_equal(load(&c, &res, 5, argv), -EINVAL);
    assert_int_equal(res.nerrors, 5);
    snprintf(want, sizeof(want), "%s:2: net.listen: 'garbage' is not an address", path);
    assert_non_null(strstr(res.error, want));
    snprintf(want, sizeof(want), "\n%s:4: box.fruits: unknown 'kiwi'", path);
    assert_non_null(strstr(res.error, want));
    assert_non_null(strstr(res.error, "\n--net.http: 'nope' is not an IPv4 HOST:PORT"));
    assert_non_null(strstr(res.error, "\n--log.level: 'trace' is not error, warn, info or debug"));
    snprintf(want, sizeof(want), "\n%s:5: box.lo = 50 is above box.hi = 5 (%s:6)", path, path);
    assert_non_null(strstr(res.error, want));
    assert_string_equal(strchr(config_errors_oneline(&res), '\n') ? "newline" : "", "");
    config_free(&table, &c);
}

static void test_meta_flags(void **state)
{
    struct check_config c;
    struct config_result res;
    char *check[] = {"t", "--check-config", "--box.lo=2"};
    char *man[] = {"t", "--man"};

    assert_int_equal(load(&c, &res, 3, check), 0);
    assert_true(res.check);
    assert_int_equal(c.lo, 2);
    config_free(&table, &c);
    assert_int_equal(load(&c, &res, 2, man), 0);
    assert_true(res.man);
    config_free(&table, &c);
    char *bad[] = {"t", "--check-config", "--box.lo=20"};
    assert_int_equal(load(&c, &res, 3, bad), -EINVAL);
    assert_true(res.check);
    assert_string_equal(res.error, "--box.lo: box.lo = 20 is above box.hi = 10 (default)");
    config_free(&table, &c);
}

/* SIGHUP: live keys are copied into the running config, the others are
 * counted as needing a restart; unchanged keys are neither. */
static void test_apply_changes(void **state)
{
    struct check_config run, fresh;
    struct config_result res;
    char *a[] = {"t"};
    char *b[] = {"t", "--box.lo=3", "--box.hi=20", "--net.http=127.0.0.1:1", "--log.level=debug"};

    assert_int_equal(load(&run, &res, 1, a), 0);
    assert_int_equal(load(&fresh, &res, 5, b), 0);
    assert_int_equal(config_apply_changes(&table, &run, &fresh), 1); /* box.hi */
    assert_int_equal(run.lo, 3);
    assert_int_equal(run.hi, 10);
    assert_string_equal(run.http, "127.0.0.1:1");
    assert_string_equal(fresh.http, "127.0.0.1:0"); /* swapped: freed with fresh */
    assert_int_equal(run.level, LOG_LEVEL_DEBUG);
    config_free(&table, &fresh);
    assert_int_equal(load(&fresh, &res, 5, b), 0);
    assert_int_equal(config_apply_changes(&table, &run, &fresh), 1); /* box.hi still */
    config_free(&table, &fresh);
    config_free(&table, &run);
}

static char *man_page(const struct config_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    config_man(t, f);
    fclose(f);
    return buf;
}

static void test_man_page(void **state)
{
    char *m = man_page(&table);

    assert_true(strncmp(m, ".TH \"CHECKER\" \"1\" ", 18) == 0);
    assert_non_null(strstr(m, ".SH COMMANDS\n.TP\n\\fBeat\\fR \\-\\-box.fruits F\neat the fruit"));
    assert_non_null(strstr(m, "\\fB\\-weird.name\\fR"));
    assert_non_null(strstr(m, ".SS [box]\n.TP\n\\fB\\-\\-box.fruits\\fR"));
    assert_non_null(strstr(m, "\\fB\\-\\-log.level\\fR \\fIerror|warn|info|debug\\fR"));
    assert_non_null(strstr(m, "\\-\\-check\\-config"));
    assert_non_null(strstr(m, "A reload (SIGHUP) applies it."));
    assert_non_null(strstr(m, ".SH FILES\n.TP\n\\fI/etc/argus/checker.conf\\fR"));
    for (char *line = m; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (*line == '.' && line[1] != 'T' && line[1] != 'S' && line[1] != 'B' && line[1] != 'P' &&
            line[1] != 'n' && line[1] != 'f')
            fail_msg("a line that roff takes for an unknown request: %.40s", line);
    free(m);
    m = man_page(&agent_config_table);
    assert_true(strncmp(m, ".TH \"ARGUS-AGENT\" \"8\" ", 22) == 0);
    assert_non_null(strstr(m, "\\-\\-probes.enable"));
    free(m);
}

static void test_daemon_defaults_pass(void **state)
{
    struct agent_config a = {0};
    struct collector_config c = {0};
    struct config_result res;
    /* every default is valid once the TLS choice is made; without it both
     * daemons refuse to start, and so does the check */
    char *argv[] = {"t", "--config", "/dev/null", "--grpc.plaintext=true"};

    assert_int_equal(config_load(&agent_config_table, &a, 4, argv, &res), 0);
    config_free(&agent_config_table, &a);
    assert_int_equal(config_load(&collector_config_table, &c, 4, argv, &res), 0);
    config_free(&collector_config_table, &c);
    memset(&a, 0, sizeof(a));
    assert_int_equal(config_load(&agent_config_table, &a, 3, argv, &res), -EINVAL);
    assert_non_null(strstr(res.error, "no TLS configured"));
    config_free(&agent_config_table, &a);
    memset(&c, 0, sizeof(c));
    assert_int_equal(config_load(&collector_config_table, &c, 3, argv, &res), -EINVAL);
    assert_non_null(strstr(res.error, "no TLS configured"));
    config_free(&collector_config_table, &c);
}

/* Every alert sink of the table has its targets key alerts.NAME (the
 * collector hands each sink that key's value: a sink without one would
 * never be configured), and a key that is no option has no value. */
static void test_every_sink_has_a_key(void **state)
{
    struct collector_config c = {0};
    struct config_result res;
    char *argv[] = {"t", "--config", "/dev/null", "--grpc.plaintext=true",
                    "--alerts.exec=/bin/true"};
    char key[64];

    assert_int_equal(config_load(&collector_config_table, &c, 5, argv, &res), 0);
    assert_true(alert_sinks_count >= 3);
    for (size_t i = 0; i < alert_sinks_count; i++) {
        snprintf(key, sizeof(key), "alerts.%s", alert_sinks[i]->name);
        assert_non_null(collector_config_string(&c, key));
    }
    assert_string_equal(collector_config_string(&c, "alerts.exec"), "/bin/true");
    assert_null(collector_config_string(&c, "alerts.pager"));
    config_free(&collector_config_table, &c);
}

/* The error for argv on table t (as the daemons load it), or "". */
static const char *daemon_error(const struct config_table *t, size_t size, int argc, char **argv,
                                struct config_result *res)
{
    void *cfg = calloc(1, size);
    int r = config_load(t, cfg, argc, argv, res);

    config_free(t, cfg);
    free(cfg);
    return r == 0 ? "" : res->error;
}

static void test_daemons_refuse_what_they_adjusted(void **state)
{
    static const char *const agent_cases[][2] = {
        {"--probes.enable=sched,bogus", "probes.enable: unknown 'bogus'"},
        {"--cupti.sample_mode=bogus", "'bogus' is not always, steps or time"},
        {"--log.level=trace", "'trace' is not error, warn, info or debug"},
        {"--spool.segment=512MiB", "spool.segment = 536870912 bytes is above spool.cap / 4"},
        {"--collector.backoff_min=20s", "collector.backoff_min = 20000ms is above"},
        {"--cupti.sample_n=4", "would be ignored under cupti.sample_mode = always"},
        {"--replay.world=2", "replay.world = 2 is below replay.rank_base + replay.ranks = 3"},
        {"--collector.address=garbage", "collector.address: 'garbage' is not an address"},
        {"--http.listen=nope", "http.listen: 'nope' is not an IPv4 HOST:PORT"},
        {"--discovery.deny=python,a_name_of_sixteen", "discovery.deny: at most 32 names"},
        {"--discovery.watch=a_name_of_sixteen", "discovery.watch: at most 32 names"},
        {"--discovery.job_vars=A,B,C,D,E,F,G,H,I", "discovery.job_vars: at most 8 variable"},
    };
    static const char *const collector_cases[][2] = {
        {"--diag.min_hits=50", "diag.min_hits = 50 is above diag.window = 40"},
        {"--grpc.listen=garbage", "grpc.listen: 'garbage' is not an address to listen on"},
        {"--ingest.max_frame=64MiB", "ingest.max_frame = 67108864 bytes is above ingest.max_raw"},
    };
    struct config_result res;

    for (size_t i = 0; i < sizeof(agent_cases) / sizeof(agent_cases[0]); i++) {
        char *argv[] = {"t",
                        "--config",
                        "/dev/null",
                        (char *)agent_cases[i][0],
                        "--replay.rank_base=1",
                        "--replay.ranks=2"};
        const char *e = daemon_error(&agent_config_table, sizeof(struct agent_config),
                                     strstr(agent_cases[i][0], "replay") ? 6 : 4, argv, &res);
        if (!strstr(e, agent_cases[i][1]))
            fail_msg("%s: got '%s'", agent_cases[i][0], e);
    }
    for (size_t i = 0; i < sizeof(collector_cases) / sizeof(collector_cases[0]); i++) {
        char *argv[] = {"t", "--config", "/dev/null", (char *)collector_cases[i][0]};
        const char *e =
            daemon_error(&collector_config_table, sizeof(struct collector_config), 4, argv, &res);
        if (!strstr(e, collector_cases[i][1]))
            fail_msg("%s: got '%s'", collector_cases[i][0], e);
    }
    char *ok[] = {"t",
                  "--config",
                  "/dev/null",
                  "--cupti.sample_mode=steps",
                  "--cupti.sample_k=1",
                  "--cupti.sample_n=4",
                  "--probes.enable=sched,net",
                  "--grpc.plaintext=true"};
    assert_string_equal(daemon_error(&agent_config_table, sizeof(struct agent_config), 8, ok, &res),
                        "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_list),
        cmocka_unit_test_teardown(test_every_error_with_file_and_line, teardown),
        cmocka_unit_test(test_meta_flags),
        cmocka_unit_test(test_apply_changes),
        cmocka_unit_test(test_man_page),
        cmocka_unit_test(test_daemon_defaults_pass),
        cmocka_unit_test(test_every_sink_has_a_key),
        cmocka_unit_test(test_daemons_refuse_what_they_adjusted),
    };
    log_set_level(LOG_LEVEL_ERROR);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
