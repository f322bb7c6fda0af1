/* The NVML test double: libnvml-double.so exports the NVML calls that
 * agent/hw/nvml.c makes, with values scripted in the file named by the
 * environment variable ARGUS_NVML_DOUBLE. The script is read again whenever
 * its modification time, size or inode change (a test rewrites it to change
 * a GPU's state while nvml.c holds the library open). No file, or no
 * variable: one GPU with the defaults.
 *
 * Script, one statement a line, '#' starts a comment:
 *   gpus N                      device count (default 1, at most 16)
 *   fail init|count TEXT        that call fails; nvmlErrorString gives TEXT
 *   gpu I uuid GPU-...          default GPU-double-I
 *   gpu I reasons 0x40          current clock-event reasons (default 0)
 *   gpu I sm_clock MHZ          default 1980
 *   gpu I temperature C         default 60
 *   gpu I power_violation_ms_per_s X    violation time grows at X ms per
 *   gpu I thermal_violation_ms_per_s X  second since the first nvmlInit
 *   gpu I ecc_corrected N | ecc_uncorrected N | rows_remapped N |
 *         pcie_replays N | nvlink_errors N
 *                               current cumulative values (default 0); rows
 *                               split into correctable (the larger half) and
 *                               uncorrectable; NVLink errors spread over the
 *                               4 DL counters of links 0..3 (active); links
 *                               4 and 5 exist but are down, with 1000 errors
 *                               each that a reader must not count
 *   gpu I xids N CODE           N XID events so far, the last (all) CODE:
 *                               nvmlEventSetWait_v2 delivers the ones not
 *                               delivered yet, one a call
 *   gpu I lost                  every call on it answers GPU_IS_LOST
 *   gpu I unsupported ecc|remap|pcie|nvlink|violation|xid
 *                               that family answers NOT_SUPPORTED
 *
 * Built twice: libnvml-double.so, and libnvml-double-cuda14.so without the
 * calls CUDA 13 deprecated (nvmlDeviceGetTemperature, whose successor
 * nvmlDeviceGetTemperatureV both export, and nvmlDeviceGetViolationStatus).
 *
 * nvml_double_calls(NAME) (exported) counts the calls to the NVML function
 * NAME since the library loaded (NULL: all). Not thread-safe, as nvml.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* The NVML ABI (nvml.h), as agent/hw/nvml.c declares it. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
    unsigned long long referenceTime, violationTime;
} nvmlViolationTime_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};
#define XID_EVENT 0x8ull
#define GPUS_MAX 16
#define LINKS 6        /* 0..3 active, 4..5 down */
#define LINKS_ACTIVE 4 /* DL counters 0..3 on each */

enum { F_ECC = 1, F_REMAP = 2, F_PCIE = 4, F_NVLINK = 8, F_VIOLATION = 16, F_XID = 32 };

struct nvmlDevice_st {
    char uuid[96];
    unsigned long long reasons, ecc_c, ecc_u, rows, pcie, nvlink, xids, delivered;
    unsigned int sm_clock, temperature, xid_code, unsupported;
    double power_ms_per_s, thermal_ms_per_s;
    int lost, registered;
};

struct nvmlEventSet_st {
    int live;
};

static struct {
    struct stat seen; /* of the script last read */
    int read_once, inits;
    unsigned int gpus;
    char fail_init[128], fail_count[128];
    struct nvmlDevice_st gpu[GPUS_MAX];
    struct nvmlEventSet_st set;
    struct timespec t0; /* the first nvmlInit */
    struct {
        const char *name;
        unsigned long n;
    } calls[32];
} d;

/* --- the script ------------------------------------------------------------ */

static void dbl_defaults(void)
{
    d.gpus = 1;
    d.fail_init[0] = d.fail_count[0] = 0;
    for (unsigned int i = 0; i < GPUS_MAX; i++) {
        struct nvmlDevice_st *g = &d.gpu[i];
        unsigned long long delivered = g->delivered;
        int registered = g->registered;

        memset(g, 0, sizeof(*g));
        snprintf(g->uuid, sizeof(g->uuid), "GPU-double-%u", i);
        g->sm_clock = 1980;
        g->temperature = 60;
        g->delivered = delivered; /* what was delivered stays delivered */
        g->registered = registered;
    }
}

static unsigned int dbl_family(const char *s)
{
    static const char *names[] = {"ecc", "remap", "pcie", "nvlink", "violation", "xid"};

    for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(s, names[i]))
            return 1u << i;
    return 0;
}

/* One "gpu I KEY VALUE..." statement. */
static void dbl_gpu(struct nvmlDevice_st *g, const char *key, const char *v1, const char *v2)
{
    unsigned long long n = strtoull(v1, NULL, 0);

    if (!strcmp(key, "uuid"))
        snprintf(g->uuid, sizeof(g->uuid), "%s", v1);
    else if (!strcmp(key, "reasons"))
        g->reasons = n;
    else if (!strcmp(key, "sm_clock"))
        g->sm_clock = (unsigned int)n;
    else if (!strcmp(key, "temperature"))
        g->temperature = (unsigned int)n;
    else if (!strcmp(key, "power_violation_ms_per_s"))
        g->power_ms_per_s = strtod(v1, NULL);
    else if (!strcmp(key, "thermal_violation_ms_per_s"))
        g->thermal_ms_per_s = strtod(v1, NULL);
    else if (!strcmp(key, "ecc_corrected"))
        g->ecc_c = n;
    else if (!strcmp(key, "ecc_uncorrected"))
        g->ecc_u = n;
    else if (!strcmp(key, "rows_remapped"))
        g->rows = n;
    else if (!strcmp(key, "pcie_replays"))
        g->pcie = n;
    else if (!strcmp(key, "nvlink_errors"))
        g->nvlink = n;
    else if (!strcmp(key, "xids"))
        g->xids = n, g->xid_code = (unsigned int)strtoul(v2, NULL, 0);
    else if (!strcmp(key, "lost"))
        g->lost = 1;
    else if (!strcmp(key, "unsupported"))
        g->unsupported |= dbl_family(v1);
    else
        fprintf(stderr, "nvml-double: unknown key %s\n", key);
}

static void dbl_line(char *line)
{
    char *hash = strchr(line, '#'), w[4][128] = {{0}};
    int k;

    if (hash)
        *hash = 0;
    k = sscanf(line, "%127s %127s %127s %127[^\n]", w[0], w[1], w[2], w[3]);
    if (k < 2)
        return;
    if (!strcmp(w[0], "gpus")) {
        d.gpus = (unsigned int)strtoul(w[1], NULL, 0);
        d.gpus = d.gpus > GPUS_MAX ? GPUS_MAX : d.gpus;
    } else if (!strcmp(w[0], "fail") && k >= 3) {
        char text[128];

        snprintf(text, sizeof(text), "%s%s%s", w[2], k > 3 ? " " : "", w[3]);
        snprintf(!strcmp(w[1], "init") ? d.fail_init : d.fail_count, sizeof(d.fail_init), "%s",
                 text);
    } else if (!strcmp(w[0], "gpu") && k >= 3) {
        unsigned long i = strtoul(w[1], NULL, 0);
        char v1[128] = "", v2[128] = "";

        sscanf(w[3], "%127s %127s", v1, v2);
        if (i < GPUS_MAX)
            dbl_gpu(&d.gpu[i], w[2], v1, v2);
    }
}

/* Read the script again if it changed (or never was). */
static void dbl_sync(void)
{
    const char *path = getenv("ARGUS_NVML_DOUBLE");
    struct stat st = {0};
    char line[512];
    FILE *f;

    if (path && stat(path, &st))
        memset(&st, 0, sizeof(st));
    if (d.read_once && st.st_ino == d.seen.st_ino && st.st_size == d.seen.st_size &&
        st.st_mtim.tv_sec == d.seen.st_mtim.tv_sec && st.st_mtim.tv_nsec == d.seen.st_mtim.tv_nsec)
        return;
    d.read_once = 1;
    d.seen = st;
    dbl_defaults();
    if (!path || !(f = fopen(path, "r")))
        return;
    while (fgets(line, sizeof(line), f))
        dbl_line(line);
    fclose(f);
}

/* Count a call to name (a string literal) and sync the script. */
static void dbl_call(const char *name)
{
    unsigned int i;

    for (i = 0; i < 32 && d.calls[i].name && strcmp(d.calls[i].name, name); i++)
        ;
    if (i < 32) {
        d.calls[i].name = name;
        d.calls[i].n++;
    }
    dbl_sync();
}

EXPORT unsigned long nvml_double_calls(const char *name)
{
    unsigned long n = 0;

    for (unsigned int i = 0; i < 32 && d.calls[i].name; i++)
        if (!name || !strcmp(d.calls[i].name, name))
            n += d.calls[i].n;
    return n;
}

/* --- the NVML calls -------------------------------------------------------- */

/* The answer for a call on g in family fam (0: none): lost, unsupported, ok. */
static nvmlReturn_t dbl_gate(nvmlDevice_t g, unsigned int fam)
{
    if (!g || g < d.gpu || g >= d.gpu + d.gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (g->lost)
        return NVML_ERROR_GPU_IS_LOST;
    return g->unsupported & fam ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    dbl_call("nvmlInit_v2");
    if (d.fail_init[0])
        return NVML_ERROR_DRIVER_NOT_LOADED;
    if (!d.t0.tv_sec)
        clock_gettime(CLOCK_MONOTONIC, &d.t0);
    d.inits++;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    dbl_call("nvmlShutdown");
    if (!d.inits)
        return NVML_ERROR_UNINITIALIZED;
    d.inits--;
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return d.fail_init[0] ? d.fail_init : "Driver Not Loaded";
    case NVML_ERROR_UNKNOWN:
        return d.fail_count[0] ? d.fail_count : "Unknown Error";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    default:
        return "double: some error";
    }
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    dbl_call("nvmlDeviceGetCount_v2");
    if (!d.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (d.fail_count[0])
        return NVML_ERROR_UNKNOWN;
    *count = d.gpus;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetHandleByIndex_v2");
    if (i >= d.gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(&d.gpu[i], 0)) == NVML_SUCCESS)
        *dev = &d.gpu[i];
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t g, char *uuid, unsigned int len)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetUUID");
    if ((rc = dbl_gate(g, 0)) == NVML_SUCCESS)
        snprintf(uuid, len, "%s", g->uuid);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t g,
                                                           unsigned long long *reasons)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetCurrentClocksEventReasons");
    if ((rc = dbl_gate(g, 0)) == NVML_SUCCESS)
        *reasons = g->reasons;
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t g, int type, unsigned int *mhz)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetClockInfo");
    if (type != 1) /* NVML_CLOCK_SM is what the agent asks for */
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(g, 0)) == NVML_SUCCESS)
        *mhz = g->sm_clock;
    return rc;
}

#ifndef NVML_DOUBLE_CUDA14
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t g, int sensor, unsigned int *c)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetTemperature");
    if (sensor != 0) /* NVML_TEMPERATURE_GPU */
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(g, 0)) == NVML_SUCCESS)
        *c = g->temperature;
    return rc;
}
#endif

/* nvmlTemperature_v1_t: version (sizeof | 1 << 24), sensorType, temperature. */
EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t g, int *t)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetTemperatureV");
    if (!t || (unsigned int)t[0] != (12u | 1u << 24) || t[1] != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(g, 0)) == NVML_SUCCESS)
        t[2] = (int)g->temperature;
    return rc;
}

#ifndef NVML_DOUBLE_CUDA14
EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t g, int policy, nvmlViolationTime_t *v)
{
    struct timespec now, wall;
    double since_s;
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetViolationStatus");
    if (policy != 0 && policy != 1) /* NVML_PERF_POLICY_POWER, _THERMAL */
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(g, F_VIOLATION)) != NVML_SUCCESS)
        return rc;
    clock_gettime(CLOCK_MONOTONIC, &now);
    clock_gettime(CLOCK_REALTIME, &wall);
    since_s = (double)(now.tv_sec - d.t0.tv_sec) + (double)(now.tv_nsec - d.t0.tv_nsec) / 1e9;
    v->referenceTime = (unsigned long long)wall.tv_sec * 1000000ull + wall.tv_nsec / 1000;
    v->violationTime =
        (unsigned long long)(since_s * (policy ? g->thermal_ms_per_s : g->power_ms_per_s) * 1e6);
    return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t g, int type, int counter,
                                                unsigned long long *n)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetTotalEccErrors");
    if ((type != 0 && type != 1) || counter != 0) /* volatile only here */
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(g, F_ECC)) == NVML_SUCCESS)
        *n = type ? g->ecc_u : g->ecc_c;
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t g, unsigned int *corr, unsigned int *unc,
                                              unsigned int *pending, unsigned int *failed)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetRemappedRows");
    if ((rc = dbl_gate(g, F_REMAP)) != NVML_SUCCESS)
        return rc;
    *corr = (unsigned int)((g->rows + 1) / 2);
    *unc = (unsigned int)(g->rows / 2);
    *pending = *failed = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t g, unsigned int *n)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetPcieReplayCounter");
    if ((rc = dbl_gate(g, F_PCIE)) == NVML_SUCCESS)
        *n = (unsigned int)g->pcie;
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t g, unsigned int link, int *active)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetNvLinkState");
    if ((rc = dbl_gate(g, F_NVLINK)) != NVML_SUCCESS)
        return rc;
    if (link >= LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = link < LINKS_ACTIVE;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t g, unsigned int link, int counter,
                                                    unsigned long long *n)
{
    unsigned long long cell = (unsigned long long)link * 4 + (unsigned int)counter;
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceGetNvLinkErrorCounter");
    if ((rc = dbl_gate(g, F_NVLINK)) != NVML_SUCCESS)
        return rc;
    if (link >= LINKS || counter < 0 || counter > 4) /* DL_REPLAY .. DL_ECC_DATA */
        return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= LINKS_ACTIVE || counter == 4)
        *n = 1000; /* a down link, or the ECC counter the agent does not sum */
    else           /* the total spread over the 16 active cells */
        *n = g->nvlink / 16 + (cell < g->nvlink % 16);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    dbl_call("nvmlEventSetCreate");
    if (!d.inits)
        return NVML_ERROR_UNINITIALIZED;
    d.set.live = 1;
    *set = &d.set;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t g, unsigned long long types,
                                             nvmlEventSet_t set)
{
    nvmlReturn_t rc;

    dbl_call("nvmlDeviceRegisterEvents");
    if (set != &d.set || !set->live)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = dbl_gate(g, F_XID)) == NVML_SUCCESS)
        g->registered = (types & XID_EVENT) != 0;
    return rc;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *e,
                                        unsigned int timeout_ms)
{
    dbl_call("nvmlEventSetWait_v2");
    if (set != &d.set || !set->live || !e)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < d.gpus; i++) {
        struct nvmlDevice_st *g = &d.gpu[i];

        if (!g->registered || g->lost || g->delivered >= g->xids)
            continue;
        g->delivered++;
        memset(e, 0, sizeof(*e));
        e->device = g;
        e->eventType = XID_EVENT;
        e->eventData = g->xid_code;
        e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFFu;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_TIMEOUT; /* never waits: the agent asks with timeout 0 */
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    dbl_call("nvmlEventSetFree");
    if (set != &d.set || !set->live)
        return NVML_ERROR_INVALID_ARGUMENT;
    set->live = 0;
    for (unsigned int i = 0; i < GPUS_MAX; i++)
        d.gpu[i].registered = 0, d.gpu[i].delivered = 0;
    return NVML_SUCCESS;
}
