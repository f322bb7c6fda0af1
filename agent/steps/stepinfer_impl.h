/* What agent/steps/stepinfer.c (windows, scanning, emitting) and
 * agent/steps/stepinfer_model.c (finding a rank's model, the vote, the
 * numbering) share. Not a public interface: see stepinfer.h. */
#ifndef ARGUS_AGENT_STEPINFER_IMPL_H
#define ARGUS_AGENT_STEPINFER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/steps/stepcounters.h"
#include "agent/steps/stepdetect.h"
#include "agent/steps/stepinfer.h"
#include "common/clock.h"

#define STEPINFER_DETECT_STEPS 256 /* steps one detection reports */
#define STEPINFER_MAX_COLLS 1024   /* collectives one step record carries */
#define STEPINFER_MAX_COMMS 16     /* groups per rank; more share the last slot */
#define STEPINFER_MIN_STEPS 8      /* whole steps a detection must span */
#define STEPINFER_MIN_CALLS 48     /* calls before the first detection */
#define STEPINFER_REORDER 16       /* how late a call may arrive and be put in place */
#define STEPINFER_MISFIT_UNLOCK 4  /* misfits in the last 16 steps that unlock a model */
#define STEPINFER_VOTE_TICKS 5     /* ticks a rank waits for another to agree */
#define STEPINFER_MAX_PENDING 16   /* processes kept before they are known ranks */

struct stepinfer_comm {
    uint64_t id;
    int64_t last_seq; /* g of its last call, -1 before the first */
    bool lib;         /* the library numbered at least one of its calls */
};

/* What the window holds besides the stepdetect_call of each call. */
struct stepinfer_entry {
    uint64_t seq;     /* g: the call's sequence number in its group */
    uint64_t comm_id; /* the process-local handle */
    uint32_t comm;    /* index into the rank's comms */
    bool shared;      /* g is the library's */
    uint64_t group;   /* the id shared by the group's members, 0 unknown */
    uint64_t done_ns; /* host end, 0 unknown */
};

/* How a locked rank's steps are cut and numbered (see stepinfer.h). */
struct stepinfer_model {
    bool locked;
    bool lib;       /* the anchor's sequence numbers are the library's (the same on every rank) */
    uint32_t calls; /* calls per step, all groups */
    uint32_t anchor;
    uint64_t span, phase;
    uint64_t gap_threshold_ns; /* gaps above it are compute */
    uint64_t step_ns;          /* the detected step time (median) */
    uint64_t signature;        /* stepinfer_signature of the detected step */
    uint16_t misfits;          /* the last 16 steps, a bit set for each that did not fit */
    int64_t base;              /* added to the numbers: continues them after a relock */
};

struct stepinfer_rank {
    uint32_t pid, rank;
    char *job;
    struct stepdetect_call *calls; /* calls[0..n), by arrival */
    struct stepinfer_entry *entries;
    size_t n;
    struct stepinfer_comm comms[STEPINFER_MAX_COMMS];
    uint32_t ncomms;
    struct stepinfer_model model;
    struct stepinfer_model candidate; /* found at this tick, before the vote */
    bool has_candidate;
    uint32_t waited;              /* ticks with a candidate but no agreement yet */
    int64_t last_step;            /* number of the last emitted step, -1 before the first */
    bool fitted;                  /* a step with the model's number of calls was emitted */
    uint64_t closed_ns;           /* arrival of the call that closed the last emitted step */
    struct stepcounters counters; /* host counter samples not given to a step yet */
};

struct stepinfer {
    assembler_step_fn emit;
    void *ctx;
    const struct clock_offset *clock;
    struct stepinfer_rank **ranks;
    size_t nranks;
    uint64_t *scratch;
    struct stepdetect_call *detect; /* the window with the group folded into name_id */
    struct stepdetect_step *steps;
    Argus__V1__Collective *colls, *coll_ptrs[STEPINFER_MAX_COLLS];
    struct stepinfer_stats stats;
};

/* The operations of calls [from, to), in any order. */
uint64_t stepinfer_signature(const struct stepinfer_rank *r, size_t from, size_t to);
/* Find a model from the period of the rank's window into *out. Returns 0,
 * or -EAGAIN when the window shows no steps yet. */
int stepinfer_detect(struct stepinfer *si, struct stepinfer_rank *r, struct stepinfer_model *out);
/* Lock r on the model most ranks of its job on this agent found, else on
 * its own candidate (unless forced, wait for two to agree). Returns whether
 * it locked. */
bool stepinfer_lock(struct stepinfer *si, struct stepinfer_rank *r, bool force);
/* Does call i open a step of the locked model; the step number it opens. */
bool stepinfer_opens(const struct stepinfer_rank *r, size_t i);
int64_t stepinfer_number(const struct stepinfer_rank *r, size_t i);

#endif
