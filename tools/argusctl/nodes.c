/* argusctl nodes and exclude: see nodes.h. */
#include "tools/argusctl/nodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/causes.h"
#include "common/clock.h"
#include "common/fleet_rank.h"

#define NODES_ROWS_SHOWN 10 /* jobs listed under a node in the table (--json: all) */

int nodes_parse_format(const char *text, enum nodes_format *out)
{
    if (strcmp(text, "slurm") == 0)
        *out = NODES_FORMAT_SLURM;
    else if (strcmp(text, "k8s") == 0)
        *out = NODES_FORMAT_K8S;
    else
        return -EINVAL;
    return 0;
}

static uint32_t nodes_threshold(const Argus__V1__NodesResponse *resp, uint32_t min_jobs)
{
    if (min_jobs)
        return min_jobs;
    return resp->suspect_jobs ? resp->suspect_jobs : 1;
}

/* "0:3 1:1": each GPU of node n with its distinct jobs ("-" for -1). */
static void nodes_gpus_text(Argus__V1__NodeCulprit *const *rows, const struct fleet_rank_node *n,
                            char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = n->first; i < n->first + n->n && at < len; i++) {
        int32_t gpu = rows[i]->gpu;
        bool seen = false;
        for (size_t k = n->first; k < i && !seen; k++)
            seen = rows[k]->gpu == gpu;
        if (seen)
            continue;
        char g[16];
        snprintf(g, sizeof(g), gpu < 0 ? "-" : "%d", gpu);
        at += (size_t)snprintf(buf + at, len - at, "%s%s:%u", at ? " " : "", g,
                               fleet_rank_gpu_jobs(rows, n->first, n->n, gpu));
    }
}

static void nodes_print_node(FILE *f, Argus__V1__NodeCulprit *const *rows,
                             const struct fleet_rank_node *n, uint32_t threshold)
{
    char gpus[128], t[40];

    nodes_gpus_text(rows, n, gpus, sizeof(gpus));
    fprintf(f, "%-20s %5u  %-7s  %-14s %s\n", n->node, n->jobs, n->jobs >= threshold ? "yes" : "no",
            gpus, clock_format_rfc3339(n->last_unix_ns, t, sizeof(t)));
    for (size_t i = n->first; i < n->first + n->n; i++) {
        const Argus__V1__NodeCulprit *r = rows[i];
        if (i - n->first == NODES_ROWS_SHOWN) {
            fprintf(f, "    ... and %zu more (--json: all)\n", n->n - NODES_ROWS_SHOWN);
            break;
        }
        fprintf(f, "    job %s gpu %d %s, report %s\n", r->job, r->gpu, causes_get(r->cause)->label,
                r->report_id);
    }
}

static json_object *nodes_node_json(Argus__V1__NodeCulprit *const *rows,
                                    const struct fleet_rank_node *n, uint32_t threshold)
{
    json_object *o = json_object_new_object(), *list = json_object_new_array();

    json_object_object_add(o, "node", json_object_new_string(n->node));
    json_object_object_add(o, "culprit_jobs", json_object_new_int64(n->jobs));
    json_object_object_add(o, "suspect", json_object_new_boolean(n->jobs >= threshold));
    json_object_object_add(o, "last_unix_ns", json_object_new_uint64(n->last_unix_ns));
    for (size_t i = n->first; i < n->first + n->n; i++) {
        json_object *r = json_object_new_object();
        json_object_object_add(r, "job", json_object_new_string(rows[i]->job));
        json_object_object_add(r, "gpu", json_object_new_int(rows[i]->gpu));
        json_object_object_add(r, "cause",
                               json_object_new_string(causes_get(rows[i]->cause)->label));
        json_object_object_add(r, "report_id", json_object_new_string(rows[i]->report_id));
        json_object_object_add(r, "created_unix_ns",
                               json_object_new_uint64(rows[i]->created_unix_ns));
        json_object_array_add(list, r);
    }
    json_object_object_add(o, "culprits", list);
    return o;
}

static void nodes_put_json(FILE *f, json_object *o)
{
    fprintf(f, "%s\n",
            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* The answer's header as a JSON object with an empty "nodes" array. */
static json_object *nodes_json_header(const Argus__V1__NodesResponse *resp, uint32_t threshold,
                                      json_object **nodes)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "since_unix_ns", json_object_new_uint64(resp->since_unix_ns));
    json_object_object_add(o, "min_jobs", json_object_new_int64(threshold));
    json_object_object_add(o, "truncated", json_object_new_boolean(resp->truncated));
    *nodes = json_object_new_array();
    json_object_object_add(o, "nodes", *nodes);
    return o;
}

int nodes_print(FILE *f, Argus__V1__NodesResponse *resp, const struct nodes_options *o)
{
    struct fleet_rank_node *ranked;
    uint32_t threshold = nodes_threshold(resp, 0);
    int n = fleet_rank(resp->culprits, resp->n_culprits, &ranked);
    json_object *j = NULL, *list = NULL;
    char t[40];

    if (n < 0)
        return n;
    if (o->json)
        j = nodes_json_header(resp, threshold, &list);
    else
        fprintf(f, "nodes named a hardware-class culprit since %s (suspect at %u jobs)%s\n",
                clock_format_rfc3339(resp->since_unix_ns, t, sizeof(t)), threshold,
                resp->truncated ? ", TRUNCATED: the collector had more rows" : "");
    if (!o->json && n > 0)
        fprintf(f, "%-20s %5s  %-7s  %-14s %s\n", "NODE", "JOBS", "SUSPECT", "GPU:JOBS",
                "LAST REPORT");
    for (int i = 0; i < n; i++) {
        if (o->suspect && ranked[i].jobs < threshold)
            continue;
        if (o->json)
            json_object_array_add(list, nodes_node_json(resp->culprits, &ranked[i], threshold));
        else
            nodes_print_node(f, resp->culprits, &ranked[i], threshold);
    }
    if (o->json)
        nodes_put_json(f, j);
    else if (n == 0)
        fprintf(f, "(none)\n");
    free(ranked);
    return 0;
}

/* Whether the format can carry name: slurm's hostlist splits on commas and
 * spaces; the YAML values are quoted, but a control character is refused. */
static bool nodes_name_fits(const char *name, enum nodes_format format)
{
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\' ||
            (format == NODES_FORMAT_SLURM && (*p == ',' || *p == ' ' || *p == '[')))
            return false;
    return *name != '\0';
}

static void nodes_print_list(FILE *f, const struct fleet_rank_node *ranked, const bool *keep, int n,
                             enum nodes_format format, int count)
{
    if (format == NODES_FORMAT_SLURM) {
        for (int i = 0, k = 0; i < n; i++)
            if (keep[i])
                fprintf(f, "%s%s", k++ ? "," : "", ranked[i].node);
        fprintf(f, "\n");
        return;
    }
    if (count == 0) { /* NotIn with no values is invalid: no affinity at all */
        fprintf(f, "affinity: {}\n");
        return;
    }
    fprintf(f, "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n"
               "      nodeSelectorTerms:\n      - matchExpressions:\n"
               "        - key: kubernetes.io/hostname\n          operator: NotIn\n"
               "          values:\n");
    for (int i = 0; i < n; i++)
        if (keep[i])
            fprintf(f, "          - \"%s\"\n", ranked[i].node);
}

int nodes_print_exclude(FILE *f, Argus__V1__NodesResponse *resp, const struct nodes_options *o)
{
    struct fleet_rank_node *ranked;
    uint32_t threshold = nodes_threshold(resp, o->min_jobs);
    int n = fleet_rank(resp->culprits, resp->n_culprits, &ranked), count = 0;
    bool *keep = calloc(n > 0 ? (size_t)n : 1, sizeof(*keep));
    json_object *j, *list;

    if (n < 0 || !keep) {
        free(keep);
        free(ranked);
        return -ENOMEM;
    }
    for (int i = 0; i < n && ranked[i].jobs >= threshold; i++) {
        keep[i] = nodes_name_fits(ranked[i].node, o->format);
        if (!keep[i])
            fprintf(stderr, "argusctl: node name '%s' cannot go into a %s list: left out\n",
                    ranked[i].node, o->format == NODES_FORMAT_SLURM ? "slurm" : "k8s");
        count += keep[i];
    }
    if (o->json) {
        j = nodes_json_header(resp, threshold, &list);
        for (int i = 0; i < n; i++)
            if (ranked[i].jobs >= threshold)
                json_object_array_add(list, json_object_new_string(ranked[i].node));
        nodes_put_json(f, j);
    } else {
        nodes_print_list(f, ranked, keep, n, o->format, count);
    }
    free(keep);
    free(ranked);
    return count;
}
