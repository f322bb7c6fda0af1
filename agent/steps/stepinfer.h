/* Steps of ranks that have no annotation (no marker, no NVTX step), from
 * their collective calls, numbered so that the same real step carries the
 * same number on every rank and node whenever the agent attached.
 *
 * Every rank of a group issues the same collectives in the same order, and
 * the library counts them: gloo's tag (c10d::ProcessGroupGloo::nextTag,
 * read by the collectives probe) is the group's own sequence number g of a
 * call, the same on every rank. A training step issues the same pattern of
 * collectives each time (DDP buckets, several groups, pipeline micro-batches,
 * gradient accumulation under no_sync), so once the pattern is known, the
 * step of a call is a function of g alone.
 *
 * Per rank this module keeps a bounded window of calls. Until the rank is
 * locked, it runs step detection (agent/steps/stepdetect.h: the period of
 * the call sequence, by signature and by the compute gap) over the window;
 * the detected step gives the model: the calls per step (all groups), the
 * anchor group (the group of the call that follows the compute gap, i.e.
 * the one that opens a step), its span (sequence numbers per step: g of the
 * next opening call minus g of this one, which also counts the group's calls
 * the probe does not see) and its phase (g mod span of an opening call).
 * The ranks of one job on this agent vote: a rank locks on the model most
 * of them found (detected at the same tick, or locked and fitting), so a
 * rank whose gaps are noisier (a busy CPU) cuts where the others cut; a
 * rank waits up to five ticks for another to agree. Then step n of the job
 * opens at the anchor call with g = phase + n * span and runs from the
 * latest return before that call to the latest return before the next
 * opening call: the step time is the period of the job's own loop, whatever
 * the number of calls in it. A step is emitted once both of its opening
 * calls are seen and their numbers are consecutive (a hole in the sequence
 * emits nothing). Numbering starts at the first two steps in a row that fit
 * the model (its number of calls and operations, a compute gap before the
 * opening call, at least half its step time: warm-up steps can be longer):
 * set-up collectives before the loop (DDP's broadcasts) are not steps.
 *
 * Without a library sequence (NCCL calls, whose communicator keeps its
 * count private, or gloo send/recv) g counts the calls the probe saw on the
 * group since the rank was tracked: aligned across ranks when the agent was
 * there before the job's first collective, not when it attached later (see
 * docs/design.md section 2.1).
 *
 * A locked rank whose steps stop fitting the model (4 of the last 16: the
 * job changed its pattern, e.g. evaluation or a new group) is unlocked and
 * detected again from the calls after its last emitted step; numbering goes
 * on from there (the first opening call after the last step gets the next
 * number) and never goes back.
 *
 * Each emitted step is a StepRecord with source INFERRED, phases "compute"
 * and "collectives", the step's collective calls (seq = g, comm_id = the
 * group's shared id, seq_local unless g is the library's and that id is
 * known; host_return from done_ns) and the host counters measured over its time range,
 * handed to the same callback as the assembler's steps. A rank that shows explicit steps (the
 * assembler says so) is left alone. Single-threaded (the main loop). */
#ifndef ARGUS_AGENT_STEPINFER_H
#define ARGUS_AGENT_STEPINFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/steps/assembler.h"
#include "common/clock.h"

#define STEPINFER_WINDOW 2048 /* calls kept per rank */

/* One collective call of one rank (monotonic ns). */
struct stepinfer_call {
    uint64_t enter_ns; /* host arrival */
    uint64_t exit_ns;  /* host return (or the end of its wait), 0 when unknown */
    uint64_t name_id;
    uint64_t bytes;   /* 0 when unknown */
    uint64_t comm;    /* communicator / process group (an id within the process), 0 unknown */
    int64_t lib_seq;  /* the library's own sequence number of the call in comm, -1 unknown */
    uint64_t group;   /* the communicator's id shared by its members, 0 unknown */
    uint64_t done_ns; /* the collective's host end (library done, wait returned), 0 unknown */
};

struct stepinfer;

/* emit gets each inferred step (valid during the call); clock converts its
 * times (it outlives si). NULL on allocation failure. */
struct stepinfer *stepinfer_new(assembler_step_fn emit, void *ctx,
                                const struct clock_offset *clock);
void stepinfer_free(struct stepinfer *si);

/* Start watching a rank (job is copied). Returns 0 or -ENOMEM. */
int stepinfer_track(struct stepinfer *si, uint32_t pid, const char *job, uint32_t rank);
/* Stop watching pid; with flush, first emit the steps its window still
 * holds (a rank that exits between two ticks keeps its last steps; what
 * that changed is in stepinfer_changes). */
void stepinfer_untrack(struct stepinfer *si, uint32_t pid, bool flush);

/* One collective call of pid, in arrival order (a call up to a few places
 * late is put in its place; later ones are dropped and counted). The calls
 * of a pid not tracked yet are kept (up to 16 such processes) and become
 * its rank's when it is tracked: a rank found from its communicator
 * (torch.multiprocessing.spawn) keeps its first steps. */
void stepinfer_call(struct stepinfer *si, uint32_t pid, const struct stepinfer_call *call);

/* The call (comm, lib_seq) of pid, given earlier, ended at done_ns (its
 * host end, known only after it was given). Ignored when the call is no
 * longer in the window or its step was emitted. */
void stepinfer_done(struct stepinfer *si, uint32_t pid, uint64_t comm, int64_t lib_seq,
                    uint64_t done_ns);

/* A host counter (enum agent_counter) of pid grew by value up to ts_ns
 * (monotonic), since its previous sample (the sched probe's deltas, polled
 * every 100 ms) or at ts_ns (the counter's first sample). The growth goes to
 * the inferred steps by time: a step gets the share of each sample's range
 * that lies in its own (spread evenly), so a delta lands on the steps it
 * was measured over, not on the first step emitted after it. The newest
 * STEPINFER_SAMPLES samples are kept per rank (older ones are merged). */
void stepinfer_counter(struct stepinfer *si, uint32_t pid, uint32_t counter, uint64_t value,
                       uint64_t ts_ns);

/* Detect and emit new steps of every rank for which explicit(ctx, pid) is
 * false (explicit may be NULL). What changed is in stepinfer_changes. */
void stepinfer_tick(struct stepinfer *si, bool (*explicit_steps)(void *ctx, uint32_t pid),
                    void *ctx);

/* A rank's model changed: it locked on a model (found, or outvoted) or its
 * steps stopped fitting and it is detected again. The module logs nothing;
 * the caller says what happened from these. */
struct stepinfer_change {
    uint32_t pid, rank;
    char job[128];     /* truncated when longer */
    bool locked;       /* true: locked on a model; false: unlocked */
    int64_t last_step; /* the last emitted step, -1 before the first */
    /* locked: calls a step; the opening call has g = phase mod span; the
     * numbers are g's step plus base; votes: ranks of the job that agreed */
    uint32_t calls;
    uint64_t phase, span;
    int64_t base;
    size_t votes;
    /* unlocked: the last 16 steps, a bit set for each that did not fit;
     * calls since the last opening one */
    uint16_t misfits;
    size_t calls_since;
};

#define STEPINFER_CHANGES 32 /* kept per tick; more are counted in changes_lost */

/* The model changes of the last stepinfer_tick or stepinfer_untrack, oldest
 * first; *n how many. Valid until the next call that changes si. */
const struct stepinfer_change *stepinfer_changes(const struct stepinfer *si, size_t *n);

struct stepinfer_stats {
    uint64_t steps;        /* emitted */
    uint64_t locks;        /* times a rank's model was found */
    uint64_t unlocks;      /* times a model stopped fitting */
    uint64_t holes;        /* gaps in a rank's opening calls (steps not emitted) */
    uint64_t late_calls;   /* calls dropped: too far out of order */
    uint64_t changes_lost; /* model changes beyond STEPINFER_CHANGES in one tick */
};
void stepinfer_get_stats(const struct stepinfer *si, struct stepinfer_stats *out);

/* Name ids of the phases inferred steps carry. */
#define STEPINFER_PHASE_COMPUTE "compute"
#define STEPINFER_PHASE_COLLECTIVES "collectives"

#endif
