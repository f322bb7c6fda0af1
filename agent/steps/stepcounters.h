/* Host counters of an unannotated rank by time range (agent/steps/stepinfer.h).
 *
 * The sched probe reads each thread's run-queue and off-CPU time every
 * 100 ms and hands on the growth since its last read; inferred steps are
 * cut later, once a second, from the collective calls. A sample is the
 * growth of one counter over (from_ns, to_ns] (from_ns: that counter's
 * previous sample; a counter's first sample is a point at to_ns, its range
 * unknown). A step (start_ns, end_ns] takes the share of every sample that
 * its range holds, the growth spread evenly over the sample's range; the
 * rest of a sample that reaches past end_ns stays for the next step, the
 * part before start_ns (before the first emitted step, or a hole) is
 * dropped. Steps are taken in time order.
 *
 * At most STEPCOUNTERS_SAMPLES samples are kept: when full, the oldest is
 * merged into the next one of its counter (which then spans both ranges),
 * so totals are kept whatever the step time. Plain struct, no allocation,
 * single-threaded. */
#ifndef ARGUS_AGENT_STEPCOUNTERS_H
#define ARGUS_AGENT_STEPCOUNTERS_H

#include <stdint.h>

#include "agent/sources/event.h"

#define STEPCOUNTERS_N AGENT_COUNTER_END /* counter ids 0..N-1 (enum agent_counter) */
#define STEPCOUNTERS_SAMPLES 128         /* 6.4 s of two counters polled every 100 ms */

struct stepcounters_sample {
    uint64_t from_ns, to_ns, value;
    uint32_t counter;
};

struct stepcounters {
    struct stepcounters_sample samples[STEPCOUNTERS_SAMPLES]; /* in arrival order */
    uint32_t n;
    uint64_t last_ns[STEPCOUNTERS_N]; /* to_ns of each counter's newest sample */
};

/* counter grew by value up to ts_ns (monotonic ns). Ignored for a counter
 * id >= STEPCOUNTERS_N or value 0; a second sample of the same counter at
 * the same ts_ns (another thread of the process, the same poll) is added
 * to the first. */
void stepcounters_add(struct stepcounters *c, uint32_t counter, uint64_t value, uint64_t ts_ns);

/* The growth of every counter within (start_ns, end_ns] into out[0..N),
 * taking it out of c (see above). */
void stepcounters_take(struct stepcounters *c, uint64_t start_ns, uint64_t end_ns,
                       uint64_t out[STEPCOUNTERS_N]);

#endif
