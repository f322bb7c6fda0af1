/* common/collector_set: static lists (order and duplicates do not matter,
 * bad items named), the self match, placement over member names, DNS
 * resolution named by reverse names, and the watch's generations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <errno.h>

#include <cmocka.h>

#include "common/collector_set.h"
#include "common/config.h"
#include "common/placement.h"

static void test_parse(void **state)
{
    struct collector_set a, b;
    char err[256];

    (void)state;
    assert_int_equal(
        collector_set_parse("10.0.0.2:7700, 10.0.0.1:7700 10.0.0.3:7700", &a, err, sizeof(err)), 0);
    assert_int_equal(a.n, 3);
    assert_string_equal(a.member[0].name, "10.0.0.1:7700");
    assert_string_equal(a.member[0].address, "10.0.0.1:7700");
    assert_int_equal(collector_set_parse("10.0.0.3:7700,10.0.0.1:7700,10.0.0.2:7700,10.0.0.1:7700",
                                         &b, err, sizeof(err)),
                     0);
    assert_true(collector_set_equal(&a, &b));
    assert_int_equal(collector_set_find(&a, "10.0.0.3:7700"), 2);
    assert_int_equal(collector_set_find(&a, "10.0.0.4:7700"), -1);

    assert_int_equal(collector_set_parse("10.0.0.1:7700,nope", &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "'nope'"));
    assert_int_equal(collector_set_parse(" , ", &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(collector_set_parse("h:70000", &a, err, sizeof(err)), -EINVAL);
}

static void test_self(void **state)
{
    struct collector_set s = {.n = 2};

    (void)state;
    snprintf(s.member[0].name, sizeof(s.member[0].name), "argus-collector-0.argus.ns.svc:7700");
    snprintf(s.member[0].address, sizeof(s.member[0].address), "10.1.0.5:7700");
    snprintf(s.member[1].name, sizeof(s.member[1].name), "argus-collector-1.argus.ns.svc:7700");
    snprintf(s.member[1].address, sizeof(s.member[1].address), "10.1.0.6:7700");
    assert_int_equal(collector_set_find_self(&s, "argus-collector-1"), 1);
    assert_int_equal(collector_set_find_self(&s, "10.1.0.5:7700"), 0);
    assert_int_equal(collector_set_find_self(&s, "argus-collector"), -1);
    assert_int_equal(collector_set_find_self(&s, ""), -1);
}

/* Placement is placement_pick over the names: the same job, the same pair,
 * whatever order the list came in. */
static void test_place(void **state)
{
    struct collector_set a, b;
    const char *names[3];
    size_t p[2], q[2], r[2];
    char err[256];

    (void)state;
    assert_int_equal(
        collector_set_parse("127.0.0.1:7711,127.0.0.1:7712,127.0.0.1:7713", &a, err, sizeof(err)),
        0);
    assert_int_equal(
        collector_set_parse("127.0.0.1:7713 127.0.0.1:7711 127.0.0.1:7712", &b, err, sizeof(err)),
        0);
    for (int j = 0; j < 50; j++) {
        char job[32];
        snprintf(job, sizeof(job), "job-%d", j);
        assert_int_equal(collector_set_place(&a, job, p), 2);
        assert_int_equal(collector_set_place(&b, job, q), 2);
        assert_string_equal(a.member[p[0]].name, b.member[q[0]].name);
        assert_string_equal(a.member[p[1]].name, b.member[q[1]].name);
        for (size_t i = 0; i < 3; i++)
            names[i] = a.member[i].name;
        assert_int_equal(placement_pick(job, names, 3, r, 2), 2);
        assert_int_equal(r[0], p[0]);
        assert_int_equal(r[1], p[1]);
    }
    a.n = 1;
    assert_int_equal(collector_set_place(&a, "job-1", p), 1);
    a.n = 0;
    assert_int_equal(collector_set_place(&a, "job-1", p), 0);
}

/* localhost is in every /etc/hosts: it resolves, and its members are named
 * by their reverse name with the port. */
static void test_resolve(void **state)
{
    struct collector_set s;
    char err[256];

    (void)state;
    assert_int_equal(collector_set_resolve("localhost:7700", &s, err, sizeof(err)), 0);
    assert_true(s.n >= 1);
    assert_int_equal(collector_set_find(&s, "localhost:7700") >= 0 ||
                         collector_set_find(&s, "127.0.0.1:7700") >= 0,
                     1);
    assert_int_equal(collector_set_resolve("no-such-host.invalid:7700", &s, err, sizeof(err)) < 0,
                     1);
    assert_int_equal(s.n, 0);
    assert_int_equal(collector_set_resolve("localhost", &s, err, sizeof(err)), -EINVAL);
    assert_int_equal(collector_set_check_dns("[::1]:7700", err, sizeof(err)), -EINVAL);
    assert_int_equal(collector_set_check_dns("argus-collector.ns.svc:7700", err, sizeof(err)), 0);
}

/* The config checks the three programs share: "" passes, a bad item is
 * named after the key. */
static void test_check_options(void **state)
{
    struct config_option o = {.key = "collector.set"};
    const char *ok = "127.0.0.1:7711,127.0.0.1:7712", *bad = "127.0.0.1:7711,nope", *none = "";
    char err[256];

    (void)state;
    assert_int_equal(collector_set_check_list_option(&o, &ok, err, sizeof(err)), 0);
    assert_int_equal(collector_set_check_list_option(&o, &none, err, sizeof(err)), 0);
    assert_int_equal(collector_set_check_list_option(&o, &bad, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "collector.set: collector 'nope'"));
    o.key = "collector.dns";
    const char *dns = "argus.ns.svc:7700", *baddns = "argus.ns.svc";
    assert_int_equal(collector_set_check_dns_option(&o, &dns, err, sizeof(err)), 0);
    assert_int_equal(collector_set_check_dns_option(&o, &baddns, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "collector.dns: 'argus.ns.svc'"));
}

static void test_watch(void **state)
{
    struct collector_set_watch *w;
    struct collector_set s;
    char err[256];

    (void)state;
    assert_int_equal(collector_set_watch_new(&(struct collector_set_spec){.list = "a:1,b:2"}, &w,
                                             err, sizeof(err)),
                     0);
    assert_int_equal(collector_set_watch_get(w, &s), 1);
    assert_int_equal(s.n, 2);
    collector_set_watch_free(w);

    assert_int_equal(
        collector_set_watch_new(&(struct collector_set_spec){.list = "a:1", .dns = "localhost:1"},
                                &w, err, sizeof(err)),
        -EINVAL);
    assert_non_null(strstr(err, "both"));
    assert_int_equal(collector_set_watch_new(&(struct collector_set_spec){0}, &w, err, sizeof(err)),
                     -EINVAL);

    assert_int_equal(collector_set_watch_new(&(struct collector_set_spec){.dns = "localhost:7700",
                                                                          .interval_ns = 10000000},
                                             &w, err, sizeof(err)),
                     0);
    assert_int_equal(collector_set_watch_generation(w), 1); /* resolved before returning */
    assert_int_equal(collector_set_watch_get(w, &s), 1);
    assert_true(s.n >= 1);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL); /* several re-resolutions of the same set */
    assert_int_equal(collector_set_watch_generation(w), 1);
    collector_set_watch_error(w, err, sizeof(err));
    assert_string_equal(err, "");
    collector_set_watch_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),         cmocka_unit_test(test_self),
        cmocka_unit_test(test_place),         cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_check_options), cmocka_unit_test(test_watch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
