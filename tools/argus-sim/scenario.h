/* Fault scenarios for argus-sim (--scenario NAME): the step records of a
 * whole job come from the diagnosis scenario generator
 * (tools/argus-sim/diag_scenario.h: collectives as sync points, per-node clock
 * offsets, KDE-style kernel clusters) and are cut into per-agent batches by
 * the agent's own batcher, so names and resources travel exactly as a real
 * agent sends them. The ground truth (culprit ranks and cause) is printed
 * with the run's summary. */
#ifndef ARGUS_SIM_SCENARIO_H
#define ARGUS_SIM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/argus-sim/sim.h"

struct scenario_truth {
    const char *name;
    const char *cause;  /* "COMPUTE", "LINK", "SILENT", "JOB_REGRESSION", "HANG", "EXITED",
                         * "" (no page) */
    uint32_t *culprits; /* ranks that must be paged, malloc'd */
    size_t nculprits;
    uint64_t onset;
};

/* Called for each sealed batch of agent (0..agents-1): the frame (malloc'd,
 * ownership passes) carries seq, obtained from next_seq just before. */
struct scenario_sink {
    uint64_t (*next_seq)(void *ctx, uint32_t agent);
    uint64_t (*epoch)(void *ctx, uint32_t agent);
    int (*push)(void *ctx, uint32_t agent, uint64_t seq, void *frame, size_t len, uint32_t nsteps);
    void *ctx;
    /* Optional. True when agent's next batch ends with step (NULL: every
     * steps_per_batch steps, all agents at once). */
    bool (*seal_after)(void *ctx, uint32_t agent, uint64_t step);
    /* Optional. ns added to the times in agent's records (its node's clock). */
    int64_t (*clock_offset)(void *ctx, uint32_t agent);
    /* Needed by the liveness scenarios (hang, death, checkpoint): a batch
     * of statuses, no steps, due due_ns after the run's start. */
    int (*push_at)(void *ctx, uint32_t agent, uint64_t seq, void *frame, size_t len,
                   uint64_t due_ns);
};

/* True when name is a known scenario. */
int scenario_known(const char *name);

/* Generate every step of c->steps for c->scenario into per-agent frames.
 * Returns 0 and fills truth (free truth->culprits), or -EINVAL / -ENOMEM. */
int scenario_generate(const struct sim_config *c, const struct scenario_sink *sink,
                      struct scenario_truth *truth);

/* The names of all scenarios, comma-separated. */
const char *scenario_list(void);

#endif
