/* Fleet memory's ranking (issue 29): the culprit rows of a NodesResponse
 * (one per node, GPU and job: collector/fleet/fleet.h) folded into nodes
 * ranked by the distinct jobs each was a hardware-class culprit of. The
 * collector ranks with it for /metrics and argusctl for nodes and exclude
 * (after merging a collector set's rows), so both count alike.
 * Pure: no I/O, no logging. */
#ifndef ARGUS_COMMON_FLEET_RANK_H
#define ARGUS_COMMON_FLEET_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* One node of the ranking. */
struct fleet_rank_node {
    const char *node;      /* the rows' string: valid while they are */
    uint32_t jobs;         /* distinct jobs it was a culprit of: its score */
    uint32_t gpus;         /* distinct GPU values among its rows (-1 counts as one) */
    uint64_t last_unix_ns; /* its newest row's report */
    size_t first, n;       /* its rows: rows[first .. first + n), by (job, gpu) */
};

/* Sort rows (n of them, none NULL) in place by (node, job, gpu) and set
 * *out to one entry per node, most jobs first, then the newest report,
 * then the node name. Rows with the same (node, gpu, job) count once.
 * Returns the number of nodes (*out malloc'd, caller frees; NULL when 0),
 * or -ENOMEM. */
int fleet_rank(Argus__V1__NodeCulprit **rows, size_t n, struct fleet_rank_node **out);

/* Distinct jobs among rows [first, first + n) (sorted by fleet_rank) that
 * named gpu. */
uint32_t fleet_rank_gpu_jobs(Argus__V1__NodeCulprit *const *rows, size_t first, size_t n,
                             int32_t gpu);

#endif
