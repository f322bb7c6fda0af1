/* libFuzzer target: the collector's decoding of StepRecord.packed_kernels
 * (common/kernel_code.h, common/cluster_code.h) on any bytes must never
 * crash, leak or read out of bounds; and what decodes must code and decode
 * again to the same groups and clusters (the coding is exact), whole or as
 * only the clusters against those groups. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/kernel_code.h"
#include "fuzz_util.h"
#include "proto/argus.pb-c.h"

#define FUZZ_MAX_GROUPS 4096
#define FUZZ_MAX_CLUSTERS 64

static int same_cluster(const Argus__V1__Cluster *a, const Argus__V1__Cluster *b)
{
    return a->count == b->count && a->sum_ns == b->sum_ns && a->p50_ns == b->p50_ns &&
           a->p99_ns == b->p99_ns && a->min_ns == b->min_ns && a->max_ns == b->max_ns;
}

static int same_group(const Argus__V1__KernelGroup *a, const Argus__V1__KernelGroup *b)
{
    if (a->name_id != b->name_id || a->stream != b->stream || a->work_id != b->work_id ||
        a->n_clusters != b->n_clusters)
        return 0;
    for (size_t k = 0; k < a->n_clusters; k++)
        if (!same_cluster(a->clusters[k], b->clusters[k]))
            return 0;
    return 1;
}

static void free_groups(Argus__V1__KernelGroup **g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        argus__v1__kernel_group__free_unpacked(g[i], NULL);
    free(g);
}

/* r's groups coded (as_previous: only their clusters, against r itself)
 * into out and decoded again: the same groups, or abort. */
static void round_trip(const Argus__V1__StepRecord *r, bool as_previous, uint8_t *out)
{
    Argus__V1__KernelGroup **again;
    size_t m, len = kernel_code_encode(r, as_previous, out);

    if (kernel_code_decode(out, len, as_previous ? r : NULL, FUZZ_MAX_GROUPS, FUZZ_MAX_CLUSTERS,
                           NULL, &again, &m) < 0 ||
        m != r->n_kernels)
        abort();
    for (size_t i = 0; i < m; i++)
        if (!same_group(r->kernels[i], again[i]))
            abort();
    free_groups(again, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__KernelGroup **g, **again;
    size_t n, m;
    uint8_t *out;

    if (kernel_code_decode(data, size, NULL, FUZZ_MAX_GROUPS, FUZZ_MAX_CLUSTERS, NULL, &g, &n) < 0)
        return 0;
    r.n_kernels = n;
    r.kernels = g;
    out = malloc(kernel_code_bound(&r) + 1);
    if (!out)
        abort();
    /* the same bytes against these groups decode too when they hold only
     * clusters, and must not crash when they do not */
    if (kernel_code_decode(data, size, &r, FUZZ_MAX_GROUPS, FUZZ_MAX_CLUSTERS, NULL, &again, &m) ==
        0)
        free_groups(again, m);
    round_trip(&r, false, out); /* whole */
    round_trip(&r, true, out);  /* only the clusters, against r itself */
    free_groups(g, n);
    free(out);
    return 0;
}
