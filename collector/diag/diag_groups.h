/* Peer groups: ranks that do the same work (docs/design.md section 7, L2).
 *
 * Work groups: same pipeline stage and same tensor-parallel rank across the
 * data-parallel replicas, so every member runs the same layers on the same
 * shard and should take the same time. Expert groups: same stage and same
 * expert-parallel rank, used for expert phases and all-to-all. A rank
 * without coordinates (no Resource yet) goes into one "unknown" group,
 * which is right for pure data parallelism.
 */
#ifndef ARGUS_COLLECTOR_DIAG_GROUPS_H
#define ARGUS_COLLECTOR_DIAG_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIAG_GROUP_NONE UINT32_MAX
#define DIAG_GROUP_LABEL 32

enum diag_group_kind {
    DIAG_GROUP_WORK = 0,   /* (pp, tp) */
    DIAG_GROUP_EXPERT = 1, /* (pp, ep) */
};

/* Parallel coordinates of one rank (from argus.v1.Resource). */
struct diag_coord {
    bool known;   /* a Resource was seen */
    bool present; /* the rank exists in the job (resource or step seen) */
    uint32_t pp, tp, ep, dp;
};

/* Compressed rows: members of group g are members[start[g] .. start[g+1]). */
struct diag_groups {
    uint32_t n_ranks;
    uint32_t n_groups;
    uint32_t *group_of;              /* n_ranks; DIAG_GROUP_NONE for absent ranks */
    uint32_t *start;                 /* n_groups + 1 */
    uint32_t *members;               /* ranks in group order, ascending within a group */
    uint32_t *stage;                 /* pp stage of each group (UINT32_MAX unknown) */
    char (*label)[DIAG_GROUP_LABEL]; /* e.g. "pp=2,tp=0" */
};

/* Build groups of `kind` over coords[0..n). Replaces what g held (g zeroed
 * or built before). Returns 0 or -ENOMEM (g then empty but valid). O(n log n). */
int diag_groups_build(struct diag_groups *g, const struct diag_coord *coords, uint32_t n,
                      enum diag_group_kind kind);

/* Free the arrays; g stays valid and empty. */
void diag_groups_free(struct diag_groups *g);

/* Members of group gi and their count. */
static inline const uint32_t *diag_groups_members(const struct diag_groups *g, uint32_t gi,
                                                  uint32_t *n)
{
    *n = g->start[gi + 1] - g->start[gi];
    return g->members + g->start[gi];
}

/* The label of rank's group ("" when the rank has none). */
static inline const char *diag_groups_label_of(const struct diag_groups *g, uint32_t rank)
{
    uint32_t gi = rank < g->n_ranks ? g->group_of[rank] : DIAG_GROUP_NONE;

    return gi == DIAG_GROUP_NONE ? "" : g->label[gi];
}

#endif
