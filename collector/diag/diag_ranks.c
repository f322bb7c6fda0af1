/* The job's ranks, their groups and clock domains: see diag_ranks.h. */
#include "collector/diag/diag_ranks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int diag_ranks_grow(struct diag_ranks *rs, uint32_t cap)
{
    struct diag_rank_info *ri = realloc(rs->ri, (size_t)cap * sizeof(*ri));

    if (!ri)
        return -ENOMEM;
    rs->ri = ri;
    struct diag_coord *co = realloc(rs->coords, (size_t)cap * sizeof(*co));
    if (!co)
        return -ENOMEM;
    rs->coords = co;
    memset(ri + rs->cap, 0, (size_t)(cap - rs->cap) * sizeof(*ri));
    memset(co + rs->cap, 0, (size_t)(cap - rs->cap) * sizeof(*co));
    for (uint32_t i = rs->cap; i < cap; i++)
        ri[i].gpu = -1;
    return 0;
}

int diag_ranks_set_resource(struct diag_ranks *rs, const Argus__V1__Resource *r, uint32_t max_ranks)
{
    struct diag_rank_info *ri = &rs->ri[r->rank];
    struct diag_coord *c = &rs->coords[r->rank];
    char *node = strdup(r->node ? r->node : "");

    if (!node)
        return -ENOMEM;
    if (!ri->node || strcmp(ri->node, node))
        rs->groups_dirty = true; /* its clock domain */
    free(ri->node);
    ri->node = node;
    ri->gpu = r->gpu;
    /* The declared world is a hint, capped to max_ranks: during the start-up
     * grace a step waits for the ranks not seen yet (diag_watermark.h), but
     * nothing is reserved for them; memory follows the ranks that report. */
    if (r->world_size > rs->world_size)
        rs->world_size = r->world_size < max_ranks ? r->world_size : max_ranks;
    diag_ranks_mark_present(rs, r->rank);
    if (!c->known || c->pp != r->pp || c->tp != r->tp || c->ep != r->ep || c->dp != r->dp)
        rs->groups_dirty = true;
    c->known = true;
    c->pp = r->pp;
    c->tp = r->tp;
    c->ep = r->ep;
    c->dp = r->dp;
    return 0;
}

static uint32_t node_hash(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* The clock domain of every rank: the lowest rank with the same node name
 * (a rank without one is its own). 0 or -ENOMEM. */
static int build_domains(struct diag_ranks *rs)
{
    uint32_t size = 16, *first, *dom = realloc(rs->domain, (size_t)rs->cap * sizeof(*dom));

    if (!dom)
        return -ENOMEM;
    rs->domain = dom;
    while (size < 2 * rs->cap)
        size *= 2;
    first = malloc((size_t)size * sizeof(*first)); /* node -> its lowest rank + 1 */
    if (!first)
        return -ENOMEM;
    memset(first, 0, (size_t)size * sizeof(*first));
    for (uint32_t r = 0; r < rs->cap; r++) {
        const char *node = rs->ri[r].node;
        dom[r] = r;
        if (!node || !*node)
            continue;
        for (uint32_t h = node_hash(node) & (size - 1);; h = (h + 1) & (size - 1)) {
            if (!first[h]) {
                first[h] = r + 1;
                break;
            }
            if (!strcmp(rs->ri[first[h] - 1].node, node)) {
                dom[r] = first[h] - 1;
                break;
            }
        }
    }
    free(first);
    rs->n_domain = rs->cap;
    return 0;
}

int diag_ranks_build(struct diag_ranks *rs)
{
    int err = 0;

    if (rs->groups_dirty) {
        err = diag_groups_build(&rs->groups, rs->coords, rs->cap, DIAG_GROUP_WORK);
        err = err ? err : diag_groups_build(&rs->xgroups, rs->coords, rs->cap, DIAG_GROUP_EXPERT);
        err = err ? err : build_domains(rs);
        rs->groups_dirty = err != 0;
    }
    return err;
}

void diag_ranks_free(struct diag_ranks *rs)
{
    for (uint32_t i = 0; i < rs->cap; i++)
        free(rs->ri[i].node);
    free(rs->ri);
    free(rs->coords);
    diag_groups_free(&rs->groups);
    diag_groups_free(&rs->xgroups);
    free(rs->domain);
    *rs = (struct diag_ranks){0};
}
