/* The `sync` probe: uprobes+uretprobes on the CUDA driver and runtime calls
 * that block the host on the GPU (cuStreamSynchronize, cuCtxSynchronize,
 * cudaStreamSynchronize, cudaDeviceSynchronize) and on allocations
 * (cudaMalloc, cuMemAlloc, cuMemAlloc_v2), in libcuda.so* and libcudart.so*
 * of tracked ranks. Emits AGENT_EVENT_COUNTER SYNC_WAIT_NS / ALLOC_NS with
 * the host time inside the call (ts = entry). A driver call made inside a
 * runtime call on the same thread (cudart's cudaStreamSynchronize calls
 * cuStreamSynchronize) is counted once, as the runtime call. */
#ifndef ARGUS_AGENT_PROBE_SYNC_H
#define ARGUS_AGENT_PROBE_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/sources/source.h"

struct argus_call_record;

struct probe_sync_config {
    bool all_processes;       /* no pid filter (benchmarks) */
    const char *const *files; /* extra library paths to attach at start, NULL-terminated */
};

struct probe_sync_call {
    const char *name;     /* static: "cudaStreamSynchronize" */
    uint32_t counter;     /* AGENT_COUNTER_SYNC_WAIT_NS or AGENT_COUNTER_ALLOC_NS */
    bool driver;          /* cu* (driver API) rather than cuda* (runtime) */
    uint64_t wait_ns;     /* exit - enter */
    uint64_t stream;      /* stream argument, 0 when none */
    uint64_t alloc_bytes; /* size argument of the allocations */
    int64_t ret;
};

/* Decode a raw record (pure). Returns 0 or -EINVAL (unknown cookie, exit
 * before enter). */
int probe_sync_decode(const struct argus_call_record *rec, struct probe_sync_call *out);

extern const struct source_ops probe_sync_ops;

#endif
