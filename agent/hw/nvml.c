/* NVML through dlopen (see nvml.h). The ABI subset used here is declared
 * below, checked against the driver's nvml.h (NVIDIA go-nvml's copy of
 * 2026): a wrong constant would read garbage on a real GPU without any error.
 *
 * What is read, per GPU and sample:
 *   now         nvmlDeviceGetCurrentClocksEventReasons (or the older
 *               ...ThrottleReasons), nvmlDeviceGetClockInfo(NVML_CLOCK_SM),
 *               nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU) (or, where a
 *               driver lacks it, nvmlDeviceGetTemperatureV): "basic reads";
 *   cumulative  nvmlDeviceGetViolationStatus (power, thermal; ns),
 *               nvmlDeviceGetTotalEccErrors (volatile), nvmlDeviceGetRemappedRows,
 *               nvmlDeviceGetPcieReplayCounter, nvmlDeviceGetNvLinkErrorCounter
 *               (DL replay, recovery, CRC flit, CRC data) over the links found
 *               at nvml_open; XID critical errors from one event set.
 * A family that answers NOT_SUPPORTED (or whose symbol is missing) is not
 * called again for that GPU; its counter stays 0. A basic read failing
 * otherwise, or any read answering GPU_IS_LOST, makes the sample ok = false:
 * the cumulative counters are the last good ones, the now values 0
 * (unknown). Another error on a cumulative read keeps that counter's last
 * value. An NVLink link that goes inactive keeps its last counts in the sum
 * (a link taken down by errors must not make the counter go back). A GPU
 * whose handle cannot be had at nvml_open is kept (ok = false) and its
 * handle asked for again at each sample. */
#include "agent/hw/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the NVML ABI subset (nvml.h) ---------------------------------------- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
    unsigned long long referenceTime; /* CPU timestamp, us */
    unsigned long long violationTime; /* ns */
} nvmlViolationTime_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* the XID for nvmlEventTypeXidCriticalError */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;
typedef struct { /* nvmlTemperature_v1_t, for drivers past nvmlDeviceGetTemperature */
    unsigned int version;
    int sensorType;
    int temperature;
} nvmlTemperature_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0
#define NVML_PERF_POLICY_POWER 0
#define NVML_PERF_POLICY_THERMAL 1
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_FEATURE_ENABLED 1
#define NVML_TEMPERATURE_V1 ((unsigned int)sizeof(nvmlTemperature_t) | 1u << 24)
#define NVML_EVENT_XID_CRITICAL 0x8ull /* nvmlEventTypeXidCriticalError */
#define NVML_NVLINK_ERROR_DL_REPLAY 0
#define NVML_NVLINK_ERROR_DL_CRC_DATA 3 /* REPLAY, RECOVERY, CRC_FLIT, CRC_DATA */
/* 18 up to Hopper, 36 since: links past a GPU's own answer INVALID_ARGUMENT */
#define NVML_LINKS_PROBED 36
#define NVML_UUID_LEN 96        /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define NVML_XID_DRAIN_MAX 4096 /* events taken per sample at most */

struct nvml_api {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*temperature_v)(nvmlDevice_t, nvmlTemperature_t *);
    nvmlReturn_t (*violation)(nvmlDevice_t, int, nvmlViolationTime_t *);
    nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
    nvmlReturn_t (*remapped)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
                             unsigned int *);
    nvmlReturn_t (*pcie_replays)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*link_errors)(nvmlDevice_t, unsigned int, int, unsigned long long *);
    nvmlReturn_t (*set_create)(nvmlEventSet_t *);
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    nvmlReturn_t (*set_free)(nvmlEventSet_t);
};

/* --- state ---------------------------------------------------------------- */

/* Families of calls, disabled per GPU once they answer NOT_SUPPORTED. */
enum {
    NVML_FAM_REASONS = 1u << 0,
    NVML_FAM_CLOCK = 1u << 1,
    NVML_FAM_TEMPERATURE = 1u << 2,
    NVML_FAM_VIOLATION = 1u << 3,
    NVML_FAM_ECC = 1u << 4,
    NVML_FAM_REMAP = 1u << 5,
    NVML_FAM_PCIE = 1u << 6,
    NVML_FAM_NVLINK = 1u << 7,
};

struct nvml_dev {
    nvmlDevice_t handle; /* NULL: not had yet (asked again at each sample) */
    uint32_t off;        /* NVML_FAM_* answered NOT_SUPPORTED */
    uint64_t links;      /* bit l: NVLink l exists */
    uint64_t link_errors[NVML_LINKS_PROBED];
    uint64_t xid_count;
    uint32_t last_xid;
    struct nvml_gpu last; /* the last good sample */
};

struct nvml {
    void *dl;
    struct nvml_api f;
    bool inited;
    nvmlEventSet_t events; /* NULL: no XIDs */
    uint32_t count;
    uint32_t ignored; /* GPUs past NVML_GPUS_MAX */
    struct nvml_dev dev[NVML_GPUS_MAX];
};

/* --- loading --------------------------------------------------------------- */

static void *nvml_sym(void *dl, const char *name, const char *fallback)
{
    void *p = dlsym(dl, name);

    return p || !fallback ? p : dlsym(dl, fallback);
}

#define NVML_BIND(field, name, fallback) *(void **)&n->f.field = nvml_sym(n->dl, name, fallback)

/* Resolve the symbols; 0, or -ENOSYS when a required one is missing. */
static int nvml_bind(struct nvml *n)
{
    NVML_BIND(init, "nvmlInit_v2", NULL);
    NVML_BIND(shutdown, "nvmlShutdown", NULL);
    NVML_BIND(error_string, "nvmlErrorString", NULL);
    NVML_BIND(count, "nvmlDeviceGetCount_v2", NULL);
    NVML_BIND(handle, "nvmlDeviceGetHandleByIndex_v2", NULL);
    NVML_BIND(uuid, "nvmlDeviceGetUUID", NULL);
    NVML_BIND(reasons, "nvmlDeviceGetCurrentClocksEventReasons",
              "nvmlDeviceGetCurrentClocksThrottleReasons");
    NVML_BIND(clock, "nvmlDeviceGetClockInfo", NULL);
    NVML_BIND(temperature, "nvmlDeviceGetTemperature", NULL);
    NVML_BIND(temperature_v, "nvmlDeviceGetTemperatureV", NULL);
    NVML_BIND(violation, "nvmlDeviceGetViolationStatus", NULL);
    NVML_BIND(ecc, "nvmlDeviceGetTotalEccErrors", NULL);
    NVML_BIND(remapped, "nvmlDeviceGetRemappedRows", NULL);
    NVML_BIND(pcie_replays, "nvmlDeviceGetPcieReplayCounter", NULL);
    NVML_BIND(link_state, "nvmlDeviceGetNvLinkState", NULL);
    NVML_BIND(link_errors, "nvmlDeviceGetNvLinkErrorCounter", NULL);
    NVML_BIND(set_create, "nvmlEventSetCreate", NULL);
    NVML_BIND(register_events, "nvmlDeviceRegisterEvents", NULL);
    NVML_BIND(set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    NVML_BIND(set_free, "nvmlEventSetFree", NULL);
    if (!n->f.init || !n->f.count || !n->f.handle)
        return -ENOSYS;
    if (!n->f.reasons && !n->f.clock && !n->f.temperature && !n->f.temperature_v &&
        !n->f.violation && !n->f.ecc && !n->f.remapped && !n->f.pcie_replays && !n->f.link_errors)
        return -ENOSYS;
    return 0;
}

static const char *nvml_error(const struct nvml *n, nvmlReturn_t rc)
{
    const char *s = n->f.error_string ? n->f.error_string(rc) : NULL;

    return s ? s : "unknown error";
}

/* Find which NVLink links the GPU has (once: a link's existence does not
 * change; its state does). No link answering: the family is off. */
static void nvml_probe_links(struct nvml *n, struct nvml_dev *d)
{
    d->links = 0;
    for (unsigned int l = 0; n->f.link_state && l < NVML_LINKS_PROBED; l++) {
        int active = 0;

        if (n->f.link_state(d->handle, l, &active) == NVML_SUCCESS)
            d->links |= 1ull << l;
    }
    if (!d->links || !n->f.link_errors)
        d->off |= NVML_FAM_NVLINK;
}

/* Get GPU i's handle, UUID, links and XID registration; 0 or -EIO. */
static int nvml_attach(struct nvml *n, uint32_t i)
{
    struct nvml_dev *d = &n->dev[i];
    char uuid[NVML_UUID_LEN] = "";

    if (n->f.handle(i, &d->handle) != NVML_SUCCESS) {
        d->handle = NULL;
        return -EIO;
    }
    if (n->f.uuid && n->f.uuid(d->handle, uuid, sizeof(uuid)) == NVML_SUCCESS)
        snprintf(d->last.uuid, sizeof(d->last.uuid), "%s", uuid);
    nvml_probe_links(n, d);
    if (n->events && n->f.register_events)
        n->f.register_events(d->handle, NVML_EVENT_XID_CRITICAL, n->events);
    return 0;
}

/* nvmlInit and the GPU count; 0, or -errno with why set. */
static int nvml_start(struct nvml *n, char *why, size_t whylen)
{
    unsigned int count = 0;
    nvmlReturn_t rc = n->f.init();

    if (rc != NVML_SUCCESS) {
        snprintf(why, whylen, "nvmlInit: %s", nvml_error(n, rc));
        return -ENODEV;
    }
    n->inited = true;
    rc = n->f.count(&count);
    if (rc != NVML_SUCCESS) {
        snprintf(why, whylen, "nvmlDeviceGetCount: %s", nvml_error(n, rc));
        return -ENODEV;
    }
    if (!count) {
        snprintf(why, whylen, "no GPU");
        return -ENODEV;
    }
    n->count = count < NVML_GPUS_MAX ? count : NVML_GPUS_MAX;
    n->ignored = count - n->count;
    return 0;
}

struct nvml *nvml_open(const char *lib, char *why, size_t whylen)
{
    struct nvml *n = calloc(1, sizeof(*n));

    if (!n) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    n->dl = dlopen(lib && *lib ? lib : NVML_DEFAULT_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!n->dl) {
        snprintf(why, whylen, "%s", dlerror());
        goto fail;
    }
    if (nvml_bind(n) < 0) {
        snprintf(why, whylen, "%s: no nvmlInit_v2, GPU count, handle or reading",
                 lib && *lib ? lib : NVML_DEFAULT_LIB);
        goto fail;
    }
    if (nvml_start(n, why, whylen) < 0)
        goto fail;
    if (n->f.set_create && n->f.set_wait && n->f.set_create(&n->events) != NVML_SUCCESS)
        n->events = NULL;
    for (uint32_t i = 0; i < n->count; i++) {
        n->dev[i].last.index = i;
        nvml_attach(n, i);
    }
    return n;
fail:
    nvml_close(n);
    return NULL;
}

uint32_t nvml_count(const struct nvml *n)
{
    return n ? n->count : 0;
}

void nvml_close(struct nvml *n)
{
    if (!n)
        return;
    if (n->events && n->f.set_free)
        n->f.set_free(n->events);
    if (n->inited && n->f.shutdown)
        n->f.shutdown();
    if (n->dl)
        dlclose(n->dl);
    free(n);
}

/* --- sampling -------------------------------------------------------------- */

/* The outcome of one call for a family: 1 read, 0 nothing to read (not
 * supported: the family goes off; or a passing error), -1 the GPU failed. */
static int nvml_check(struct nvml_dev *d, uint32_t fam, nvmlReturn_t rc, bool basic)
{
    if (rc == NVML_SUCCESS)
        return 1;
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
        d->off |= fam;
        return 0;
    }
    return rc == NVML_ERROR_GPU_IS_LOST || basic ? -1 : 0;
}

#define NVML_ON(d, fam, fn) (!((d)->off & (fam)) && (fn))

/* The GPU temperature: nvmlDeviceGetTemperature (deprecated in CUDA 13), or
 * its successor where a driver has dropped it. */
static nvmlReturn_t nvml_temperature(struct nvml *n, nvmlDevice_t h, unsigned int *c)
{
    nvmlTemperature_t t = {NVML_TEMPERATURE_V1, NVML_TEMPERATURE_GPU, 0};
    nvmlReturn_t rc;

    if (n->f.temperature)
        return n->f.temperature(h, NVML_TEMPERATURE_GPU, c);
    rc = n->f.temperature_v(h, &t);
    *c = rc == NVML_SUCCESS && t.temperature > 0 ? (unsigned int)t.temperature : 0;
    return rc;
}

/* Reasons, SM clock and temperature into g; 0, or -EIO when the GPU failed. */
static int nvml_read_now(struct nvml *n, struct nvml_dev *d, struct nvml_gpu *g)
{
    unsigned long long reasons = 0;
    unsigned int clock = 0, temp = 0;
    int bad = 0;

    if (NVML_ON(d, NVML_FAM_REASONS, n->f.reasons))
        bad |= nvml_check(d, NVML_FAM_REASONS, n->f.reasons(d->handle, &reasons), true);
    if (NVML_ON(d, NVML_FAM_CLOCK, n->f.clock))
        bad |= nvml_check(d, NVML_FAM_CLOCK, n->f.clock(d->handle, NVML_CLOCK_SM, &clock), true);
    if (NVML_ON(d, NVML_FAM_TEMPERATURE, n->f.temperature || n->f.temperature_v))
        bad |= nvml_check(d, NVML_FAM_TEMPERATURE, nvml_temperature(n, d->handle, &temp), true);
    /* a call that did not answer left its value 0: unknown */
    g->reasons = (uint32_t)reasons;
    g->sm_clock_mhz = clock;
    g->temperature_c = temp;
    return bad < 0 ? -EIO : 0;
}

/* Violation times (ns) for power and thermal; -EIO when the GPU failed. */
static int nvml_read_violation(struct nvml *n, struct nvml_dev *d, struct nvml_gpu *g)
{
    nvmlViolationTime_t v = {0};
    int rc;

    if (!NVML_ON(d, NVML_FAM_VIOLATION, n->f.violation))
        return 0;
    rc = nvml_check(d, NVML_FAM_VIOLATION, n->f.violation(d->handle, NVML_PERF_POLICY_POWER, &v),
                    false);
    if (rc > 0)
        g->power_violation_ns = v.violationTime;
    if (rc < 0 || !NVML_ON(d, NVML_FAM_VIOLATION, n->f.violation))
        return rc < 0 ? -EIO : 0;
    rc = nvml_check(d, NVML_FAM_VIOLATION, n->f.violation(d->handle, NVML_PERF_POLICY_THERMAL, &v),
                    false);
    if (rc > 0)
        g->thermal_violation_ns = v.violationTime;
    return rc < 0 ? -EIO : 0;
}

/* Volatile ECC errors, remapped rows and PCIe replays; -EIO when the GPU failed. */
static int nvml_read_memory(struct nvml *n, struct nvml_dev *d, struct nvml_gpu *g)
{
    unsigned long long c = 0, u = 0;
    unsigned int corr = 0, unc = 0, pending = 0, failed = 0, replays = 0;
    int rc = 0, r;

    if (NVML_ON(d, NVML_FAM_ECC, n->f.ecc)) {
        r = nvml_check(d, NVML_FAM_ECC,
                       n->f.ecc(d->handle, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c),
                       false);
        if (r > 0)
            r = nvml_check(
                d, NVML_FAM_ECC,
                n->f.ecc(d->handle, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &u),
                false);
        if (r > 0)
            g->ecc_corrected = c, g->ecc_uncorrected = u;
        rc |= r;
    }
    if (NVML_ON(d, NVML_FAM_REMAP, n->f.remapped)) {
        r = nvml_check(d, NVML_FAM_REMAP, n->f.remapped(d->handle, &corr, &unc, &pending, &failed),
                       false);
        if (r > 0)
            g->rows_remapped = (uint64_t)corr + unc;
        rc |= r;
    }
    if (NVML_ON(d, NVML_FAM_PCIE, n->f.pcie_replays)) {
        r = nvml_check(d, NVML_FAM_PCIE, n->f.pcie_replays(d->handle, &replays), false);
        if (r > 0)
            g->pcie_replays = replays;
        rc |= r;
    }
    return rc < 0 ? -EIO : 0;
}

/* One link's four DL error counters summed into *sum; nvml_check's answer. */
static int nvml_read_link(struct nvml *n, struct nvml_dev *d, unsigned int l, uint64_t *sum)
{
    uint64_t total = 0;

    for (int c = NVML_NVLINK_ERROR_DL_REPLAY; c <= NVML_NVLINK_ERROR_DL_CRC_DATA; c++) {
        unsigned long long v = 0;
        int r = nvml_check(d, NVML_FAM_NVLINK, n->f.link_errors(d->handle, l, c, &v), false);

        if (r <= 0)
            return r;
        total += v;
    }
    *sum = total;
    return 1;
}

/* NVLink errors of the active links; inactive ones keep their last counts. */
static int nvml_read_nvlink(struct nvml *n, struct nvml_dev *d, struct nvml_gpu *g)
{
    uint64_t total = 0;

    for (unsigned int l = 0; l < NVML_LINKS_PROBED; l++) {
        int active = 0;

        if (!(d->links & (1ull << l)) || !NVML_ON(d, NVML_FAM_NVLINK, n->f.link_errors))
            continue;
        if (n->f.link_state(d->handle, l, &active) == NVML_ERROR_GPU_IS_LOST ||
            (active == NVML_FEATURE_ENABLED && nvml_read_link(n, d, l, &d->link_errors[l]) < 0))
            return -EIO;
    }
    if (d->off & NVML_FAM_NVLINK)
        return 0;
    for (unsigned int l = 0; l < NVML_LINKS_PROBED; l++)
        total += d->link_errors[l];
    g->nvlink_errors = total;
    return 0;
}

/* Take the pending XID events (no wait), counted on their GPU. */
static void nvml_drain_xids(struct nvml *n)
{
    nvmlEventData_t e;

    for (int k = 0; n->events && k < NVML_XID_DRAIN_MAX; k++) {
        memset(&e, 0, sizeof(e));
        if (n->f.set_wait(n->events, &e, 0) != NVML_SUCCESS)
            return;
        if (!(e.eventType & NVML_EVENT_XID_CRITICAL))
            continue;
        for (uint32_t i = 0; i < n->count; i++) {
            if (n->dev[i].handle && n->dev[i].handle == e.device) {
                n->dev[i].xid_count++;
                n->dev[i].last_xid = (uint32_t)e.eventData;
                break;
            }
        }
    }
}

/* Sample GPU i into g; true when it answered. */
static bool nvml_sample_one(struct nvml *n, uint32_t i, struct nvml_gpu *g)
{
    struct nvml_dev *d = &n->dev[i];
    bool ok = (d->handle || nvml_attach(n, i) == 0);
    struct nvml_gpu cur = d->last; /* with the UUID nvml_attach may just have had */

    if (ok)
        ok = nvml_read_now(n, d, &cur) == 0 && nvml_read_violation(n, d, &cur) == 0 &&
             nvml_read_memory(n, d, &cur) == 0 && nvml_read_nvlink(n, d, &cur) == 0;
    if (ok) {
        cur.ok = true;
        d->last = cur;
        *g = cur;
    } else {
        *g = d->last;
        g->ok = false;
        g->reasons = g->sm_clock_mhz = g->temperature_c = 0;
    }
    g->index = i;
    g->xid_count = d->xid_count;
    g->last_xid = d->last_xid;
    return ok;
}

int nvml_sample(struct nvml *n, struct nvml_gpu *out, uint32_t max)
{
    uint32_t want, good = 0;

    if (!n || (!out && max))
        return -EINVAL;
    nvml_drain_xids(n);
    want = max < n->count ? max : n->count;
    for (uint32_t i = 0; i < want; i++)
        good += nvml_sample_one(n, i, &out[i]);
    return good || !want ? (int)want : -EIO;
}
