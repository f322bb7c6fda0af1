/* argus-sim's delivery schedule: when each agent stream seals and sends
 * which steps, as a pure function of the options and the seed (no network,
 * no clock), so the schedule is unit-tested on its own and a run is
 * reproducible.
 *
 * Time. Every time here is ns from the start of the run. Agent a's ranks
 * finish step s at produce(a, s) = shift(a) + s * period, period = 1/rate;
 * shift(a) is the agent's start offset, uniform in [0, start_spread), plus in
 * lockstep the old phase a/agents of a period (so lockstep is what argus-sim
 * always did).
 *
 * Batches. Modes:
 *   lockstep    every agent seals steps_per_batch steps at once and sends at
 *               the seal: all streams within one step of each other.
 *   age         like the real agent's batcher (agent/delivery/batcher.h): a
 *               batch opens with the first step after the last seal and is
 *               sealed when that step is max_age old (or holds max_records
 *               records); it holds every step produced before its seal.
 *   realistic   age, with a random batcher phase per agent (its first batch
 *               is sealed after a random part of max_age), a fixed random
 *               delay per stream in [0, delay] and a random jitter per batch
 *               in [0, jitter] between seal and send.
 * Then, in every mode, a send inside a stall window of its node (the stream
 * paused, still connected) waits for the window's end, and a send inside an
 * outage window (the stream disconnected) is spooled and replayed in order at
 * the window's end (replay = true). Sends of one stream stay in seal order.
 *
 * Clock offset. A node's offset (signed ns) is added to the times written
 * into its records and to its batches' created_unix_ns (restamp.h). */
#ifndef ARGUS_SIM_DELIVERY_H
#define ARGUS_SIM_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum delivery_mode {
    DELIVERY_LOCKSTEP = 0,
    DELIVERY_AGE = 1,
    DELIVERY_REALISTIC = 2,
};

/* A window of one node's stream: [at_ns, at_ns + len_ns). */
struct delivery_window {
    uint32_t node;
    uint64_t at_ns, len_ns;
};

/* One node's clock offset. */
struct delivery_offset {
    uint32_t node;
    int64_t ns;
};

struct delivery_options {
    enum delivery_mode mode;
    double rate;              /* steps per second per rank; 0 = all due at once */
    uint64_t steps;           /* steps per rank */
    uint64_t steps_per_batch; /* lockstep: steps per batch */
    uint64_t max_age_ns;      /* age, realistic: the batcher's max_age */
    uint64_t max_records;     /* age, realistic: the batcher's max_steps (records) */
    uint64_t start_spread_ns, delay_ns, jitter_ns;
    uint64_t seed;
    const struct delivery_window *stalls, *outages; /* not owned; copied by the plan */
    size_t nstalls, noutages;
    const struct delivery_offset *offsets; /* not owned; copied */
    size_t noffsets;
};

/* One batch of one agent. */
struct delivery_batch {
    uint64_t first_step;
    uint32_t nsteps;
    uint64_t seal_ns; /* when the agent seals it */
    uint64_t send_ns; /* earliest send */
    bool replay;      /* held back by an outage, replayed at its end */
};

struct delivery_plan;

/* Plan the run of nagents agents, agent a holding nranks[a] ranks. Returns
 * 0 and *out (free with delivery_plan_free), -EINVAL with a sentence in err
 * (a window or offset naming a node that does not exist, age batching without
 * a rate), or -ENOMEM. */
int delivery_plan_new(const struct delivery_options *o, size_t nagents, const uint32_t *nranks,
                      struct delivery_plan **out, char *err, size_t errlen);
void delivery_plan_free(struct delivery_plan *p);

/* Agent a's batches, in seal order (valid until delivery_plan_free). */
size_t delivery_plan_batches(const struct delivery_plan *p, uint32_t a);
const struct delivery_batch *delivery_plan_batch(const struct delivery_plan *p, uint32_t a,
                                                 size_t k);

/* Index of agent a's batch that holds step, or SIZE_MAX past the last. */
size_t delivery_plan_find(const struct delivery_plan *p, uint32_t a, uint64_t step);

/* Agent a's clock offset in ns (0 when none). */
int64_t delivery_plan_clock_offset(const struct delivery_plan *p, uint32_t a);

/* True when agent a's stream must not send at t_ns; *until_ns is then the
 * end of that window. *outage says whether the stream is disconnected (an
 * outage) rather than paused (a stall). */
bool delivery_plan_blocked(const struct delivery_plan *p, uint32_t a, uint64_t t_ns,
                           uint64_t *until_ns, bool *outage);

/* True when batches must be restamped at send time (restamp.h): any mode
 * but lockstep, or any clock offset. */
bool delivery_plan_restamps(const struct delivery_plan *p);

/* Parse "NODE:AT:SECONDS[,NODE:AT:SECONDS...]" (AT and SECONDS in seconds,
 * fractions allowed; "" = none). Returns the count (*out malloc'd, caller
 * frees) or -EINVAL with a sentence in err, or -ENOMEM. */
long delivery_parse_windows(const char *s, struct delivery_window **out, char *err, size_t errlen);

/* Parse "NODE:SECONDS[,...]" (signed seconds), like delivery_parse_windows. */
long delivery_parse_offsets(const char *s, struct delivery_offset **out, char *err, size_t errlen);

/* The offset of node in a parsed list (0 when absent). */
int64_t delivery_offset_of(const struct delivery_offset *o, size_t n, uint32_t node);

#endif
