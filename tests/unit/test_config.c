/* The declarative config table: file parsing, errors with file and line, CLI
 * overrides, bounds, and --print-config output that loads back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/config_value.h"
#include "common/log.h"

struct test_config {
    char *name;
    bool verbose;
    int64_t offset;
    int color; /* enum test_color */
    uint64_t workers;
    double ratio;
    uint64_t timeout;
    uint64_t cap;
};

enum test_color { COLOR_RED = 1, COLOR_GREEN = 2, COLOR_BLUE = 7 };

static const struct config_name colors[] = {
    {"red", COLOR_RED},
    {"green", COLOR_GREEN},
    {"blue", COLOR_BLUE},
    {NULL, 0},
};

static const struct config_option options[] = {
    {"main.name", CONFIG_STRING, offsetof(struct test_config, name), "argus", 0, 0, "a name", NULL,
     NULL, false},
    {"main.verbose", CONFIG_BOOL, offsetof(struct test_config, verbose), "false", 0, 0, "chatty",
     NULL, NULL, false},
    {"main.offset", CONFIG_INT, offsetof(struct test_config, offset), "-5", -100, 100, "signed",
     NULL, NULL, false},
    {"main.color", CONFIG_ENUM, offsetof(struct test_config, color), "green", 0, 0, "a color",
     colors, NULL, false},
    {"pool.workers", CONFIG_UINT, offsetof(struct test_config, workers), "4", 1, 64, "threads",
     NULL, NULL, false},
    {"pool.ratio", CONFIG_DOUBLE, offsetof(struct test_config, ratio), "0.5", 0, 1, "a fraction",
     NULL, NULL, false},
    {"pool.timeout", CONFIG_DURATION, offsetof(struct test_config, timeout), "5s", 0, 3600,
     "how long", NULL, NULL, false},
    {"spool.cap", CONFIG_SIZE, offsetof(struct test_config, cap), "1GiB", 0, 0, "how much", NULL,
     NULL, false},
};

static const struct config_table table = {
    .program = "test",
    .summary = "config test",
    .options = options,
    .count = sizeof(options) / sizeof(options[0]),
};

static char path[64];

static int write_file(const char *text)
{
    strcpy(path, "/tmp/argus-test-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    if (path[0])
        unlink(path);
    path[0] = '\0';
    return 0;
}

static int load(struct test_config *c, struct config_result *res, int argc, char **argv)
{
    memset(c, 0, sizeof(*c));
    return config_load(&table, c, argc, argv, res);
}

static void test_defaults(void **state)
{
    struct test_config c;
    struct config_result res;
    char *argv[] = {"test"};

    assert_int_equal(load(&c, &res, 1, argv), 0);
    assert_string_equal(c.name, "argus");
    assert_false(c.verbose);
    assert_int_equal(c.offset, -5);
    assert_int_equal(c.workers, 4);
    assert_int_equal(c.timeout, 5000000000ull);
    assert_int_equal(c.cap, 1ull << 30);
    config_free(&table, &c);
}

static void test_good_file(void **state)
{
    struct test_config c;
    struct config_result res;
    write_file("# comment\n[main]\nname = \"node 7\"\nverbose = yes\n\n[pool]\n"
               "workers = 16\nratio=0.25\ntimeout = 250ms\n[spool]\ncap = 64MiB\n");
    char *argv[] = {"test", "--config", path};

    assert_int_equal(load(&c, &res, 3, argv), 0);
    assert_string_equal(res.path, path);
    assert_string_equal(c.name, "node 7");
    assert_true(c.verbose);
    assert_int_equal(c.workers, 16);
    assert_true(c.ratio == 0.25);
    assert_int_equal(c.timeout, 250000000ull);
    assert_int_equal(c.cap, 64ull << 20);
    config_free(&table, &c);
}

static void test_unknown_key_names_file_and_line(void **state)
{
    struct test_config c;
    struct config_result res;
    char expect[128];
    write_file("[main]\nname = a\n[pool]\nwrokers = 3\n");
    char *argv[] = {"test", "--config", path};

    assert_int_equal(load(&c, &res, 3, argv), -EINVAL);
    snprintf(expect, sizeof(expect), "%s:4: unknown key 'pool.wrokers'", path);
    assert_string_equal(res.error, expect);
    config_free(&table, &c);
}

static void test_bad_values(void **state)
{
    static const char *const files[] = {
        "[pool]\nworkers = lots\n",     "[pool]\nworkers = 0\n",  "[pool]\nworkers = -3\n",
        "[pool]\ntimeout = 5\n",        "[pool]\ntimeout = 2h\n", "[spool]\ncap = 12 parsecs\n",
        "[main]\nverbose = maybe\n",    "[main]\noffset = 1e3\n", "[pool]\nratio = 2\n",
        "[main]\nname = a\nname = b\n", "[main\nname = a\n",      "just some words\n",
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct test_config c;
        struct config_result res;
        write_file(files[i]);
        char *argv[] = {"test", "--config", path};
        assert_int_equal(load(&c, &res, 3, argv), -EINVAL);
        /* every error names the file and a line */
        assert_non_null(strstr(res.error, path));
        assert_non_null(strchr(res.error + strlen(path), ':'));
        config_free(&table, &c);
        teardown(NULL);
    }
}

static void test_bad_value_message(void **state)
{
    struct test_config c;
    struct config_result res;
    char expect[200];
    write_file("[pool]\nworkers = 99\n");
    char *argv[] = {"test", "--config", path};

    assert_int_equal(load(&c, &res, 3, argv), -EINVAL);
    snprintf(expect, sizeof(expect), "%s:2: pool.workers: 99 is out of range [1, 64]", path);
    assert_string_equal(res.error, expect);
    config_free(&table, &c);
}

static void test_cli_overrides_file(void **state)
{
    struct test_config c;
    struct config_result res;
    write_file("[pool]\nworkers = 16\n[main]\nname = fromfile\n");
    char *argv[] = {"test",        "--pool.workers=8", "--config",      path,
                    "--main.name", "fromflag",         "--main.verbose"};

    assert_int_equal(load(&c, &res, 7, argv), 0);
    assert_int_equal(c.workers, 8);
    assert_string_equal(c.name, "fromflag");
    assert_true(c.verbose);
    config_free(&table, &c);
}

static void test_cli_errors(void **state)
{
    struct test_config c;
    struct config_result res;
    char *unknown[] = {"test", "--pool.wrokers=3"};
    char *bad[] = {"test", "--pool.timeout", "forever"};
    char *missing[] = {"test", "--pool.workers"};
    char *positional[] = {"test", "stray"};
    char *nofile[] = {"test", "--config", "/nonexistent/argus.conf"};

    assert_int_equal(load(&c, &res, 2, unknown), -EINVAL);
    assert_string_equal(res.error, "unknown option '--pool.wrokers' (see --help)");
    config_free(&table, &c);
    assert_int_equal(load(&c, &res, 3, bad), -EINVAL);
    assert_non_null(strstr(res.error, "'forever' is not a duration"));
    config_free(&table, &c);
    assert_int_equal(load(&c, &res, 2, missing), -EINVAL);
    assert_non_null(strstr(res.error, "needs a value"));
    config_free(&table, &c);
    assert_int_equal(load(&c, &res, 2, positional), -EINVAL);
    assert_non_null(strstr(res.error, "unexpected argument 'stray'"));
    config_free(&table, &c);
    assert_true(load(&c, &res, 3, nofile) < 0);
    assert_non_null(strstr(res.error, "/nonexistent/argus.conf"));
    config_free(&table, &c);
}

static void test_print_config_loads_back(void **state)
{
    struct test_config c, back;
    struct config_result res;
    char *argv[] = {"test", "--main.name=x y", "--pool.timeout=90s", "--spool.cap=3MiB",
                    "--pool.ratio=0.125"};
    char buf[4096] = {0};

    assert_int_equal(load(&c, &res, 5, argv), 0);
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
    config_print(&table, &c, f);
    fclose(f);
    write_file(buf);
    char *argv2[] = {"test", "--config", path};
    assert_int_equal(load(&back, &res, 3, argv2), 0);
    assert_string_equal(back.name, "x y");
    assert_int_equal(back.timeout, 90000000000ull);
    assert_int_equal(back.cap, 3ull << 20);
    assert_true(back.ratio == 0.125);
    assert_int_equal(back.workers, c.workers);
    config_free(&table, &c);
    config_free(&table, &back);
}

static void test_help_flag(void **state)
{
    struct test_config c;
    struct config_result res;
    char *argv[] = {"test", "--help"};

    assert_int_equal(load(&c, &res, 2, argv), 0);
    assert_true(res.help);
    config_free(&table, &c);
}

static void test_enum_names(void **state)
{
    struct test_config c;
    struct config_result res;
    char *argv[] = {"test"};
    char *flag[] = {"test", "--config", path, "--main.color", "red"};

    assert_int_equal(load(&c, &res, 1, argv), 0);
    assert_int_equal(c.color, COLOR_GREEN); /* the default, by name */
    config_free(&table, &c);
    write_file("[main]\ncolor = blue\n");
    assert_int_equal(load(&c, &res, 3, flag), 0);
    assert_int_equal(c.color, COLOR_BLUE);
    config_free(&table, &c);
    assert_int_equal(load(&c, &res, 5, flag), 0);
    assert_int_equal(c.color, COLOR_RED); /* the flag wins over the file */
    assert_string_equal(config_enum_name(&table, "main.color", COLOR_BLUE), "blue");
    assert_string_equal(config_enum_name(&table, "main.color", 3), "?");
    assert_string_equal(config_enum_name(&table, "main.name", 0), "?");
    config_free(&table, &c);
}

static void test_enum_unknown_name(void **state)
{
    struct test_config c;
    struct config_result res;
    char expect[200];
    write_file("[main]\nname = x\ncolor = purple\n");
    char *argv[] = {"test", "--config", path};
    char *wrong_case[] = {"test", "--main.color=Red"};

    assert_int_equal(load(&c, &res, 3, argv), -EINVAL);
    snprintf(expect, sizeof(expect), "%s:3: main.color: 'purple' is not red, green or blue", path);
    assert_string_equal(res.error, expect);
    config_free(&table, &c);
    assert_int_equal(load(&c, &res, 2, wrong_case), -EINVAL);
    assert_string_equal(res.error, "--main.color: 'Red' is not red, green or blue");
    config_free(&table, &c);
}

static void test_enum_help_lists_names(void **state)
{
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

    config_usage(&table, f);
    fclose(f);
    assert_non_null(strstr(buf, "--main.color red|green|blue "));
    assert_non_null(strstr(buf, "a color (default: green)"));
}

static void test_enum_print_config_loads_back(void **state)
{
    struct test_config c, back;
    struct config_result res;
    char *argv[] = {"test", "--main.color", "blue"};
    char buf[4096] = {0}, value[32];

    assert_int_equal(load(&c, &res, 3, argv), 0);
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
    config_print(&table, &c, f);
    fclose(f);
    assert_non_null(strstr(buf, "\ncolor = blue\n")); /* the name, unquoted */
    write_file(buf);
    char *argv2[] = {"test", "--config", path};
    assert_int_equal(load(&back, &res, 3, argv2), 0);
    assert_int_equal(back.color, COLOR_BLUE);
    back.color = 3; /* not a listed value: printed as the number */
    assert_string_equal(config_format_value(&options[3], &back, value, sizeof(value)), "3");
    config_free(&table, &c);
    config_free(&table, &back);
}

static void test_log_level_names(void **state)
{
    static const struct {
        const char *name;
        enum log_level level;
    } want[] = {{"error", LOG_LEVEL_ERROR},
                {"warn", LOG_LEVEL_WARN},
                {"info", LOG_LEVEL_INFO},
                {"debug", LOG_LEVEL_DEBUG}};
    size_t n = 0;

    for (; config_log_levels[n].name; n++) {
        assert_true(n < 4);
        assert_string_equal(config_log_levels[n].name, want[n].name);
        assert_int_equal(config_log_levels[n].value, want[n].level);
        assert_string_equal(log_level_name(want[n].level), want[n].name);
    }
    assert_int_equal(n, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_defaults, teardown),
        cmocka_unit_test_teardown(test_good_file, teardown),
        cmocka_unit_test_teardown(test_unknown_key_names_file_and_line, teardown),
        cmocka_unit_test_teardown(test_bad_values, teardown),
        cmocka_unit_test_teardown(test_bad_value_message, teardown),
        cmocka_unit_test_teardown(test_cli_overrides_file, teardown),
        cmocka_unit_test_teardown(test_cli_errors, teardown),
        cmocka_unit_test_teardown(test_print_config_loads_back, teardown),
        cmocka_unit_test_teardown(test_help_flag, teardown),
        cmocka_unit_test_teardown(test_enum_names, teardown),
        cmocka_unit_test_teardown(test_enum_unknown_name, teardown),
        cmocka_unit_test(test_enum_help_lists_names),
        cmocka_unit_test_teardown(test_enum_print_config_loads_back, teardown),
        cmocka_unit_test(test_log_level_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
