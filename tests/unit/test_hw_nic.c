/* The NIC error counters (agent/hw/nic.c) on a fake sysfs tree made in
 * /tmp: growth summed over interfaces and an IB port, lo ignored, a counter
 * reset, an interface's first sighting, removal and recreation, the
 * carrier_changes fallback, an explicit list, a bad list, no sysfs. The
 * root qdiscs (rtnetlink) are read only under the real /sys: see
 * tests/integration/hw_nic_netns.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/hw/nic.h"

struct fake {
    char root[64];
};

static void fake_mkdirs(char *path)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
}

/* Writes value into ROOT/rel (its directories made). */
static void fake_put(struct fake *f, const char *rel, uint64_t value)
{
    char path[512];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/%s", f->root, rel);
    fake_mkdirs(path);
    assert_non_null(fp = fopen(path, "w"));
    fprintf(fp, "%" PRIu64 "\n", value);
    assert_int_equal(fclose(fp), 0);
}

/* Sets counter file (e.g. "statistics/rx_errors") of interface name. */
static void net_set(struct fake *f, const char *name, const char *file, uint64_t value)
{
    char rel[256];

    snprintf(rel, sizeof(rel), "class/net/%s/%s", name, file);
    fake_put(f, rel, value);
}

/* An interface with ifindex and every counter at base. */
static void net_add(struct fake *f, const char *name, int ifindex, uint64_t base)
{
    static const char *const files[] = {"statistics/rx_errors", "statistics/tx_errors",
                                        "statistics/rx_dropped", "statistics/tx_dropped",
                                        "carrier_down_count"};

    net_set(f, name, "ifindex", (uint64_t)ifindex);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        net_set(f, name, files[i], base);
}

/* Sets counter file (e.g. "symbol_error") of IB port dev/port. */
static void ib_set(struct fake *f, const char *dev, int port, const char *file, uint64_t value)
{
    char rel[256];

    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/counters/%s", dev, port, file);
    fake_put(f, rel, value);
}

static void ib_add(struct fake *f, const char *dev, int port, uint64_t base)
{
    ib_set(f, dev, port, "symbol_error", base);
    ib_set(f, dev, port, "port_rcv_errors", base);
    ib_set(f, dev, port, "port_xmit_discards", base);
    ib_set(f, dev, port, "link_downed", base);
}

static int fake_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void fake_rm(struct fake *f, const char *rel)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", f->root, rel);
    nftw(path, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int fake_setup(void **state)
{
    struct fake *f = calloc(1, sizeof(*f));

    snprintf(f->root, sizeof(f->root), "/tmp/argus-nic.XXXXXX");
    assert_non_null(mkdtemp(f->root));
    net_add(f, "lo", 1, 500);
    *state = f;
    return 0;
}

static int fake_teardown(void **state)
{
    struct fake *f = *state;

    fake_rm(f, "");
    free(f);
    return 0;
}

static struct nic *fake_nic(struct fake *f, const char *list)
{
    char why[128];
    struct nic *n = nic_new(f->root, list, why, sizeof(why));

    assert_non_null(n);
    return n;
}

/* nic_sample, which must succeed, and checks the totals. */
static void expect(struct nic *n, uint64_t errors, uint64_t drops, uint64_t link_downs,
                   uint32_t nics)
{
    struct nic_totals t = {0};

    assert_int_equal(nic_sample(n, &t), 0);
    assert_int_equal(t.errors, errors);
    assert_int_equal(t.drops, drops);
    assert_int_equal(t.link_downs, link_downs);
    assert_int_equal(t.nics, nics);
}

static void test_growth_summed(void **state)
{
    struct fake *f = *state;
    struct nic *n;

    net_add(f, "eth0", 2, 10);
    net_add(f, "eth1", 3, 20);
    ib_add(f, "mlx5_0", 1, 30);
    n = fake_nic(f, NULL);
    expect(n, 0, 0, 0, 3); /* first sightings: nothing */

    net_set(f, "eth0", "statistics/rx_errors", 12);
    net_set(f, "eth0", "statistics/tx_errors", 11);
    net_set(f, "eth0", "carrier_down_count", 11);
    net_set(f, "eth1", "statistics/rx_dropped", 25);
    net_set(f, "eth1", "statistics/tx_dropped", 21);
    ib_set(f, "mlx5_0", 1, "symbol_error", 33);
    ib_set(f, "mlx5_0", 1, "port_rcv_errors", 31);
    ib_set(f, "mlx5_0", 1, "port_xmit_discards", 34);
    ib_set(f, "mlx5_0", 1, "link_downed", 32);
    net_set(f, "lo", "statistics/rx_errors", 600); /* lo is not watched */
    expect(n, 2 + 1 + 3 + 1, 5 + 1 + 4, 1 + 2, 3);
    expect(n, 7, 10, 3, 3); /* no growth, no change */

    net_set(f, "eth0", "statistics/rx_errors", 13);
    expect(n, 8, 10, 3, 3);
    nic_free(n);
}

static void test_reset_adds_nothing(void **state)
{
    struct fake *f = *state;
    struct nic *n;

    net_add(f, "eth0", 2, 100);
    ib_add(f, "mlx5_0", 1, 100);
    n = fake_nic(f, NULL);
    expect(n, 0, 0, 0, 2);
    net_set(f, "eth0", "statistics/rx_errors", 50); /* went down: a reset */
    ib_set(f, "mlx5_0", 1, "link_downed", 0);
    expect(n, 0, 0, 0, 2);
    net_set(f, "eth0", "statistics/rx_errors", 53); /* growth from the reset value */
    ib_set(f, "mlx5_0", 1, "link_downed", 1);
    expect(n, 3, 0, 1, 2);
    nic_free(n);
}

static void test_new_interface(void **state)
{
    struct fake *f = *state;
    struct nic *n;

    net_add(f, "eth0", 2, 0);
    n = fake_nic(f, "");
    expect(n, 0, 0, 0, 1);
    net_add(f, "eth1", 3, 1000); /* its first sighting adds nothing */
    ib_add(f, "mlx5_1", 2, 1000);
    expect(n, 0, 0, 0, 3);
    net_set(f, "eth1", "statistics/tx_dropped", 1004);
    ib_set(f, "mlx5_1", 2, "port_rcv_errors", 1002);
    expect(n, 2, 4, 0, 3);
    nic_free(n);
}

static void test_removed_interface(void **state)
{
    struct fake *f = *state;
    struct nic *n;

    net_add(f, "eth0", 2, 0);
    net_add(f, "eth1", 3, 10);
    n = fake_nic(f, NULL);
    expect(n, 0, 0, 0, 2);
    fake_rm(f, "class/net/eth1");
    expect(n, 0, 0, 0, 1);
    net_add(f, "eth1", 3, 40); /* back with higher counters: a first sighting */
    expect(n, 0, 0, 0, 2);
    net_set(f, "eth1", "statistics/rx_errors", 41);
    expect(n, 1, 0, 0, 2);

    /* recreated between two calls (a new ifindex), counters higher */
    net_add(f, "eth1", 7, 90);
    expect(n, 1, 0, 0, 2);
    net_set(f, "eth1", "statistics/rx_dropped", 95);
    expect(n, 1, 5, 0, 2);
    nic_free(n);
}

static void test_carrier_changes_fallback(void **state)
{
    struct fake *f = *state;
    struct nic *n;

    net_add(f, "eth0", 2, 0);
    fake_rm(f, "class/net/eth0/carrier_down_count"); /* a kernel before 4.16 */
    net_set(f, "eth0", "carrier_changes", 3);
    n = fake_nic(f, NULL);
    expect(n, 0, 0, 0, 1);
    net_set(f, "eth0", "carrier_changes", 7); /* 3 down, 2 more losses */
    expect(n, 0, 0, 2, 1);
    net_set(f, "eth0", "carrier_changes", 8);
    expect(n, 0, 0, 3, 1);
    nic_free(n);
}

static void test_explicit_list(void **state)
{
    struct fake *f = *state;
    struct nic *n;

    net_add(f, "eth0", 2, 0);
    net_add(f, "eth1", 3, 0);
    ib_add(f, "mlx5_0", 1, 0);
    ib_add(f, "mlx5_0", 2, 0);
    n = fake_nic(f, "eth1, mlx5_0/2,eth9,lo");
    expect(n, 0, 0, 0, 3);                           /* eth9 is not there yet */
    net_set(f, "eth0", "statistics/rx_errors", 5);   /* not listed */
    ib_set(f, "mlx5_0", 1, "symbol_error", 5);       /* not listed */
    net_set(f, "eth1", "statistics/rx_errors", 2);   /* listed */
    ib_set(f, "mlx5_0", 2, "port_xmit_discards", 3); /* listed */
    net_set(f, "lo", "statistics/rx_dropped", 504);  /* listed by name */
    expect(n, 2, 3 + 4, 0, 3);
    net_add(f, "eth9", 9, 70); /* appears: watched from now */
    expect(n, 2, 7, 0, 4);
    net_set(f, "eth9", "carrier_down_count", 71);
    expect(n, 2, 7, 1, 4);
    nic_free(n);
}

static void test_bad_list(void **state)
{
    static const char *const bad[] = {"eth0,,eth1", "eth0,", ",",  "a_very_long_name0",
                                      "mlx5_0/",    "/1",    "..", "mlx5_0/1/2",
                                      "mlx5_0/.."};
    char why[128];
    struct nic *n;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        n = nic_new("/nonexistent", bad[i], why, sizeof(why));
        if (n)
            fail_msg("list '%s' accepted", bad[i]);
        if (!why[0])
            fail_msg("list '%s' refused without why", bad[i]);
    }
    assert_null(nic_new("/nonexistent", "eth0,,eth1", why, sizeof(why)));
    assert_non_null(strstr(why, "empty"));
    assert_null(nic_new("/nonexistent", "a_very_long_name0", why, sizeof(why)));
    assert_non_null(strstr(why, "too long"));
    n = nic_new("/nonexistent", "", NULL, 0); /* every interface */
    assert_non_null(n);
    nic_free(n);
    n = nic_new("/nonexistent", "eth0,mlx5_0/1,ib0", why, sizeof(why));
    assert_non_null(n);
    nic_free(n);
}

static void test_no_sysfs(void **state)
{
    struct nic_totals t = {.errors = 42};
    struct nic *n = nic_new("/nonexistent", NULL, NULL, 0);

    assert_non_null(n);
    assert_int_equal(nic_sample(n, &t), -ENOENT);
    assert_int_equal(t.errors, 42); /* kept */
    nic_free(n);
    n = nic_new("/nonexistent", "eth0", NULL, 0);
    assert_non_null(n);
    assert_int_equal(nic_sample(n, &t), -ENOENT);
    nic_free(n);
    nic_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_growth_summed, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_reset_adds_nothing, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_new_interface, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_removed_interface, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_carrier_changes_fallback, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_explicit_list, fake_setup, fake_teardown),
        cmocka_unit_test(test_bad_list),
        cmocka_unit_test(test_no_sysfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
