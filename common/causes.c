/* The causes table: see causes.h. */
#include "common/causes.h"

#include <string.h>
#include <strings.h>

#define L1 CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_L1_ITERATION)
#define L2 CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_L2_PHASE)
#define L3 CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_L3_KERNEL)
#define LSILENT CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_SILENT)
#define LLIVE CAUSES_LEVEL(ARGUS__V1__LEVEL__LEVEL_LIVENESS)

/* Indexed by value; a row per value, none missing (test_causes.c). */
static const struct causes_row causes_table[] = {
    [ARGUS__V1__CAUSE__CAUSE_UNKNOWN] =
        {.value = ARGUS__V1__CAUSE__CAUSE_UNKNOWN,
         .name = "UNKNOWN",
         .label = "unknown",
         .word = "unknown",
         .meaning = "not said: a report of a collector that did not set it",
         .audience = CAUSES_FOR_NOBODY,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "none"},
    [ARGUS__V1__CAUSE__CAUSE_COMPUTE] =
        {.value = ARGUS__V1__CAUSE__CAUSE_COMPUTE,
         .name = "COMPUTE",
         .label = "compute",
         .word = "compute",
         .meaning = "the rank's GPU work is slow: a phase or its kernels take longer than its "
                    "peers'",
         .levels = L1 | L2 | L3,
         .pages = true,
         .fleet = true,
         .persists = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "the phase or kernel, its time vs the group median (robust z, or W1 of "
                     "kernel times), the rank's own kernel time, persisted M/N steps; an L1 "
                     "spike: the steps, peak vs rolling median, how late the rank arrived"},
    [ARGUS__V1__CAUSE__CAUSE_LINK] =
        {.value = ARGUS__V1__CAUSE__CAUSE_LINK,
         .name = "LINK",
         .label = "link",
         .word = "link",
         .meaning = "a collective's transfers are slow: a link, NIC or switch of the rank or its "
                    "peer group",
         .levels = L2,
         .pages = true,
         .fleet = true,
         .persists = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_PEERS,
         .evidence = "the collective's transfer time vs the group median (z), or the whole "
                     "group's vs its stage's groups, persisted M/N steps"},
    [ARGUS__V1__CAUSE__CAUSE_HOST] =
        {.value = ARGUS__V1__CAUSE__CAUSE_HOST,
         .name = "HOST",
         .label = "host",
         .word = "host",
         .meaning = "the host side stalls, with host evidence against its peers: the rank "
                    "arrives late at collectives while its threads are blocked off-CPU "
                    "outside them, or its threads wait for a CPU",
         .levels = L1 | L2,
         .pages = true,
         .fleet = true,
         .persists = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "late arrival at collectives with off-CPU time outside collectives, or "
                     "run-queue wait, vs the group median (z), phases normal, persisted M/N "
                     "steps"},
    [ARGUS__V1__CAUSE__CAUSE_DATA_SKEW] =
        {.value = ARGUS__V1__CAUSE__CAUSE_DATA_SKEW,
         .name = "DATA_SKEW",
         .label = "data_skew",
         .word = "data skew",
         .meaning = "slowness moves from rank to rank: work imbalance (e.g. variable sequence "
                    "length), not a bad rank",
         .levels = L2,
         .audience = CAUSES_FOR_JOB_OWNER,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "how many ranks the slowness moved over in how many of the window's "
                     "steps, none persisted"},
    [ARGUS__V1__CAUSE__CAUSE_SILENT] =
        {.value = ARGUS__V1__CAUSE__CAUSE_SILENT,
         .name = "SILENT",
         .label = "silent",
         .word = "silent",
         .meaning = "a node's agent or a rank stopped reporting while the job went on",
         .levels = LSILENT,
         .pages = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "how long nothing came from the node's agent and its ranks, or no step "
                     "record from the rank while its agent went on"},
    [ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION] =
        {.value = ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION,
         .name = "JOB_REGRESSION",
         .label = "job_regression",
         .word = "job regression",
         .meaning = "the whole job got slower: a change point of step time that the job's "
                    "phases or kernels confirm",
         .levels = L1,
         .audience = CAUSES_FOR_JOB_OWNER,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "the step-time ratio since the change point (L1 on log T) and the phase "
                     "or kernel across the job that confirms it"},
    [ARGUS__V1__CAUSE__CAUSE_HANG] =
        {.value = ARGUS__V1__CAUSE__CAUSE_HANG,
         .name = "HANG",
         .label = "hang",
         .word = "hang",
         .meaning = "the job waits inside a collective that this rank never entered",
         .levels = LLIVE,
         .pages = true,
         .fleet = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "the collective (group, sequence number, operation), which ranks wait in "
                     "it and since when, what the rank is doing instead (process state, the "
                     "syscall it is blocked in, CPU use, its last native stack, its last step)"},
    [ARGUS__V1__CAUSE__CAUSE_EXITED] =
        {.value = ARGUS__V1__CAUSE__CAUSE_EXITED,
         .name = "EXITED",
         .label = "exited",
         .word = "rank died",
         .meaning = "the rank's process ended with a signal or an error while its job ran: "
                    "the first of the job to go",
         .levels = LLIVE,
         .pages = true,
         .fleet = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "how it ended (signal, core dump, exit code) and when, its last step, "
                     "which ranks ended after it and how"},
    [ARGUS__V1__CAUSE__CAUSE_IMBALANCE] =
        {.value = ARGUS__V1__CAUSE__CAUSE_IMBALANCE,
         .name = "IMBALANCE",
         .label = "imbalance",
         .word = "workload imbalance",
         .meaning = "the rank does more work than its peers on a healthy host (a bigger batch "
                    "or shard): the job owner's to fix, never the node's",
         .levels = L1 | L2 | L3,
         .persists = true,
         .audience = CAUSES_FOR_JOB_OWNER,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "how late it arrives at collectives or how much longer it computes, with "
                     "its host counters at the group's (run queue, off-CPU) and its kernels "
                     "the same shapes"},
    [ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED] =
        {.value = ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED,
         .name = "GPU_THROTTLED",
         .label = "gpu_throttled",
         .word = "GPU throttled",
         .meaning = "a compute straggler whose GPU slowed its clocks (power cap, heat, a HW "
                    "slowdown) in most of its steps while its peers' GPUs did not",
         .levels = L1 | L2 | L3,
         .pages = true,
         .fleet = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_NODE,
         .evidence = "the compute finding, and the GPU's throttle reasons in how many of the "
                     "window's steps, its SM clock and temperature against its peers' medians "
                     "(NVML, StepRecord.hw)"},
    [ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND] =
        {.value = ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND,
         .name = "DIAG_BLIND",
         .label = "diag_blind",
         .word = "diagnosis blind",
         .meaning = "argus itself: diagnosis of the job shed work (steps closed early for its "
                    "memory budget, late records beyond the horizon, a full queue), so a "
                    "straggler may go unnamed",
         .levels = L1 | L2 | L3,
         .pages = true,
         .audience = CAUSES_FOR_ON_CALL,
         .grouping = CAUSES_GROUP_JOB,
         .evidence = "what was shed, by reason, and the share of the job's records not "
                     "diagnosed since the episode began; the setting to raise",
         .alertname = "ArgusBlind",
         .severity = "warning"},
};

#define CAUSES_ROWS ((int)(sizeof(causes_table) / sizeof(causes_table[0])))

_Static_assert(sizeof(causes_table) / sizeof(causes_table[0]) <= CAUSES_MAX,
               "CAUSES_MAX must cover every cause");

int causes_count(void)
{
    return CAUSES_ROWS;
}

bool causes_known(int cause)
{
    return cause >= 0 && cause < CAUSES_ROWS && causes_table[cause].name;
}

const struct causes_row *causes_get(int cause)
{
    return causes_known(cause) ? &causes_table[cause]
                               : &causes_table[ARGUS__V1__CAUSE__CAUSE_UNKNOWN];
}

const struct causes_row *causes_by_name(const char *name)
{
    if (!name)
        return NULL;
    if (strlen(name) > 6 && strncasecmp(name, "CAUSE_", 6) == 0)
        name += 6;
    for (int c = 0; c < CAUSES_ROWS; c++)
        if (causes_table[c].name && strcasecmp(causes_table[c].name, name) == 0)
            return &causes_table[c];
    return NULL;
}

bool causes_pages(int cause)
{
    return causes_get(cause)->pages;
}

const char *causes_alertname(int cause)
{
    const char *n = causes_get(cause)->alertname;

    return n ? n : "ArgusStraggler";
}

const char *causes_severity(int cause)
{
    const char *n = causes_get(cause)->severity;

    return n ? n : "page";
}

bool causes_fleet(int cause)
{
    return causes_get(cause)->fleet;
}

Argus__V1__Cause causes_persisted(int index)
{
    for (int c = 0; c < CAUSES_ROWS; c++)
        if (causes_table[c].persists && index-- == 0)
            return causes_table[c].value;
    return ARGUS__V1__CAUSE__CAUSE_UNKNOWN;
}

static const char *const causes_level_labels[] = {
    [ARGUS__V1__LEVEL__LEVEL_UNKNOWN] = "unknown", [ARGUS__V1__LEVEL__LEVEL_L1_ITERATION] = "L1",
    [ARGUS__V1__LEVEL__LEVEL_L2_PHASE] = "L2",     [ARGUS__V1__LEVEL__LEVEL_L3_KERNEL] = "L3",
    [ARGUS__V1__LEVEL__LEVEL_SILENT] = "silent",   [ARGUS__V1__LEVEL__LEVEL_LIVENESS] = "liveness",
};
#define CAUSES_LEVELS ((int)(sizeof(causes_level_labels) / sizeof(causes_level_labels[0])))

const char *causes_level_label(int level)
{
    return level > 0 && level < CAUSES_LEVELS ? causes_level_labels[level] : "unknown";
}

int causes_level_by_label(const char *label)
{
    const ProtobufCEnumValue *v;

    if (!label)
        return 0;
    for (int l = 1; l < CAUSES_LEVELS; l++)
        if (strcasecmp(causes_level_labels[l], label) == 0)
            return l;
    v = protobuf_c_enum_descriptor_get_value_by_name(&argus__v1__level__descriptor, label);
    return v ? v->value : 0;
}
