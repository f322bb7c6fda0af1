/* common/procstat: the start time field of /proc/PID/stat past a command
 * with spaces and parentheses; this process's numbers are sane; the
 * exposition has every process_* metric and argus_build_info. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/http.h"
#include "common/procstat.h"

static void test_parse(void **state)
{
    uint64_t ticks = 0;
    const char *line = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 "
                       "987654 1000 200 18446744073709551615\n";

    assert_int_equal(procstat_parse_start_ticks(line, &ticks), 0);
    assert_int_equal(ticks, 987654);
    assert_int_equal(procstat_parse_start_ticks("1234 (x) S 1 2", &ticks), -EINVAL);
    assert_int_equal(procstat_parse_start_ticks("no command", &ticks), -EINVAL);
}

static void test_read(void **state)
{
    struct procstat p;
    double now = (double)time(NULL);

    assert_int_equal(procstat_read(&p), 0);
    assert_true(p.resident_bytes > 0 && p.resident_bytes <= p.virtual_bytes);
    assert_true(p.open_fds >= 3 && p.open_fds < p.max_fds); /* stdin, stdout, stderr */
    assert_true(p.start_time_seconds > now - 600 && p.start_time_seconds <= now + 1);
    assert_true(p.cpu_seconds >= 0);
}

static void test_metrics(void **state)
{
    struct http_buf b = {0};
    const char *names[] = {"process_cpu_seconds_total ",
                           "process_resident_memory_bytes ",
                           "process_virtual_memory_bytes ",
                           "process_open_fds ",
                           "process_max_fds ",
                           "process_start_time_seconds "};

    procstat_metrics(&b, "argus-test");
    assert_false(b.failed);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_non_null(strstr(b.data, names[i]));
    assert_non_null(strstr(b.data, "argus_build_info{program=\"argus-test\",version=\""));
    assert_non_null(strstr(b.data, "\",commit=\""));
    assert_true(strlen(procstat_commit()) > 0 && strlen(procstat_version()) > 0);
    free(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
