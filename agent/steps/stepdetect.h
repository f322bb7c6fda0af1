/* Step detection without annotation: when a rank has no markers and no NVTX
 * steps, its steps are found from the period of its collective sequence.
 *
 * Calls are grouped into bursts (consecutive calls closer than a gap
 * threshold picked from the bimodal gap distribution), each burst gets a
 * signature (name id and bytes), the smallest period p over call signatures
 * that repeats (>= 90% of positions match) is taken and refined by the
 * period of the gaps (identical signatures, e.g. c10d calls without bytes,
 * still show one compute gap per step), and steps are cut before the call
 * position of each period that follows the longest gap: at the end of the
 * collective burst before it (the latest return), which is where a training
 * loop's optimizer step and next iteration begin. Pure: no I/O, no allocation of its own (the
 * caller gives scratch). */
#ifndef ARGUS_AGENT_STEPDETECT_H
#define ARGUS_AGENT_STEPDETECT_H

#include <stddef.h>
#include <stdint.h>

/* One collective call of one rank, in arrival order. */
struct stepdetect_call {
    uint64_t ts_ns;  /* host arrival */
    uint64_t end_ns; /* host return, or 0 / ts_ns when unknown */
    uint64_t name_id;
    uint64_t bytes;
};

/* One detected step: [start_ns, start_ns + step_ns), from the end of one
 * collective burst (of the call before first_call) to the end of the burst
 * that closes the period. compute_ns is the time from the end of each burst
 * to the next arrival inside the step, collective_ns the time inside bursts
 * (first arrival to last return); compute_ns + collective_ns == step_ns. */
struct stepdetect_step {
    uint64_t start_ns;
    uint64_t step_ns;
    uint64_t compute_ns;
    uint64_t collective_ns;
    uint32_t first_call; /* index of the call that opens the step */
    uint32_t ncalls;
};

struct stepdetect_opts {
    uint32_t max_period;   /* in bursts; 0 = 64 */
    uint64_t min_gap_ns;   /* gaps below this never split bursts; 0 = 50 us */
    double match_fraction; /* 0 = 0.9 */
};

struct stepdetect_info {
    uint32_t bursts;
    uint32_t period; /* bursts per step, 0 when no period was found */
    uint32_t phase;  /* index of the burst that opens the first whole step */
    uint64_t gap_threshold_ns;
};

/* Find the steps in calls[0..n) (sorted by ts_ns). Writes at most max_steps
 * into steps and returns how many were found (whole steps only: a step needs
 * a burst before it and one closing it), 0 when no period exists (too few bursts,
 * no repetition), or -EINVAL (NULL or unsorted input). info may be NULL.
 * Needs scratch memory: burst bookkeeping uses `scratch` of
 * 2 * n uint64_t entries provided by the caller. */
int stepdetect_find(const struct stepdetect_call *calls, size_t n,
                    const struct stepdetect_opts *opts, uint64_t *scratch,
                    struct stepdetect_step *steps, size_t max_steps, struct stepdetect_info *info);

#endif
