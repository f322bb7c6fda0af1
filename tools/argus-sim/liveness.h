/* Liveness scenarios for argus-sim (hang, death, checkpoint): after the
 * ranks stop making progress, what their agents send (argus.v1.RankStatus,
 * as agent/liveness/ does: a status after 5 s without progress and every 5 s
 * while it lasts, one when a process ends), as batches due at plan times.
 *
 * The job is the scenario generator's (tools/argus-sim/diag_scenario.h: its
 * TP and DP communicators and their sequence numbers), stopped at step k:
 *   hang        the culprit is stopped (SIGSTOP) before its first collective
 *               of step k; its TP peers wait inside TP call k*4, every other
 *               rank inside DP call k (a chain of waits that ends at it);
 *   death       the culprit is killed by SIGKILL; every other rank exits
 *               with code 1 one to three seconds later (gloo's errors);
 *   checkpoint  every rank is outside collectives writing a checkpoint
 *               (D state in write) for the whole time, then every rank
 *               exits 0: no finding at all.
 * Status times are wall-clock: the run's start plus the plan time.
 */
#ifndef ARGUS_SIM_LIVENESS_H
#define ARGUS_SIM_LIVENESS_H

#include <stdint.h>

#include "proto/argus.pb-c.h"
#include "tools/argus-sim/diag_scenario.h"

enum liveness_kind {
    LIVENESS_NONE = 0,
    LIVENESS_HANG,
    LIVENESS_DEATH,
    LIVENESS_CHECKPOINT,
};

struct liveness_plan {
    enum liveness_kind kind;
    const char *job;
    uint32_t ranks, ranks_per_node;
    uint32_t culprit;
    uint64_t step;     /* the step the ranks stop at: records end before it */
    uint64_t stop_ns;  /* plan time (ns after the run's start) they stop */
    uint64_t unix0_ns; /* wall clock at the run's start */
    uint64_t for_ns;   /* how long the hang or checkpoint lasts */
    uint64_t seed;
};

/* One agent's batch of statuses, due at plan time due_ns; b and what it
 * points to are valid during the call (the callee sets agent id, epoch and
 * seq). Returns 0 or a negative errno, which stops the generation. */
typedef int (*liveness_emit_fn)(void *ctx, uint32_t agent, uint64_t due_ns, Argus__V1__Batch *b);

/* Emit p's statuses in due order. Returns 0, -EINVAL (kind NONE), -ENOMEM or
 * what emit returned. */
int liveness_generate(const struct liveness_plan *p, const struct diag_scn *s,
                      liveness_emit_fn emit, void *ctx);

#endif
