/* argusctl nodes and argusctl exclude: fleet memory as people and
 * schedulers use it. Both take the NodesResponse of every member (merged:
 * merge_nodes.h) and rank its rows with common/fleet_rank.h: a node's score
 * is the distinct jobs in the window whose reports named it a
 * hardware-class culprit (collector/fleet/fleet.h says which count).
 *   nodes     the ranking, each node with its GPUs and the report that
 *             named it in each job; --suspect: only nodes at or above the
 *             collector's fleet.suspect_jobs
 *   exclude   the nodes at or above --min-jobs (0: fleet.suspect_jobs) for
 *             a scheduler: a comma-separated list for srun --exclude=
 *             (slurm), or a pod nodeAffinity with NotIn over
 *             kubernetes.io/hostname (k8s) */
#ifndef ARGUS_ARGUSCTL_NODES_H
#define ARGUS_ARGUSCTL_NODES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

enum nodes_format {
    NODES_FORMAT_SLURM = 0,
    NODES_FORMAT_K8S = 1,
};

struct nodes_options {
    bool json;
    bool suspect;             /* nodes: only the suspect ones */
    uint32_t min_jobs;        /* exclude: 0 = the answer's suspect_jobs */
    enum nodes_format format; /* exclude */
};

/* The format named text ("slurm", "k8s"); -EINVAL for anything else. */
int nodes_parse_format(const char *text, enum nodes_format *out);

/* Print the ranking of resp (its rows are sorted in place) to f: a table,
 * or JSON with o->json. Returns 0 or -ENOMEM. */
int nodes_print(FILE *f, Argus__V1__NodesResponse *resp, const struct nodes_options *o);

/* Print the exclude list of resp (rows sorted in place) to f in o->format
 * (or JSON); a node name that the format cannot carry is left out with a
 * warning on stderr. Returns the number of nodes printed, or -ENOMEM. */
int nodes_print_exclude(FILE *f, Argus__V1__NodesResponse *resp, const struct nodes_options *o);

#endif
