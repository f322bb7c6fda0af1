/* A rank's step model for the step inferrer (stepinfer.h): how its steps
 * are cut and numbered from the collective sequence. Pure functions over a
 * rank's window of calls (stepinfer_model.c): find a model from the period
 * of the window (stepdetect.h), pick the one most ranks of a job vote for,
 * say which call opens a step and its number, and continue the numbering
 * after a relock. No state of its own, no allocation, no log: stepinfer.c
 * owns the ranks and their windows and calls this module. */
#ifndef ARGUS_AGENT_STEPINFER_MODEL_H
#define ARGUS_AGENT_STEPINFER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/steps/stepdetect.h"

#define STEPINFER_DETECT_STEPS 256 /* steps one detection reports */
#define STEPINFER_MIN_STEPS 8      /* whole steps a detection must span */

/* A group (communicator) of a rank. */
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

/* A rank's window: calls[0..n) by arrival, with their entries. */
struct stepinfer_window {
    const struct stepdetect_call *calls;
    const struct stepinfer_entry *entries;
    size_t n;
    const struct stepinfer_comm *comms;
};

/* Room for one detection (the caller's, reused): scratch of 2 * n entries,
 * detect of n, steps of STEPINFER_DETECT_STEPS, n the largest window. */
struct stepinfer_model_scratch {
    uint64_t *scratch;
    struct stepdetect_call *detect; /* the window with the group folded into name_id */
    struct stepdetect_step *steps;
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
    uint64_t signature;        /* stepinfer_model_signature of the detected step */
    uint16_t misfits;          /* the last 16 steps, a bit set for each that did not fit */
    int64_t base;              /* added to the numbers: continues them after a relock */
};

/* The operations of calls [from, to), in any order. */
uint64_t stepinfer_model_signature(const struct stepdetect_call *calls, size_t from, size_t to);

/* Find a model from the period of window w into *out (a candidate: locked
 * set, the numbering not continued yet). Returns 0, or -EAGAIN when the
 * window shows no steps yet. */
int stepinfer_model_detect(const struct stepinfer_window *w, struct stepinfer_model_scratch *s,
                           struct stepinfer_model *out);

/* The model to lock on: own (the rank's candidate), unless own's numbers
 * are the library's and another of ballots[0..n) (the models of the job's
 * ranks: locked and fitting, or candidates of this tick; library-numbered
 * only) has more ballots that agree with it. *votes: the ballots that
 * agree with the one returned. */
const struct stepinfer_model *stepinfer_model_vote(const struct stepinfer_model *own,
                                                   const struct stepinfer_model *const *ballots,
                                                   size_t n, size_t *votes);

/* Does the call of entry e open a step of model m; the step number it opens. */
bool stepinfer_model_opens(const struct stepinfer_model *m, const struct stepinfer_entry *e);
int64_t stepinfer_model_number(const struct stepinfer_model *m, const struct stepinfer_entry *e);

/* After a relock on m, go on from last_step (-1: none emitted yet): the
 * first opening call of w at or after closed_ns (the arrival of the call
 * that closed that step) gets the next number; m->base is set so. m is
 * left alone when there is no such call. */
void stepinfer_model_continue(struct stepinfer_model *m, const struct stepinfer_window *w,
                              int64_t last_step, uint64_t closed_ns);

#endif
