/* argusctl heatmap, the command (see heatmap_cmd.h). */
#include "tools/argusctl/heatmap_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/heatmap.h"
#include "common/heatmap_svg.h"
#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/target.h"

#define HEATMAP_CMD_CELLS 1000000u /* cells asked for per Heatmap call */

static int heatmap_cmd_call(const struct heatmap_cmd_options *o, const char *method,
                            const ProtobufCMessage *req, const ProtobufCMessageDescriptor *type,
                            ProtobufCMessage **resp)
{
    return ctl_target_call(o->target, method, req, type, o->timeout_ms, o->quiet, resp);
}

/* The job's JobInfo (world size, last step), or an exit code. */
static int heatmap_cmd_job_info(const struct heatmap_cmd_options *o, uint32_t *world,
                                uint64_t *last_step)
{
    Argus__V1__JobsRequest req = ARGUS__V1__JOBS_REQUEST__INIT;
    Argus__V1__JobsResponse *resp;
    int r = heatmap_cmd_call(o, RPC_QUERY_JOBS, &req.base, &argus__v1__jobs_response__descriptor,
                             (ProtobufCMessage **)&resp);

    if (r)
        return r;
    r = CTL_NOT_FOUND;
    for (size_t i = 0; i < resp->n_jobs; i++) {
        if (strcmp(resp->jobs[i]->job, o->job) == 0) {
            *world =
                resp->jobs[i]->world_size ? resp->jobs[i]->world_size : resp->jobs[i]->ranks_seen;
            *last_step = resp->jobs[i]->last_step;
            r = CTL_OK;
        }
    }
    if (r)
        fprintf(stderr, "argusctl: no job '%s' in this collector\n", o->job);
    argus__v1__jobs_response__free_unpacked(resp, NULL);
    return r;
}

/* Nodes and peer groups (ranks) and the suspects that page (stragglers). */
static int heatmap_cmd_context(const struct heatmap_cmd_options *o, struct heatmap *h)
{
    Argus__V1__RanksRequest rq = ARGUS__V1__RANKS_REQUEST__INIT;
    Argus__V1__StragglersRequest sq = ARGUS__V1__STRAGGLERS_REQUEST__INIT;
    Argus__V1__RanksResponse *ranks;
    Argus__V1__StragglersResponse *reps;
    int r;

    rq.job = sq.job = (char *)o->job;
    r = heatmap_cmd_call(o, RPC_QUERY_RANKS, &rq.base, &argus__v1__ranks_response__descriptor,
                         (ProtobufCMessage **)&ranks);
    if (r)
        return r;
    for (size_t i = 0; i < ranks->n_ranks; i++)
        heatmap_add_resource(h, ranks->ranks[i]);
    argus__v1__ranks_response__free_unpacked(ranks, NULL);
    r = heatmap_cmd_call(o, RPC_QUERY_STRAGGLERS, &sq.base,
                         &argus__v1__stragglers_response__descriptor, (ProtobufCMessage **)&reps);
    if (r)
        return r;
    for (size_t i = 0; i < reps->n_reports; i++)
        heatmap_add_report(h, reps->reports[i]);
    argus__v1__stragglers_response__free_unpacked(reps, NULL);
    return CTL_OK;
}

/* Fill h with the cells of steps [from, to], computed by the collector
 * (Heatmap), about HEATMAP_CMD_CELLS a call. */
static int heatmap_cmd_fill(const struct heatmap_cmd_options *o, struct heatmap *h, uint32_t world,
                            uint64_t from, uint64_t to)
{
    uint64_t per = HEATMAP_CMD_CELLS / (world ? world : 1);

    per = per ? per : 1;
    for (uint64_t lo = from; lo <= to;) {
        Argus__V1__HeatmapRequest req = ARGUS__V1__HEATMAP_REQUEST__INIT;
        Argus__V1__HeatmapResponse *resp;
        req.job = (char *)o->job;
        req.from_step = lo;
        req.to_step = to - lo >= per ? lo + per - 1 : to;
        req.step_time = strcmp(o->metric, "step") == 0;
        int r =
            heatmap_cmd_call(o, RPC_QUERY_HEATMAP, &req.base,
                             &argus__v1__heatmap_response__descriptor, (ProtobufCMessage **)&resp);
        if (r)
            return r;
        size_t n = resp->n_ranks < resp->n_steps ? resp->n_ranks : resp->n_steps;
        n = n < resp->n_values_ns ? n : resp->n_values_ns;
        for (size_t i = 0; i < n; i++)
            heatmap_set(h, resp->ranks[i], resp->steps[i], resp->values_ns[i]);
        /* truncated: again from the last step it reached (cells are set, not added) */
        uint64_t next =
            resp->truncated && n && resp->steps[n - 1] > lo ? resp->steps[n - 1] : req.to_step + 1;
        argus__v1__heatmap_response__free_unpacked(resp, NULL);
        if (next <= lo)
            break; /* to_step was UINT64_MAX */
        lo = next;
    }
    return CTL_OK;
}

/* The SVG into --output. */
static int heatmap_cmd_write(const struct heatmap_cmd_options *o, const struct heatmap *h,
                             const char *title)
{
    struct heatmap_svg_options so = {.title = title, .max_rows = 256, .max_cols = 400};
    FILE *f = fopen(o->output, "we");
    int w;

    if (!f) {
        fprintf(stderr, "argusctl: %s: %s\n", o->output, strerror(errno));
        return CTL_ERROR;
    }
    w = heatmap_write_svg(h, &so, f);
    if (fclose(f) != 0 || w < 0) {
        fprintf(stderr, "argusctl: writing %s failed\n", o->output);
        return CTL_ERROR;
    }
    return CTL_OK;
}

int heatmap_cmd_run(const struct heatmap_cmd_options *o)
{
    uint32_t world = 0;
    uint64_t last = 0, from, to;
    char title[256];
    int r;

    if (strcmp(o->metric, "compute") != 0 && strcmp(o->metric, "step") != 0) {
        fprintf(stderr, "argusctl: --metric must be compute or step\n");
        return CTL_USAGE;
    }
    if ((r = heatmap_cmd_job_info(o, &world, &last)))
        return r;
    from = o->from;
    to = o->to && o->to < last ? o->to : last;
    if (from > to || world == 0) {
        fprintf(stderr, "argusctl: no steps in that range\n");
        return CTL_NOT_FOUND;
    }
    struct heatmap *h = heatmap_new(world, from, to - from + 1);
    if (!h) {
        fprintf(stderr, "argusctl: a %u x %llu heatmap is too large; narrow --from/--to\n", world,
                (unsigned long long)(to - from + 1));
        return CTL_USAGE;
    }
    r = heatmap_cmd_context(o, h);
    if (!r)
        r = heatmap_cmd_fill(o, h, world, from, to);
    if (!r && heatmap_finish(h) < 0)
        r = CTL_ERROR;
    snprintf(title, sizeof(title), "job %s: %s time of %u ranks, steps %llu-%llu", o->job,
             strcmp(o->metric, "step") == 0 ? "step" : "own", world, (unsigned long long)from,
             (unsigned long long)to);
    if (!r)
        r = heatmap_cmd_write(o, h, title);
    if (!r)
        printf("heatmap of job %s (%u ranks x %llu steps) written to %s\n", o->job, world,
               (unsigned long long)(to - from + 1), o->output);
    heatmap_free(h);
    return r;
}
