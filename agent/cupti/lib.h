/* The state of libargus-cupti.so: the CUPTI function table, the buffer
 * pool CUPTI's callbacks fill and the worker drains, the worker's settings
 * and counters. inject.c (the entry point, CUPTI calls, buffer pool and
 * callbacks) owns the one instance and hands it to the worker (worker.h),
 * which reads and writes it from its thread; the atomics are what the two
 * threads share. Not a public interface of the library. */
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

#endif
