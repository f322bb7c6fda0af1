/* nvml-read: the GPU check's read of NVML through agent/hw/nvml.c.
 *
 *   nvml-read [LIB]     (LIB: the NVML library, default libnvidia-ml.so.1)
 *
 * Opens NVML, samples every GPU twice one second apart and prints, per GPU,
 * what the agent would put in its step records: UUID, clock-event reasons
 * (hex and names), SM clock, temperature, the violation times' growth over
 * the second, and the cumulative ECC, remapped-row, PCIe-replay, NVLink and
 * XID counters. Exits 0; 77 with the reason when there is no NVML to read
 * (no library, no driver, no GPU); 1 when NVML is there but a sample fails.
 * Built by tests/nvml/rules.mk, or directly where our build deps are missing:
 *   gcc -std=gnu11 -O2 -I. tests/gpu/nvml_read.c agent/hw/nvml.c -ldl */
#include <stdio.h>
#include <unistd.h>

#include "agent/hw/nvml.h"

static const struct {
    uint32_t bit;
    const char *name;
} read_reasons[] = {
    {NVML_REASON_GPU_IDLE, "gpu_idle"},         {NVML_REASON_APP_CLOCKS, "app_clocks"},
    {NVML_REASON_SW_POWER_CAP, "sw_power_cap"}, {NVML_REASON_HW_SLOWDOWN, "hw_slowdown"},
    {NVML_REASON_SYNC_BOOST, "sync_boost"},     {NVML_REASON_SW_THERMAL, "sw_thermal"},
    {NVML_REASON_HW_THERMAL, "hw_thermal"},     {NVML_REASON_HW_POWER_BRAKE, "hw_power_brake"},
};

/* The names of the reason bits set in r, "none" when none is. */
static const char *read_reason_names(uint32_t r, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = 0;
    for (size_t i = 0; i < sizeof(read_reasons) / sizeof(read_reasons[0]); i++) {
        if ((r & read_reasons[i].bit) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
                                     read_reasons[i].name);
        r &= ~read_reasons[i].bit;
    }
    if (r && used < len)
        snprintf(buf + used, len - used, "%sother 0x%x", used ? "," : "", r);
    return buf[0] ? buf : "none";
}

static void read_print(const struct nvml_gpu *a, const struct nvml_gpu *b)
{
    char names[160];

    printf("gpu %u %s ok=%d\n", b->index, b->uuid[0] ? b->uuid : "(no uuid)", b->ok);
    printf("  reasons 0x%x (%s)\n", b->reasons,
           read_reason_names(b->reasons, names, sizeof(names)));
    printf("  sm_clock %u MHz, temperature %u C\n", b->sm_clock_mhz, b->temperature_c);
    printf("  violation over 1 s: power %.3f ms, thermal %.3f ms (totals %llu, %llu ns)\n",
           (double)(b->power_violation_ns - a->power_violation_ns) / 1e6,
           (double)(b->thermal_violation_ns - a->thermal_violation_ns) / 1e6,
           (unsigned long long)b->power_violation_ns, (unsigned long long)b->thermal_violation_ns);
    printf("  ecc volatile corrected %llu uncorrected %llu, rows remapped %llu\n",
           (unsigned long long)b->ecc_corrected, (unsigned long long)b->ecc_uncorrected,
           (unsigned long long)b->rows_remapped);
    printf("  pcie replays %llu, nvlink errors %llu, xids %llu (last %u)\n",
           (unsigned long long)b->pcie_replays, (unsigned long long)b->nvlink_errors,
           (unsigned long long)b->xid_count, b->last_xid);
}

int main(int argc, char **argv)
{
    static struct nvml_gpu first[NVML_GPUS_MAX], second[NVML_GPUS_MAX];
    const char *lib = argc > 1 ? argv[1] : NULL;
    char why[512];
    struct nvml *n = nvml_open(lib, why, sizeof(why));
    int a, b;

    if (!n) {
        printf("no NVML: %s\n", why);
        return 77;
    }
    printf("NVML %s: %u GPU(s)\n", lib ? lib : NVML_DEFAULT_LIB, nvml_count(n));
    a = nvml_sample(n, first, NVML_GPUS_MAX);
    sleep(1);
    b = nvml_sample(n, second, NVML_GPUS_MAX);
    for (int i = 0; i < b; i++)
        read_print(&first[i], &second[i]);
    nvml_close(n);
    if (a < 0 || b < 0) {
        printf("FAIL: nvml_sample: %d, %d\n", a, b);
        return 1;
    }
    return 0;
}
