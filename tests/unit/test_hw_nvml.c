/* agent/hw/nvml.h against the NVML test double (build/tests/libnvml-double.so,
 * tests/nvml/double.c) with scripts written to /tmp: GPU counts and UUIDs,
 * the now values, violation times growing, the cumulative counters, XIDs
 * drained from the event set, a lost GPU (ok = false, counters kept, the
 * others fine, back when it answers again), families that answer
 * NOT_SUPPORTED not asked again, nvml_open's refusals with their reason, a
 * driver without the calls CUDA 13 deprecated, and a script changed while
 * open followed. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/hw/nvml.h"

static char lib[512], script[256];
static void *dbl;                            /* held open: the call counts live on */
static unsigned long (*calls)(const char *); /* nvml_double_calls */

/* Write the script (replaced whole: the double sees a new file). */
static void put_script(const char *text)
{
    char tmp[300];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", script);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, script), 0);
}

static struct nvml *open_with(const char *text)
{
    char why[256] = "";
    struct nvml *n;

    put_script(text);
    n = nvml_open(lib, why, sizeof(why));
    if (!n)
        printf("nvml_open: %s\n", why);
    assert_non_null(n);
    return n;
}

static void test_counts_and_uuids(void **state)
{
    struct nvml_gpu g[NVML_GPUS_MAX];
    struct nvml *n = open_with("gpus 3\ngpu 1 uuid GPU-8c6f-abc  # named\n");

    (void)state;
    assert_int_equal(nvml_count(n), 3);
    assert_int_equal(nvml_sample(n, g, NVML_GPUS_MAX), 3);
    assert_string_equal(g[0].uuid, "GPU-double-0");
    assert_string_equal(g[1].uuid, "GPU-8c6f-abc");
    assert_string_equal(g[2].uuid, "GPU-double-2");
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(g[i].index, i);
        assert_true(g[i].ok);
    }
    assert_int_equal(nvml_sample(n, g, 2), 2); /* max caps what is filled */
    nvml_close(n);
    n = open_with("gpus 20\n"); /* more than NVML_GPUS_MAX: the first ones */
    assert_int_equal(nvml_count(n), NVML_GPUS_MAX);
    assert_int_equal(nvml_sample(n, g, NVML_GPUS_MAX), NVML_GPUS_MAX);
    nvml_close(n);
}

static void test_now_values(void **state)
{
    struct nvml_gpu g[2];
    struct nvml *n = open_with("gpus 2\ngpu 0 reasons 0x44\ngpu 0 sm_clock 1410\n"
                               "gpu 0 temperature 83\n");

    (void)state;
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_int_equal(g[0].reasons, NVML_REASON_SW_POWER_CAP | NVML_REASON_HW_THERMAL);
    assert_true(g[0].reasons & NVML_REASON_SLOWDOWN);
    assert_int_equal(g[0].sm_clock_mhz, 1410);
    assert_int_equal(g[0].temperature_c, 83);
    assert_int_equal(g[1].reasons, 0); /* the defaults */
    assert_int_equal(g[1].sm_clock_mhz, 1980);
    assert_int_equal(g[1].temperature_c, 60);
    nvml_close(n);
}

static void test_violation_grows(void **state)
{
    struct nvml_gpu a, b;
    struct nvml *n = open_with("gpu 0 power_violation_ms_per_s 100\n"
                               "gpu 0 thermal_violation_ms_per_s 20\n");
    struct timespec t0, t1;
    uint64_t power, thermal, slept_ns;

    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(nvml_sample(n, &a, 1), 1);
    usleep(200 * 1000);
    assert_int_equal(nvml_sample(n, &b, 1), 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    slept_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
               (uint64_t)t0.tv_nsec;
    power = b.power_violation_ns - a.power_violation_ns;
    thermal = b.thermal_violation_ns - a.thermal_violation_ns;
    /* 100 ms a second over at least 200 ms: 20 ms, at most a tenth of the time passed */
    assert_true(power >= 19 * 1000000ull && power <= slept_ns / 10 + 1000000);
    assert_true(thermal >= 3900000ull && thermal <= slept_ns / 50 + 1000000);
    assert_true(b.power_violation_ns >= a.power_violation_ns);
    nvml_close(n);
}

static void test_cumulative_counters(void **state)
{
    struct nvml_gpu g;
    struct nvml *n = open_with("gpu 0 ecc_corrected 3\ngpu 0 ecc_uncorrected 2\n"
                               "gpu 0 rows_remapped 5\ngpu 0 pcie_replays 7\n"
                               "gpu 0 nvlink_errors 37\n");

    (void)state;
    assert_int_equal(nvml_sample(n, &g, 1), 1);
    assert_int_equal(g.ecc_corrected, 3);
    assert_int_equal(g.ecc_uncorrected, 2);
    assert_int_equal(g.rows_remapped, 5); /* 3 correctable + 2 uncorrectable */
    assert_int_equal(g.pcie_replays, 7);
    /* 4 DL counters of the 4 active links; the 2 down links' 1000s not in it */
    assert_int_equal(g.nvlink_errors, 37);
    assert_int_equal(g.xid_count, 0);
    assert_int_equal(g.last_xid, 0);
    nvml_close(n);
}

static void test_xids(void **state)
{
    struct nvml_gpu g[2];
    struct nvml *n = open_with("gpus 2\ngpu 1 xids 2 79\n");

    (void)state;
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_int_equal(g[1].xid_count, 2);
    assert_int_equal(g[1].last_xid, 79);
    assert_int_equal(g[0].xid_count, 0); /* counted on the event's device */
    put_script("gpus 2\ngpu 1 xids 5 48\ngpu 0 xids 1 31\n");
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_int_equal(g[1].xid_count, 5);
    assert_int_equal(g[1].last_xid, 48);
    assert_int_equal(g[0].xid_count, 1);
    assert_int_equal(g[0].last_xid, 31);
    assert_int_equal(nvml_sample(n, g, 2), 2); /* none new: as they were */
    assert_int_equal(g[1].xid_count, 5);
    nvml_close(n);
}

static void test_lost_gpu(void **state)
{
    struct nvml_gpu g[2];
    struct nvml *n = open_with("gpus 2\ngpu 0 ecc_corrected 4\ngpu 0 pcie_replays 2\n"
                               "gpu 0 power_violation_ms_per_s 50\n");
    uint64_t power;

    (void)state;
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_true(g[0].ok);
    power = g[0].power_violation_ns;
    assert_true(power > 0);
    put_script("gpus 2\ngpu 0 lost\ngpu 0 ecc_corrected 9\ngpu 1 temperature 70\n");
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_false(g[0].ok);
    assert_string_equal(g[0].uuid, "GPU-double-0");
    assert_int_equal(g[0].ecc_corrected, 4); /* the last good ones */
    assert_int_equal(g[0].pcie_replays, 2);
    assert_int_equal(g[0].power_violation_ns, power);
    assert_int_equal(g[0].sm_clock_mhz, 0); /* now: unknown */
    assert_true(g[1].ok);
    assert_int_equal(g[1].temperature_c, 70);
    put_script("gpus 2\ngpu 0 lost\ngpu 1 lost\n");
    assert_int_equal(nvml_sample(n, g, 2), -EIO); /* none answered */
    assert_false(g[1].ok);
    put_script("gpus 2\ngpu 0 ecc_corrected 9\n"); /* back */
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_true(g[0].ok && g[1].ok);
    assert_int_equal(g[0].ecc_corrected, 9);
    assert_int_equal(g[0].pcie_replays, 0);
    nvml_close(n);
}

/* A GPU lost at nvml_open (no handle) is asked again, and read once back. */
static void test_lost_at_open(void **state)
{
    struct nvml_gpu g[2];
    struct nvml *n = open_with("gpus 2\ngpu 1 lost\ngpu 1 uuid GPU-late\n");

    (void)state;
    assert_int_equal(nvml_count(n), 2);
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_true(g[0].ok);
    assert_false(g[1].ok);
    assert_string_equal(g[1].uuid, "");
    put_script("gpus 2\ngpu 1 uuid GPU-late\ngpu 1 xids 1 79\n");
    assert_int_equal(nvml_sample(n, g, 2), 2); /* registered for XIDs now */
    assert_true(g[1].ok);
    assert_string_equal(g[1].uuid, "GPU-late");
    assert_int_equal(nvml_sample(n, g, 2), 2);
    assert_int_equal(g[1].xid_count, 1);
    nvml_close(n);
}

static void test_unsupported_not_asked_again(void **state)
{
    static const char *fns[] = {"nvmlDeviceGetTotalEccErrors",     "nvmlDeviceGetRemappedRows",
                                "nvmlDeviceGetPcieReplayCounter",  "nvmlDeviceGetNvLinkState",
                                "nvmlDeviceGetNvLinkErrorCounter", "nvmlDeviceGetViolationStatus"};
    unsigned long after_first[6], temp;
    struct nvml_gpu g;
    struct nvml *n = open_with("gpu 0 unsupported ecc\ngpu 0 unsupported remap\n"
                               "gpu 0 unsupported pcie\ngpu 0 unsupported nvlink\n"
                               "gpu 0 unsupported violation\ngpu 0 ecc_corrected 5\n"
                               "gpu 0 pcie_replays 5\n");

    (void)state;
    assert_non_null(calls);
    assert_int_equal(nvml_sample(n, &g, 1), 1);
    assert_true(g.ok); /* not supported is no failure */
    for (int i = 0; i < 6; i++)
        after_first[i] = calls(fns[i]);
    temp = calls("nvmlDeviceGetTemperature");
    for (int k = 0; k < 3; k++)
        assert_int_equal(nvml_sample(n, &g, 1), 1);
    for (int i = 0; i < 6; i++)
        assert_int_equal(calls(fns[i]), after_first[i]);
    assert_int_equal(calls("nvmlDeviceGetTemperature"), temp + 3); /* still asked */
    assert_int_equal(g.ecc_corrected, 0);
    assert_int_equal(g.pcie_replays, 0);
    assert_int_equal(g.power_violation_ns, 0);
    assert_int_equal(g.nvlink_errors, 0);
    assert_true(g.ok);
    nvml_close(n);
}

static void test_open_refusals(void **state)
{
    char why[256];

    (void)state;
    assert_null(nvml_open("/nonexistent/libnvidia-ml.so.1", why, sizeof(why)));
    assert_non_null(strstr(why, "/nonexistent/libnvidia-ml.so.1"));
    assert_non_null(strstr(why, "cannot open shared object file"));
    put_script("fail init Driver Not Loaded\n");
    assert_null(nvml_open(lib, why, sizeof(why)));
    assert_string_equal(why, "nvmlInit: Driver Not Loaded");
    put_script("fail count RM has detected an NVML/RM version mismatch\n");
    assert_null(nvml_open(lib, why, sizeof(why)));
    assert_string_equal(why, "nvmlDeviceGetCount: RM has detected an NVML/RM version mismatch");
    put_script("gpus 0\n");
    assert_null(nvml_open(lib, why, sizeof(why)));
    assert_string_equal(why, "no GPU");
    /* a library without the NVML calls */
    assert_null(nvml_open("libm.so.6", why, sizeof(why)));
    assert_non_null(strstr(why, "libm.so.6"));
    nvml_close(NULL);
    assert_int_equal(nvml_count(NULL), 0);
}

/* A driver without the calls CUDA 13 deprecated: the temperature through
 * nvmlDeviceGetTemperatureV, no violation times, the rest as before. */
static void test_without_deprecated_calls(void **state)
{
    char lib14[600], why[256];
    struct nvml_gpu g;
    struct nvml *n;

    (void)state;
    snprintf(lib14, sizeof(lib14), "%.*s-cuda14.so", (int)(strlen(lib) - 3), lib);
    put_script("gpu 0 temperature 77\ngpu 0 power_violation_ms_per_s 100\ngpu 0 pcie_replays 4\n");
    n = nvml_open(lib14, why, sizeof(why));
    if (!n)
        printf("nvml_open: %s\n", why);
    assert_non_null(n);
    assert_int_equal(nvml_sample(n, &g, 1), 1);
    assert_true(g.ok);
    assert_int_equal(g.temperature_c, 77);
    assert_int_equal(g.power_violation_ns, 0);
    assert_int_equal(g.pcie_replays, 4);
    nvml_close(n);
}

static void test_script_followed(void **state)
{
    struct nvml_gpu g;
    struct nvml *n = open_with("gpu 0 temperature 60\n");

    (void)state;
    assert_int_equal(nvml_sample(n, &g, 1), 1);
    assert_int_equal(g.temperature_c, 60);
    put_script("gpu 0 temperature 91\ngpu 0 reasons 0x20\ngpu 0 rows_remapped 3\n");
    assert_int_equal(nvml_sample(n, &g, 1), 1);
    assert_int_equal(g.temperature_c, 91);
    assert_int_equal(g.reasons, NVML_REASON_SW_THERMAL);
    assert_int_equal(g.rows_remapped, 3);
    nvml_close(n);
}

static int setup(void **state)
{
    const char *b = getenv("ARGUS_BUILD");

    (void)state;
    snprintf(lib, sizeof(lib), "%s/tests/libnvml-double.so", b ? b : "build");
    snprintf(script, sizeof(script), "/tmp/argus-nvml-double.%d", (int)getpid());
    setenv("ARGUS_NVML_DOUBLE", script, 1);
    dbl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!dbl) {
        printf("skip: %s\n", dlerror());
        return 0;
    }
    *(void **)&calls = dlsym(dbl, "nvml_double_calls");
    return 0;
}

static int teardown(void **state)
{
    char tmp[300];

    (void)state;
    snprintf(tmp, sizeof(tmp), "%s.tmp", script);
    unlink(script);
    unlink(tmp);
    if (dbl)
        dlclose(dbl);
    return 0;
}

/* Each test needs the double; without it (not built) they skip, visibly. */
static int need_double(void **state)
{
    (void)state;
    if (!dbl) {
        printf("skip: the NVML double is not built (make %s)\n", lib);
        skip();
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_counts_and_uuids, need_double),
        cmocka_unit_test_setup(test_now_values, need_double),
        cmocka_unit_test_setup(test_violation_grows, need_double),
        cmocka_unit_test_setup(test_cumulative_counters, need_double),
        cmocka_unit_test_setup(test_xids, need_double),
        cmocka_unit_test_setup(test_lost_gpu, need_double),
        cmocka_unit_test_setup(test_lost_at_open, need_double),
        cmocka_unit_test_setup(test_unsupported_not_asked_again, need_double),
        cmocka_unit_test_setup(test_open_refusals, need_double),
        cmocka_unit_test_setup(test_without_deprecated_calls, need_double),
        cmocka_unit_test_setup(test_script_followed, need_double),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
