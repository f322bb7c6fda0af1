/* Merging the Nodes answers of a collector set: see merge_nodes.h. */
#include "tools/argusctl/merge_nodes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/argus.pb-c.h"

/* By (node, gpu, job), the newest report first. */
static int merge_nodes_cmp(const void *a, const void *b)
{
    const Argus__V1__NodeCulprit *x = *(Argus__V1__NodeCulprit *const *)a;
    const Argus__V1__NodeCulprit *y = *(Argus__V1__NodeCulprit *const *)b;
    int c = strcmp(x->node, y->node);

    if (!c)
        c = (x->gpu > y->gpu) - (x->gpu < y->gpu);
    if (!c)
        c = strcmp(x->job, y->job);
    if (!c)
        c = (x->created_unix_ns < y->created_unix_ns) - (x->created_unix_ns > y->created_unix_ns);
    return c;
}

static int merge_nodes_same(const Argus__V1__NodeCulprit *x, const Argus__V1__NodeCulprit *y)
{
    return strcmp(x->node, y->node) == 0 && x->gpu == y->gpu && strcmp(x->job, y->job) == 0;
}

/* The header fields of the merge of in into view. */
static void merge_nodes_header(ProtobufCMessage *const *in, size_t n,
                               Argus__V1__NodesResponse *view)
{
    for (size_t i = 0; i < n; i++) {
        const Argus__V1__NodesResponse *a = (const Argus__V1__NodesResponse *)in[i];
        if (a->since_unix_ns && (!view->since_unix_ns || a->since_unix_ns < view->since_unix_ns))
            view->since_unix_ns = a->since_unix_ns;
        if (a->suspect_jobs > view->suspect_jobs)
            view->suspect_jobs = a->suspect_jobs;
        view->truncated = view->truncated || a->truncated;
    }
}

ProtobufCMessage *merge_nodes(ProtobufCMessage *const *in, size_t n)
{
    Argus__V1__NodesResponse view = ARGUS__V1__NODES_RESPONSE__INIT;
    size_t total = 0, m = 0, len;
    ProtobufCMessage *out = NULL;
    uint8_t *buf;

    for (size_t i = 0; i < n; i++)
        total += ((const Argus__V1__NodesResponse *)in[i])->n_culprits;
    view.culprits = calloc(total ? total : 1, sizeof(*view.culprits));
    if (!view.culprits)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const Argus__V1__NodesResponse *a = (const Argus__V1__NodesResponse *)in[i];
        memcpy(view.culprits + m, a->culprits, a->n_culprits * sizeof(*a->culprits));
        m += a->n_culprits;
    }
    qsort(view.culprits, total, sizeof(*view.culprits), merge_nodes_cmp);
    for (size_t i = 0; i < total; i++)
        if (view.n_culprits == 0 ||
            !merge_nodes_same(view.culprits[view.n_culprits - 1], view.culprits[i]))
            view.culprits[view.n_culprits++] = view.culprits[i];
    merge_nodes_header(in, n, &view);
    len = protobuf_c_message_get_packed_size(&view.base);
    buf = malloc(len ? len : 1);
    if (buf) {
        protobuf_c_message_pack(&view.base, buf);
        out = protobuf_c_message_unpack(&argus__v1__nodes_response__descriptor, NULL, len, buf);
    }
    free(buf);
    free(view.culprits);
    return out;
}
