/* Fleet memory's ranking: see fleet_rank.h. */
#include "common/fleet_rank.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int fleet_rank_row_cmp(const void *a, const void *b)
{
    const Argus__V1__NodeCulprit *x = *(Argus__V1__NodeCulprit *const *)a;
    const Argus__V1__NodeCulprit *y = *(Argus__V1__NodeCulprit *const *)b;
    int c = strcmp(x->node, y->node);

    if (!c)
        c = strcmp(x->job, y->job);
    if (!c)
        c = (x->gpu > y->gpu) - (x->gpu < y->gpu);
    return c;
}

static int fleet_rank_node_cmp(const void *a, const void *b)
{
    const struct fleet_rank_node *x = a, *y = b;

    if (x->jobs != y->jobs)
        return x->jobs > y->jobs ? -1 : 1;
    if (x->last_unix_ns != y->last_unix_ns)
        return x->last_unix_ns > y->last_unix_ns ? -1 : 1;
    return strcmp(x->node, y->node);
}

/* Fill the counts of node out from its rows. */
static void fleet_rank_count(Argus__V1__NodeCulprit *const *rows, struct fleet_rank_node *out)
{
    for (size_t i = out->first; i < out->first + out->n; i++) {
        const Argus__V1__NodeCulprit *r = rows[i];
        bool new_gpu = true;

        if (i == out->first || strcmp(r->job, rows[i - 1]->job) != 0)
            out->jobs++;
        for (size_t k = out->first; k < i && new_gpu; k++)
            new_gpu = rows[k]->gpu != r->gpu;
        out->gpus += new_gpu && out->gpus < 64; /* a node has a few GPUs; no more are told apart */
        if (r->created_unix_ns > out->last_unix_ns)
            out->last_unix_ns = r->created_unix_ns;
    }
}

int fleet_rank(Argus__V1__NodeCulprit **rows, size_t n, struct fleet_rank_node **out)
{
    struct fleet_rank_node *nodes;
    size_t count = 0;

    *out = NULL;
    if (n == 0)
        return 0;
    qsort(rows, n, sizeof(*rows), fleet_rank_row_cmp);
    nodes = calloc(n, sizeof(*nodes));
    if (!nodes)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (count == 0 || strcmp(rows[i]->node, nodes[count - 1].node) != 0)
            nodes[count++] = (struct fleet_rank_node){.node = rows[i]->node, .first = i};
        nodes[count - 1].n++;
    }
    for (size_t i = 0; i < count; i++)
        fleet_rank_count(rows, &nodes[i]);
    qsort(nodes, count, sizeof(*nodes), fleet_rank_node_cmp);
    *out = nodes;
    return (int)count;
}

uint32_t fleet_rank_gpu_jobs(Argus__V1__NodeCulprit *const *rows, size_t first, size_t n,
                             int32_t gpu)
{
    uint32_t jobs = 0;
    const char *last = NULL;

    for (size_t i = first; i < first + n; i++) {
        if (rows[i]->gpu != gpu || (last && strcmp(last, rows[i]->job) == 0))
            continue;
        jobs++;
        last = rows[i]->job;
    }
    return jobs;
}
