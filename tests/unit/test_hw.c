/* agent/hw/hw: the sampler thread and per-rank step deltas, against the NVML
 * test double (build/tests/libnvml-double.so, scripted) and a fake sysfs
 * tree for the NICs: a first step is a baseline; then a throttled GPU's
 * steps carry its reasons, throttled samples, clock, temperature and
 * violation time, a healthy one's its clock and none of that; XIDs and NIC
 * drops as deltas; a rank found by a UUID prefix; a rank with no GPU gets
 * the NICs only; a lost GPU's steps no samples; nothing to read: nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/hw/hw.h"
#include "common/clock.h"

static char lib[512], script[256], root[64];

static void put(const char *path, const char *text)
{
    char tmp[600];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);
}

/* eth0's rx_dropped in the fake tree */
static void drops(uint64_t n)
{
    char path[256], v[32];

    snprintf(path, sizeof(path), "%s/class/net/eth0/statistics/rx_dropped", root);
    snprintf(v, sizeof(v), "%llu\n", (unsigned long long)n);
    put(path, v);
}

static void fake_tree(void)
{
    static const char *const files[] = {"rx_errors", "tx_errors", "rx_dropped", "tx_dropped"};
    char path[256];

    snprintf(root, sizeof(root), "/tmp/argus-hw-XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof(path), "%s/class", root);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/class/net", root);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/class/net/eth0", root);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/class/net/eth0/ifindex", root);
    put(path, "2\n");
    snprintf(path, sizeof(path), "%s/class/net/eth0/carrier_down_count", root);
    put(path, "0\n");
    snprintf(path, sizeof(path), "%s/class/net/eth0/statistics", root);
    mkdir(path, 0755);
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/class/net/eth0/statistics/%s", root, files[i]);
        put(path, "100\n");
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Wait (5 s at most) for n more samples than now: a loaded machine may
 * run the sampler late, never this test's asserts. */
static void more_samples(struct hw *h, uint64_t n)
{
    struct hw_stats st;
    uint64_t want, t0 = clock_mono_ns();

    hw_get_stats(h, &st);
    want = st.samples + n;
    while (st.samples < want && clock_mono_ns() - t0 < 5 * NSEC_PER_SEC) {
        sleep_ms(10);
        hw_get_stats(h, &st);
    }
    assert_true(st.samples >= want);
}

static struct hw *new_hw(bool gpus, const char *library)
{
    char why[256] = "";
    struct hw *h = hw_new(&(struct hw_options){.gpus = gpus,
                                               .nvml_lib = library,
                                               .nics = true,
                                               .sysroot = root,
                                               .interval_ns = 20 * NSEC_PER_MSEC},
                          why, sizeof(why));

    assert_non_null(h);
    assert_int_equal(hw_start(h), 0);
    return h;
}

static int setup(void **state)
{
    const char *b = getenv("ARGUS_BUILD");

    (void)state;
    snprintf(lib, sizeof(lib), "%s/tests/libnvml-double.so", b ? b : "build");
    snprintf(script, sizeof(script), "/tmp/argus-hw-nvml.%d", (int)getpid());
    setenv("ARGUS_NVML_DOUBLE", script, 1);
    put(script, "gpus 2\n"
                "gpu 1 reasons 0x40\ngpu 1 sm_clock 1410\ngpu 1 temperature 91\n"
                "gpu 1 thermal_violation_ms_per_s 800\n");
    fake_tree();
    return access(lib, R_OK) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    unlink(script);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_throttled_and_healthy(void **state)
{
    struct hw *h = new_hw(true, lib);
    Argus__V1__HwCounters hot = ARGUS__V1__HW_COUNTERS__INIT, ok = ARGUS__V1__HW_COUNTERS__INIT;
    struct hw_stats st;

    (void)state;
    hw_track(h, "j", 0, 0, "");
    hw_track(h, "j", 1, 1, "");
    assert_false(hw_step(h, "j", 0, &ok)); /* baselines */
    assert_false(hw_step(h, "j", 1, &hot));
    uint64_t t0 = clock_mono_ns();
    more_samples(h, 4);
    uint64_t elapsed = clock_mono_ns() - t0;
    assert_true(hw_step(h, "j", 1, &hot));
    assert_true(hw_step(h, "j", 0, &ok));
    assert_true(hot.samples >= 4);
    assert_int_equal(hot.throttled_samples, hot.samples);
    assert_int_equal(hot.throttle, 0x40);
    assert_int_equal(hot.sm_clock_mhz, 1410);
    assert_int_equal(hot.temperature_c, 91);
    /* 800 ms a second between the baseline's sample and the last one */
    assert_true(hot.thermal_violation_ns > 0);
    assert_true(hot.thermal_violation_ns <= (elapsed + 50 * NSEC_PER_MSEC) * 8 / 10);
    assert_int_equal(ok.throttle, 0);
    assert_int_equal(ok.throttled_samples, 0);
    assert_int_equal(ok.sm_clock_mhz, 1980);
    assert_int_equal(ok.thermal_violation_ns, 0);
    hw_get_stats(h, &st);
    assert_int_equal(st.gpus, 2);
    assert_int_equal(st.nics, 1);
    assert_true(st.samples >= 4);
    hw_free(h);
}

/* XIDs and NIC drops are deltas; a rank by UUID prefix; a rank with no
 * GPU gets the NICs only; an untracked rank starts with a baseline. */
static void test_deltas_and_matching(void **state)
{
    struct hw *h = new_hw(true, lib);
    Argus__V1__HwCounters a = ARGUS__V1__HW_COUNTERS__INIT, b = ARGUS__V1__HW_COUNTERS__INIT,
                          c = ARGUS__V1__HW_COUNTERS__INIT, d = ARGUS__V1__HW_COUNTERS__INIT;

    (void)state;
    hw_track(h, "j", 7, 5, "GPU-double-1"); /* index 5 does not exist: the uuid wins */
    hw_track(h, "j", 8, -1, NULL);
    assert_false(hw_step(h, "j", 7, &a));
    assert_false(hw_step(h, "j", 8, &b));
    assert_false(hw_step(h, "j", 9, &c)); /* never tracked */
    put(script, "gpus 2\ngpu 1 xids 3 79\n");
    drops(105);
    more_samples(h, 3);
    assert_true(hw_step(h, "j", 7, &a));
    assert_true(hw_step(h, "j", 8, &b));
    assert_true(hw_step(h, "j", 9, &c));
    assert_int_equal(a.xid_errors, 3);
    assert_int_equal(a.xid, 79);
    assert_int_equal(a.nic_drops, 5);
    assert_int_equal(b.nic_drops, 5);
    assert_int_equal(b.samples, 0); /* no GPU */
    assert_int_equal(b.sm_clock_mhz, 0);
    assert_int_equal(c.nic_drops, 5);
    more_samples(h, 2);
    assert_true(hw_step(h, "j", 7, &d)); /* nothing new: no XID, no drop */
    assert_int_equal(d.xid_errors, 0);
    assert_int_equal(d.xid, 0);
    assert_int_equal(d.nic_drops, 0);
    assert_int_equal(d.sm_clock_mhz, 1980);
    hw_track(h, "j", 7, 5, "GPU-double-1"); /* tracked again: a new baseline */
    assert_false(hw_step(h, "j", 7, &d));
    hw_free(h);
}

/* A GPU that is lost: its steps have no samples (no clock, no reasons). */
static void test_lost_gpu(void **state)
{
    struct hw *h;
    Argus__V1__HwCounters a = ARGUS__V1__HW_COUNTERS__INIT;
    struct hw_stats st;

    (void)state;
    put(script, "gpus 2\n");
    h = new_hw(true, lib);
    hw_track(h, "j", 1, 1, "");
    assert_false(hw_step(h, "j", 1, &a));
    put(script, "gpus 2\ngpu 1 lost\n");
    more_samples(h, 3);
    assert_true(hw_step(h, "j", 1, &a));
    assert_int_equal(a.sm_clock_mhz, 0);
    assert_int_equal(a.throttle, 0);
    hw_get_stats(h, &st);
    assert_true(st.gpu_errors >= 1);
    hw_free(h);
}

/* No NVML (a library that is not there) and no NICs: nothing. */
static void test_nothing_to_read(void **state)
{
    char why[256] = "";
    struct hw *h = hw_new(&(struct hw_options){.gpus = true,
                                               .nvml_lib = "/nonexistent/libnvidia-ml.so.1",
                                               .interval_ns = NSEC_PER_SEC},
                          why, sizeof(why));
    Argus__V1__HwCounters a = ARGUS__V1__HW_COUNTERS__INIT;
    struct hw_stats st;

    (void)state;
    assert_non_null(h);
    assert_int_equal(hw_start(h), 0);
    hw_track(h, "j", 0, 0, "");
    assert_false(hw_step(h, "j", 0, &a));
    assert_false(hw_step(h, "j", 0, &a));
    hw_get_stats(h, &st);
    assert_int_equal(st.gpus, 0);
    assert_int_equal(st.samples, 0);
    hw_free(h);
    assert_null(hw_new(&(struct hw_options){.interval_ns = 1000}, why, sizeof(why)));
    assert_non_null(strstr(why, "hw.interval"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_throttled_and_healthy),
        cmocka_unit_test(test_deltas_and_matching),
        cmocka_unit_test(test_lost_gpu),
        cmocka_unit_test(test_nothing_to_read),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
