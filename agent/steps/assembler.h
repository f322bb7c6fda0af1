/* agent/steps, the stage that makes steps: it takes in the agent events of
 * the sources and probes (agent/sources/event.h: steps, phases, kernels,
 * collectives, host counters, in CLOCK_MONOTONIC ns) and gives out one
 * argus.v1.StepRecord per rank and step, with kernels summarised as KDE
 * clusters, to the delivery stage (agent/delivery/batcher.h). The assembler
 * (this header) is the entry point; summarize.h and kde.h turn a step's
 * kernels into clusters; stepinfer.h with stepdetect.h finds the steps of
 * ranks without annotations from their collective calls; stepframes.h holds
 * a finished record until the stacks probe has named its hottest frames.
 *
 * The step assembler: agent events of every tracked rank into one
 * argus.v1.StepRecord per rank and step. A step opens at a STEP event and
 * closes at the rank's next STEP event (its duration is the distance between
 * the two), or when the rank goes away. Between them, phases, kernels
 * (through the KDE summarizer, agent/steps/summarize.h), collectives and host
 * counters accumulate on the rank's open step. Events of pids that are not
 * tracked ranks are counted and ignored. Single-threaded (the main loop). */
#ifndef ARGUS_AGENT_ASSEMBLER_H
#define ARGUS_AGENT_ASSEMBLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/sources/event.h"
#include "common/clock.h"
#include "proto/argus.pb-c.h"

/* A finished step of the rank with pid; valid only during the call. */
typedef void (*assembler_step_fn)(void *ctx, uint32_t pid, const Argus__V1__StepRecord *step);

struct assembler_options {
    uint32_t max_phases;              /* per step; more are dropped and counted */
    uint32_t max_collectives;         /* per step */
    const struct clock_offset *clock; /* monotonic to UNIX time (outlives the assembler) */
};

struct assembler;

struct assembler *assembler_new(const struct assembler_options *o, assembler_step_fn fn, void *ctx);
void assembler_free(struct assembler *a);

/* Start tracking a rank: events with this resource's pid are its. The
 * resource is copied. Tracking a pid again replaces its resource. */
int assembler_track(struct assembler *a, const Argus__V1__Resource *r);

/* Stop tracking pid: its open step closes at the time of its last event. */
void assembler_untrack(struct assembler *a, uint32_t pid);

/* Feed one event (STEP, PHASE*, KERNEL, COLLECTIVE, COUNTER). */
void assembler_event(struct assembler *a, const struct agent_event *ev);

/* True when pid is tracked and has had a STEP event (marker, NVTX,
 * replay): its steps need no inference. */
bool assembler_has_steps(const struct assembler *a, uint32_t pid);

/* Close every open step (shutdown). */
void assembler_flush(struct assembler *a);

struct assembler_stats {
    uint64_t ranks; /* tracked now */
    uint64_t steps; /* closed steps */
    uint64_t events;
    uint64_t untracked;    /* events of unknown pids */
    uint64_t outside_step; /* events of a rank before its first step */
    uint64_t dropped_phases, dropped_collectives, dropped_kernels;
    uint64_t unknown_counters; /* COUNTER events of an id without a row (host_counters.h) */
};
void assembler_get_stats(const struct assembler *a, struct assembler_stats *out);

#endif
