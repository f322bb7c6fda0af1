/* NVML, loaded with dlopen (like CUPTI: no link dependency; a node without
 * the NVIDIA driver runs as before, with no GPU counters). One GPU's
 * counters as of one sample: what agent/hw/hw.h turns into each step's
 * HwCounters (proto/argus.proto).
 *
 * Takes in: the NVML library (libnvidia-ml.so.1 from the driver, or the
 * test double build/tests/libnvml-double.so, tests/nvml/). Gives out, per
 * GPU and sample: the clock-event (throttle) reasons, SM clock and
 * temperature now; and cumulative counters (violation times for power and
 * thermal, volatile ECC errors, remapped rows, PCIe replays, NVLink errors
 * over every link, XID events drained from an NVML event set). A counter
 * the GPU does not support (NVML_ERROR_NOT_SUPPORTED) stays 0; a GPU whose
 * calls fail otherwise (fell off the bus) is sampled with ok = false and
 * its cumulative counters kept from the last good sample.
 *
 * Not thread-safe: one thread samples (hw.c's). The functions may block as
 * long as the driver does (a failing GPU can take seconds): never call them
 * from the agent's main loop.
 */
#ifndef ARGUS_AGENT_HW_NVML_H
#define ARGUS_AGENT_HW_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVML_GPUS_MAX 16 /* GPUs sampled per node (more are ignored, counted) */
#define NVML_DEFAULT_LIB "libnvidia-ml.so.1"

/* NVML clock-event reason bits (nvmlClocksEventReason* / the older
 * nvmlClocksThrottleReason*), as HwCounters.throttle carries them. */
#define NVML_REASON_GPU_IDLE 0x1ull
#define NVML_REASON_APP_CLOCKS 0x2ull
#define NVML_REASON_SW_POWER_CAP 0x4ull
#define NVML_REASON_HW_SLOWDOWN 0x8ull
#define NVML_REASON_SYNC_BOOST 0x10ull
#define NVML_REASON_SW_THERMAL 0x20ull
#define NVML_REASON_HW_THERMAL 0x40ull
#define NVML_REASON_HW_POWER_BRAKE 0x80ull
/* The reasons that slow a busy GPU down (HwCounters.throttled_samples). */
#define NVML_REASON_SLOWDOWN                                                                       \
    (NVML_REASON_SW_POWER_CAP | NVML_REASON_HW_SLOWDOWN | NVML_REASON_SW_THERMAL |                 \
     NVML_REASON_HW_THERMAL | NVML_REASON_HW_POWER_BRAKE)

/* One GPU as of one sample. */
struct nvml_gpu {
    char uuid[96];  /* "GPU-8c6f..." (nvmlDeviceGetUUID), "" when unknown */
    uint32_t index; /* NVML index (PCI bus order) */
    bool ok;        /* this sample answered; false: counters are the last good ones */
    /* now */
    uint32_t reasons;       /* NVML_REASON_* bits */
    uint32_t sm_clock_mhz;  /* NVML_CLOCK_SM, 0 unknown */
    uint32_t temperature_c; /* NVML_TEMPERATURE_GPU, 0 unknown */
    /* cumulative (since the driver loaded, or since nvml_open for XIDs) */
    uint64_t power_violation_ns;   /* nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER) */
    uint64_t thermal_violation_ns; /* ... NVML_PERF_POLICY_THERMAL */
    uint64_t ecc_corrected;        /* nvmlDeviceGetTotalEccErrors, volatile */
    uint64_t ecc_uncorrected;
    uint64_t rows_remapped; /* nvmlDeviceGetRemappedRows: correctable + uncorrectable */
    uint64_t pcie_replays;  /* nvmlDeviceGetPcieReplayCounter */
    uint64_t nvlink_errors; /* nvmlDeviceGetNvLinkErrorCounter: replay, recovery, CRC flit and
                             * data, summed over the active links */
    uint64_t xid_count;     /* XID critical-error events seen since nvml_open */
    uint32_t last_xid;      /* the code of the latest (0: none yet) */
};

struct nvml;

/* Load lib (NULL or "": NVML_DEFAULT_LIB) with dlopen, nvmlInit_v2, find
 * the GPUs (up to NVML_GPUS_MAX) and register each for XID events. Returns
 * NULL with the reason in why ("libnvidia-ml.so.1: cannot open shared
 * object file", "nvmlInit: Driver Not Loaded", "no GPU") when there is no
 * NVML to read: the caller runs without GPU counters; not an error. */
struct nvml *nvml_open(const char *lib, char *why, size_t whylen);

/* GPUs found (1..NVML_GPUS_MAX). */
uint32_t nvml_count(const struct nvml *n);

/* Sample every GPU into out[0 .. min(count, max)); drains pending XID
 * events without waiting. Returns the number filled, or -errno when none
 * could be read. */
int nvml_sample(struct nvml *n, struct nvml_gpu *out, uint32_t max);

/* nvmlShutdown and dlclose. NULL is fine. */
void nvml_close(struct nvml *n);

#endif
