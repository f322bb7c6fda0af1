/* Peer groups: see diag_groups.h. */
#include "collector/diag/diag_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct keyed {
    uint64_t key;
    uint32_t rank;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static uint64_t group_key(const struct diag_coord *c, enum diag_group_kind kind)
{
    if (!c->known)
        return UINT64_MAX;
    return ((uint64_t)c->pp << 32) | (kind == DIAG_GROUP_EXPERT ? c->ep : c->tp);
}

void diag_groups_free(struct diag_groups *g)
{
    free(g->group_of);
    free(g->start);
    free(g->members);
    free(g->stage);
    free(g->label);
    memset(g, 0, sizeof(*g));
}

static void label_group(struct diag_groups *g, uint32_t gi, uint64_t key, enum diag_group_kind kind)
{
    if (key == UINT64_MAX) {
        snprintf(g->label[gi], DIAG_GROUP_LABEL, "unknown");
        g->stage[gi] = UINT32_MAX;
        return;
    }
    g->stage[gi] = (uint32_t)(key >> 32);
    snprintf(g->label[gi], DIAG_GROUP_LABEL, "pp=%u,%s=%u", (unsigned)(key >> 32),
             kind == DIAG_GROUP_EXPERT ? "ep" : "tp", (unsigned)(key & 0xffffffffu));
}

int diag_groups_build(struct diag_groups *g, const struct diag_coord *coords, uint32_t n,
                      enum diag_group_kind kind)
{
    struct keyed *k = malloc((size_t)(n ? n : 1) * sizeof(*k));
    uint32_t m = 0, ng = 0;
    int err = -ENOMEM;

    diag_groups_free(g);
    g->group_of = malloc((size_t)(n ? n : 1) * sizeof(*g->group_of));
    g->members = malloc((size_t)(n ? n : 1) * sizeof(*g->members));
    g->start = malloc(((size_t)n + 1) * sizeof(*g->start));
    g->stage = malloc((size_t)(n ? n : 1) * sizeof(*g->stage));
    g->label = malloc((size_t)(n ? n : 1) * sizeof(*g->label));
    if (!k || !g->group_of || !g->members || !g->start || !g->stage || !g->label)
        goto out;
    for (uint32_t r = 0; r < n; r++) {
        g->group_of[r] = DIAG_GROUP_NONE;
        if (coords[r].present)
            k[m++] = (struct keyed){group_key(&coords[r], kind), r};
    }
    qsort(k, m, sizeof(*k), cmp_keyed);
    for (uint32_t i = 0; i < m; i++) {
        if (i == 0 || k[i].key != k[i - 1].key) {
            g->start[ng] = i;
            label_group(g, ng, k[i].key, kind);
            ng++;
        }
        g->members[i] = k[i].rank;
        g->group_of[k[i].rank] = ng - 1;
    }
    g->start[ng] = m;
    g->n_groups = ng;
    g->n_ranks = n;
    err = 0;
out:
    free(k);
    if (err)
        diag_groups_free(g);
    return err;
}
