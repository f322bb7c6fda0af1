/* Deterministic step records for argus-sim: the same (seed, job, rank, step)
 * always gives the same record, so a verifier can regenerate what was sent. */
#ifndef ARGUS_SIM_GEN_H
#define ARGUS_SIM_GEN_H

#include <stdint.h>

#include "proto/argus.pb-c.h"

#define GEN_PHASES 4
#define GEN_KERNEL_GROUPS 12
#define GEN_CLUSTERS 2
#define GEN_COLLECTIVES 2
#define GEN_NAMES (GEN_PHASES + GEN_KERNEL_GROUPS + 1)

struct gen_layout {
    uint32_t world;          /* ranks */
    uint32_t ranks_per_node; /* 8 */
    uint32_t tp, pp;         /* sizes; dp = world / (tp * pp) */
};

/* Storage for one generated record: the protobuf-c structs point into it. */
struct gen_step {
    Argus__V1__StepRecord rec;
    Argus__V1__HostCounters host;
    Argus__V1__HwCounters hw; /* a healthy GPU's (sim_hw.h) */
    Argus__V1__Phase phase[GEN_PHASES], *phase_ptr[GEN_PHASES];
    Argus__V1__KernelGroup group[GEN_KERNEL_GROUPS], *group_ptr[GEN_KERNEL_GROUPS];
    Argus__V1__Cluster cluster[GEN_KERNEL_GROUPS][GEN_CLUSTERS];
    Argus__V1__Cluster *cluster_ptr[GEN_KERNEL_GROUPS][GEN_CLUSTERS];
    Argus__V1__Collective coll[GEN_COLLECTIVES], *coll_ptr[GEN_COLLECTIVES];
};

/* Fill g with the record of (job, rank, step). job must outlive g.
 * base_unix_ns is the job's start; step_ns its nominal step time. */
void gen_step(struct gen_step *g, uint64_t seed, const char *job, uint32_t rank, uint64_t step,
              uint64_t base_unix_ns, uint64_t step_ns);

/* Fill r (strings point into static or caller storage: node must outlive r). */
void gen_resource(Argus__V1__Resource *r, const struct gen_layout *l, const char *job,
                  uint32_t rank, const char *node);

/* The i-th dictionary name (0 <= i < GEN_NAMES). */
const char *gen_name(unsigned i);

#endif
