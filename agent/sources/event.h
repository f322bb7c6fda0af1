/* What every source (eBPF probes, the CUPTI rings, replay) hands the agent:
 * one fixed-size event at a time, on the agent's main thread. The step
 * assembler (agent/steps/assembler) turns them into per-rank, per-step records.
 *
 * All timestamps are CLOCK_MONOTONIC ns (bpf_ktime_get_ns, CUPTI with the
 * argus timestamp callback). Names travel as name ids (common/name_id.h); a
 * source announces each id's string once through event_sink.name before or
 * with the first event that uses it. */
#ifndef ARGUS_AGENT_EVENT_H
#define ARGUS_AGENT_EVENT_H

#include <stdbool.h>
#include <stdint.h>

enum agent_event_kind {
    AGENT_EVENT_STEP = 1,    /* a step begins (marker argus_step(n), NVTX "step"/ProfilerStep#N) */
    AGENT_EVENT_PHASE_BEGIN, /* a phase begins (host or GPU time, see gpu flag) */
    AGENT_EVENT_PHASE_END,   /* the innermost open phase ends */
    AGENT_EVENT_PHASE,       /* a whole phase at once (e.g. NVTX range projected onto kernels) */
    AGENT_EVENT_KERNEL,      /* one GPU kernel (or memcpy/memset) */
    AGENT_EVENT_COLLECTIVE,  /* one collective call */
    AGENT_EVENT_COUNTER,     /* add to a host counter of the rank's current step */
    AGENT_EVENT_PROC_EXEC,   /* a process exec'd (pid): discovery should look at it */
    AGENT_EVENT_PROC_EXIT,   /* a process exited (pid, how: exit) */
    AGENT_EVENT_DROPS,       /* a source lost events: add to a drop counter */
    AGENT_EVENT_RANK,        /* a source knows a rank directly (replay, CUPTI hello) */
    AGENT_EVENT_RECORD,      /* a whole recorded step record (record replay) */
};

/* A host counter of the rank's step. A new one is a value here, a uint64
 * field in argus.v1.HostCounters and a row in agent/steps/host_counters.c
 * (which maps one to the other for every step maker). */
enum agent_counter {
    AGENT_COUNTER_OFF_CPU_NS = 1,
    AGENT_COUNTER_RUNQ_NS,
    AGENT_COUNTER_SYNC_WAIT_NS,
    AGENT_COUNTER_LAUNCHES,
    AGENT_COUNTER_RETRANSMITS,
    AGENT_COUNTER_IO_WAIT_NS,
    AGENT_COUNTER_ALLOC_NS,
    AGENT_COUNTER_END, /* one past the last: the size of arrays indexed by counter */
};

enum agent_kernel_kind {
    AGENT_KERNEL_COMPUTE = 0,
    AGENT_KERNEL_MEMCPY = 1,
    AGENT_KERNEL_MEMSET = 2,
};

struct agent_event {
    uint32_t kind; /* enum agent_event_kind */
    uint32_t pid;  /* process (tgid) of the rank; 0 = node-level */
    uint32_t tid;  /* thread, 0 when unknown */
    uint32_t flags;
    uint64_t ts_ns; /* when it happened (begin for spans) */
    union {
        struct {
            uint64_t number; /* step number, or UINT64_MAX for "next" */
            uint32_t source; /* argus.v1.StepSource */
        } step;
        struct {
            uint64_t name_id;
            uint64_t duration_ns; /* AGENT_EVENT_PHASE only */
            uint32_t stream;      /* GPU stream, 0 for host phases */
        } phase;
        struct {
            uint64_t name_id;
            uint64_t duration_ns;
            uint32_t stream;
            uint32_t correlation;
            uint32_t kernel_kind; /* enum agent_kernel_kind */
            uint32_t shape;       /* launch shape (common/work_id.h), 0 = unknown */
        } kernel;
        struct {
            uint64_t name_id; /* e.g. name_id("ncclAllReduce") */
            uint64_t seq;     /* per-communicator sequence number */
            uint64_t bytes;
            uint64_t comm_id;
            uint64_t gpu_start_ns; /* 0 when unknown */
            uint64_t gpu_end_ns;
            uint64_t host_return_ns; /* the call's end on the host (done/waited), 0 unknown */
            uint32_t stream;
        } collective;
        struct {
            uint32_t counter; /* enum agent_counter */
            uint64_t value;
        } counter;
        struct {
            uint64_t count;
            const char *reason; /* static string, e.g. "cupti_ring_full" */
        } drops;
        struct {
            /* an argus.v1.Resource (Argus__V1__Resource *), valid during the call;
             * its pid field is the key events of this rank carry */
            const void *resource;
        } rank;
        struct {
            const void *step; /* an argus.v1.StepRecord *, valid during the call */
        } record;
        struct {
            int32_t code;   /* exit status 0-255, -1 when a signal ended it or unknown */
            int32_t signal; /* the signal that ended it, 0 = none */
            bool core;      /* it dumped core */
        } exit;             /* PROC_EXIT */
    };
};

/* agent_event.flags */
#define AGENT_EVENT_FLAG_SAMPLED (1u << 0) /* STEP (NVTX): this step's kernels were traced */
#define AGENT_EVENT_FLAG_GPU (1u << 1)     /* PHASE: GPU time projected from NVTX, not host time */
#define AGENT_EVENT_FLAG_SEQ_SHARED (1u << 2) /* COLLECTIVE: seq is the library's (all members) */

/* Where a source delivers. Both callbacks run on the agent's main thread and
 * must not be called from another thread. */
struct event_sink {
    void (*event)(void *ctx, const struct agent_event *ev);
    /* Announce the string of a name id; name is copied. */
    void (*name)(void *ctx, uint64_t id, const char *name);
    void *ctx;
};

#endif
