/* Per-peer open call accounting (collector/transport/transport_peers.c):
 * peer keys without the port, the cap, and entries freed when their last
 * call leaves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>

#include <cmocka.h>

#include "collector/transport/transport_peers.h"

static void test_keys(void **state)
{
    char key[TRANSPORT_PEER_KEY];

    transport_peers_key("ipv4:10.0.0.7:51234", key);
    assert_string_equal(key, "ipv4:10.0.0.7");
    transport_peers_key("ipv6:[::1]:40000", key);
    assert_string_equal(key, "ipv6:[::1]");
    transport_peers_key("unix:/run/argus.sock", key);
    assert_string_equal(key, "unix:/run/argus.sock");
    transport_peers_key("ipv4:10.0.0.7:1", key);
    char other[TRANSPORT_PEER_KEY];
    transport_peers_key("ipv4:10.0.0.7:2", other);
    assert_string_equal(key, other); /* one host, whatever its ports */
}

static void test_cap(void **state)
{
    struct transport_peers *p = transport_peers_new(3);

    for (int i = 1; i <= 3; i++)
        assert_int_equal(transport_peers_enter(p, "ipv4:10.0.0.7"), i);
    assert_int_equal(transport_peers_enter(p, "ipv4:10.0.0.7"), -EBUSY);
    assert_int_equal(transport_peers_enter(p, "ipv4:10.0.0.8"), 1); /* another host */
    assert_int_equal(transport_peers_count(p), 2);
    transport_peers_leave(p, "ipv4:10.0.0.7");
    assert_int_equal(transport_peers_enter(p, "ipv4:10.0.0.7"), 3);
    for (int i = 0; i < 3; i++)
        transport_peers_leave(p, "ipv4:10.0.0.7");
    transport_peers_leave(p, "ipv4:10.0.0.8");
    assert_int_equal(transport_peers_count(p), 0);
    transport_peers_leave(p, "ipv4:10.0.0.9"); /* never entered: nothing happens */
    transport_peers_free(p);
}

static void test_no_cap(void **state)
{
    struct transport_peers *p = transport_peers_new(0);

    for (int i = 1; i <= 10000; i++)
        assert_int_equal(transport_peers_enter(p, "unix"), i);
    transport_peers_free(p); /* frees what is still entered */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_no_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
