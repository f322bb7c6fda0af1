/* The ranks of one job as the diagnosis engine knows them: where each runs
 * (node, GPU, from argus.v1.Resource), its parallel coordinates, whether it
 * is present, the declared world size, and what is built from them: the peer
 * groups (diag_groups.h) and the clock domains (ranks sharing a node share a
 * clock). The engine owns one, grows it with its other per-rank arrays and
 * rebuilds the groups before an analysis; this module calls nothing of the
 * engine.
 */
#ifndef ARGUS_COLLECTOR_DIAG_RANKS_H
#define ARGUS_COLLECTOR_DIAG_RANKS_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_groups.h"
#include "proto/argus.pb-c.h"

struct diag_rank_info {
    char *node; /* malloc'd; NULL until a Resource names it */
    int32_t gpu;
};

struct diag_ranks {
    uint32_t cap; /* ranks [0, cap) have room (set by the owner: see diag_ranks_grow) */
    struct diag_rank_info *ri;
    struct diag_coord *coords;
    uint32_t world_size;        /* largest Resource.world_size (a hint, capped to max_ranks) */
    bool groups_dirty;          /* groups and domains are stale */
    struct diag_groups groups;  /* work groups: (pp, tp) */
    struct diag_groups xgroups; /* expert groups: (pp, ep) */
    uint32_t *domain;           /* clock domain per rank: the lowest rank of its node */
    uint32_t n_domain;          /* ranks in domain (cap when built) */
};

/* Room in ri and coords for cap ranks (cap > rs->cap); the new ones are
 * cleared (no node, GPU -1, not present). rs->cap is left to the caller, who
 * sets it once every other per-rank array has room too. 0 or -ENOMEM (what
 * was grown stays, rs->cap unchanged). */
int diag_ranks_grow(struct diag_ranks *rs, uint32_t cap);

/* Take r (r->rank < rs->cap): node, GPU, coordinates, presence, and the
 * world size (capped to max_ranks). Marks the groups stale when a node or
 * the coordinates changed. Returns 0 or -ENOMEM (nothing changed). */
int diag_ranks_set_resource(struct diag_ranks *rs, const Argus__V1__Resource *r,
                            uint32_t max_ranks);

/* Mark rank (< rs->cap) present; a new one makes the groups stale. Inline:
 * the engine calls it for every record. */
static inline void diag_ranks_mark_present(struct diag_ranks *rs, uint32_t rank)
{
    if (!rs->coords[rank].present) {
        rs->coords[rank].present = true;
        rs->groups_dirty = true;
    }
}

/* Rebuild the groups and clock domains over [0, cap) when stale. Returns 0
 * or -ENOMEM (they stay stale and are rebuilt next time). */
int diag_ranks_build(struct diag_ranks *rs);

/* Free what rs holds; rs is left empty. */
void diag_ranks_free(struct diag_ranks *rs);

#endif
