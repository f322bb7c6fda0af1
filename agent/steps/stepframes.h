/* Step records and their hottest host frames (the stacks probe).
 *
 * When a step ends, the stacks probe may still be naming some of the
 * step's samples on its symbolizer thread (agent/probes/probe_stacks.h). A record
 * whose window is not settled yet waits here, as a copy, until it is, or
 * at most wait_ns; then its top frames are attached and it goes on to the
 * batcher. One that ran out of time carries its still-unnamed samples as
 * the "[unresolved]" pseudo-frame, so each sample is counted once: named,
 * unresolved or dropped (see probe_stacks.h).
 *
 * Waiting records leave in arrival order per rank: a step's window settles
 * no later than the window of the rank's next step, and time runs out in
 * arrival order. At most max_waiting records wait; one more sends the
 * oldest on at once. Without a stacks source records pass straight through.
 * Single-threaded (the main loop). */
#ifndef ARGUS_AGENT_STEPFRAMES_H
#define ARGUS_AGENT_STEPFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/delivery/names.h"
#include "agent/probes/probe_stacks.h"
#include "common/clock.h"
#include "proto/argus.pb-c.h"

#define STEPFRAMES_TOP 5 /* frames attached to a step record */
#define STEPFRAMES_DEFAULT_WAIT_NS 2000000000ull
#define STEPFRAMES_DEFAULT_MAX_WAITING 4096

/* Where frames come from: the stacks probe (probe_stacks_settled and
 * probe_stacks_top_frames with its state), or a test double. */
struct stepframes_source {
    bool (*settled)(void *state, uint64_t to_ns);
    size_t (*top_frames)(void *state, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                         struct probe_stacks_frame *out, size_t max);
    void *state;
};

struct stepframes_options {
    const struct clock_offset *clock; /* step records carry UNIX time, samples monotonic */
    uint64_t wait_ns;                 /* 0 = STEPFRAMES_DEFAULT_WAIT_NS */
    size_t max_waiting;               /* 0 = STEPFRAMES_DEFAULT_MAX_WAITING */
    struct names *names;              /* frame names are defined here before a record is emitted */
    /* Gets each record with its frames; valid during the call. */
    void (*emit)(void *ctx, const Argus__V1__StepRecord *s);
    void *ctx;
};

struct stepframes_stats {
    uint64_t waited;     /* records that had to wait */
    uint64_t expired;    /* of those, sent on with samples still unresolved */
    uint64_t overflowed; /* sent on early: max_waiting records were waiting */
    size_t waiting;      /* now */
};

struct stepframes;

/* Returns NULL on allocation failure. */
struct stepframes *stepframes_new(const struct stepframes_options *o);

/* Free what still waits without emitting it (stepframes_flush first). sf
 * may be NULL. */
void stepframes_free(struct stepframes *sf);

/* Use src for frames from now on (copied), after emitting what waits on
 * the previous one; NULL: none, records pass straight through without
 * frames. */
void stepframes_set_source(struct stepframes *sf, const struct stepframes_source *src);

/* A step of pid has ended: emit it now with its frames, or keep a copy
 * until its window settles. Returns 0, or -ENOMEM (the record was emitted
 * at once, with the frames known so far). */
int stepframes_add(struct stepframes *sf, uint32_t pid, const Argus__V1__StepRecord *s,
                   uint64_t now_ns);

/* Emit the waiting records that have settled or waited wait_ns. */
void stepframes_tick(struct stepframes *sf, uint64_t now_ns);

/* When the oldest waiting record runs out of time (UINT64_MAX: none
 * waits), for the main loop's sleep; settling is noticed at the stacks
 * probe's own wakeups. */
uint64_t stepframes_next_ns(const struct stepframes *sf);

/* Emit every waiting record now (shutdown). */
void stepframes_flush(struct stepframes *sf);

void stepframes_get_stats(const struct stepframes *sf, struct stepframes_stats *out);

#endif
