/* NVTX range projection onto the GPU, for one process (pure: no I/O).
 *
 * A range (step, forward, ...) on host thread T owns the kernels launched by
 * runtime calls made on T while it was open (correlation ids). Its GPU time
 * runs from the first such kernel's start to the last one's end, on the
 * stream with the most kernel time. Kernels are accumulated into every range
 * that owns them as they come, whichever of the launch record and the kernel
 * record arrives second, so a range may hold any number of launches; only
 * the pairing of a launch with its kernel needs the two to arrive within
 * CUPTI_PROJ_WINDOW launches of each other. */
#ifndef ARGUS_AGENT_SOURCE_CUPTI_PROJ_H
#define ARGUS_AGENT_SOURCE_CUPTI_PROJ_H

#include <stdbool.h>
#include <stdint.h>

#define CUPTI_PROJ_WINDOW (1u << 16) /* launches paired by correlation id */
#define CUPTI_PROJ_RANGES 64         /* ranges open or waiting for kernels */
#define CUPTI_PROJ_STREAMS 8         /* streams compared per range */

struct cupti_proj;

/* A projected phase: GPU time [start, start + dur) on stream. */
typedef void (*cupti_proj_emit_fn)(void *ctx, uint64_t name_id, uint64_t start, uint64_t dur,
                                   uint32_t stream);

/* New empty state (about 1.3 MB), or NULL. Free with cupti_proj_free (NULL ok). */
struct cupti_proj *cupti_proj_new(void);
void cupti_proj_free(struct cupti_proj *p);

/* A range began on thread tid (id: the NVTX marker id). Beyond
 * CUPTI_PROJ_RANGES at once the range is not projected (counted). */
void cupti_proj_open(struct cupti_proj *p, uint32_t id, uint64_t name_id, uint32_t tid,
                     uint64_t start);
/* The range with marker id ended at end (unknown ids are ignored). */
void cupti_proj_close(struct cupti_proj *p, uint32_t id, uint64_t end);
/* A runtime launch call on thread tid at start. */
void cupti_proj_launch(struct cupti_proj *p, uint32_t corr, uint32_t tid, uint64_t start);
/* A kernel (or copy/set) of launch corr ran on stream in [start, end). */
void cupti_proj_kernel(struct cupti_proj *p, uint32_t corr, uint32_t stream, uint64_t start,
                       uint64_t end);

/* Emit every ended range whose kernels have come: a later launch's kernel
 * was seen, or horizon_ns of GPU time passed its end, or all (the process is
 * gone). Ranges without kernels are dropped silently. Returns how many
 * phases were emitted. */
int cupti_proj_settle(struct cupti_proj *p, bool all, uint64_t horizon_ns, cupti_proj_emit_fn emit,
                      void *ctx);

/* Ranges not projected because CUPTI_PROJ_RANGES were in use. */
uint64_t cupti_proj_overflows(const struct cupti_proj *p);

#endif
