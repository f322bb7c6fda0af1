/* Internal state of libargus-cupti.so, shared by inject.c (entry point,
 * CUPTI calls, buffer pool and callbacks), worker.c (the worker thread, the
 * ring, the hello socket, sampling, stepping aside) and records.c (the one
 * place that knows CUDA 13's record layout). Not a public header. */
#ifndef ARGUS_AGENT_CUPTI_LIB_H
#define ARGUS_AGENT_CUPTI_LIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "agent/cupti/ring.h"

#define LIB_POOL_MAX 64 /* buffers; the free/ready sets are 64-bit masks */

/* The CUPTI entry points, resolved with dlsym (the library never links it). */
struct cupti_fns {
    CUptiResult (*get_version)(uint32_t *);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*flush_period)(uint32_t); /* optional */
};

struct lib_buffer_meta {
    size_t valid;
    uint64_t seq;
};

struct lib_state {
    struct cupti_fns fn;
    void *cupti;

    /* buffer pool: one block of pool_count * buf_size bytes */
    uint8_t *pool;
    size_t buf_size;
    uint32_t pool_count;
    _Atomic uint64_t free_mask;  /* buffers CUPTI may have */
    _Atomic uint64_t ready_mask; /* completed, waiting for the worker */
    _Atomic uint64_t seq;
    struct lib_buffer_meta meta[LIB_POOL_MAX];
    _Atomic uint64_t empty_requests; /* requests answered with no buffer */

    /* worker */
    pthread_t worker;
    bool worker_running;
    int wake_fd; /* eventfd: completion -> worker */
    _Atomic int worker_sleeping;
    _Atomic int stop;

    /* configuration */
    uint32_t ring_slots;
    char socket_path[108];
    struct cupti_hello hello;
    uint64_t reconnect_ns;
    uint64_t probe_ns;

    /* cumulative counters (worker only, mirrored into the ring header) */
    uint64_t drops[CUPTI_DROP_REASONS];
    uint64_t records;
    uint64_t step_asides;
    bool stepped_aside;
};

extern struct lib_state lib;

/* The CUPTI activity kinds argus enables (kernels, copies, sets, runtime API
 * for correlation; MARKER is enabled separately and stays on while sampling). */
extern const CUpti_ActivityKind lib_traced_kinds[];
extern const size_t lib_traced_kinds_count;

/* Enable (on) or disable the traced kinds; MARKER with them when all is set. */
void lib_set_tracing(bool on, bool all);

/* Register argus's timestamp (CLOCK_MONOTONIC) and buffer callbacks with
 * CUPTI: at start, and again when coming back after another client left.
 * Returns the CUPTI result. */
CUptiResult lib_register(void);

/* worker.c: start the worker thread (0 or -errno) and stop it, draining what
 * CUPTI has completed into the ring first. */
int worker_start(void);
void worker_stop(void);

/* records.c: translate one CUPTI record into a span. Returns 1 and fills out
 * (name_id left 0) and *name (CUPTI-owned, may be NULL) when the record is one
 * argus keeps, 0 to skip it. */
struct lib_record {
    struct cupti_span span;
    const char *name; /* kernel or marker name, NULL for others */
    bool name_stable; /* pointer may be cached (kernel names) */
    bool range_end;   /* NVTX range end (span.aux = marker id) */
};
int records_translate(const CUpti_Activity *rec, struct lib_record *out);

/* records.c: the fixed name of a memcpy/memset kind. */
const char *records_copy_name(uint32_t copy_kind);

#endif
