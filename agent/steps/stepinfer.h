/* Steps of ranks that have no annotation (no marker, no NVTX step): the
 * collectives probe reports every collective call with its host return time;
 * this module keeps a bounded window of them per rank and, once a second,
 * runs step detection (agent/steps/stepdetect.h: the period of the collective
 * sequence) over it. Each newly completed step becomes a StepRecord with
 * source INFERRED, phases "compute" and "collectives" and the step's
 * collective calls, handed to the same callback as the assembler's steps.
 * A rank that shows explicit steps (the assembler says so) is left alone.
 * Single-threaded (the main loop). */
#ifndef ARGUS_AGENT_STEPINFER_H
#define ARGUS_AGENT_STEPINFER_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/steps/assembler.h"

#define STEPINFER_WINDOW 2048 /* calls kept per rank */

struct stepinfer;

/* emit gets each inferred step (valid during the call). */
struct stepinfer *stepinfer_new(assembler_step_fn emit, void *ctx, int64_t mono_to_real);
void stepinfer_free(struct stepinfer *si);

/* Start or stop watching a rank. */
int stepinfer_track(struct stepinfer *si, uint32_t pid, const char *job, uint32_t rank);
/* Stop watching pid; with flush, first emit the steps its window still
 * holds (a rank that exits between two ticks keeps its last steps). */
void stepinfer_untrack(struct stepinfer *si, uint32_t pid, bool flush);

/* One collective call (host arrival and return, monotonic ns). */
void stepinfer_call(struct stepinfer *si, uint32_t pid, uint64_t enter_ns, uint64_t exit_ns,
                    uint64_t name_id, uint64_t bytes);

/* Add to a host counter (enum agent_counter) of the rank's next inferred
 * step. */
void stepinfer_counter(struct stepinfer *si, uint32_t pid, uint32_t counter, uint64_t value);

/* Detect and emit new steps of every rank for which explicit(ctx, pid) is
 * false. */
void stepinfer_tick(struct stepinfer *si, bool (*explicit_steps)(void *ctx, uint32_t pid),
                    void *ctx);

/* Name ids of the phases inferred steps carry. */
#define STEPINFER_PHASE_COMPUTE "compute"
#define STEPINFER_PHASE_COLLECTIVES "collectives"

#endif
