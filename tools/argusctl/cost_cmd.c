/* argusctl cost, the command (see cost_cmd.h). */
#include "tools/argusctl/cost_cmd.h"

#include <json-c/json.h>
#include <string.h>

#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"
#include "tools/argusctl/cost.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/target.h"

/* Add job's reports since o->since_ns to tab. CTL_OK (a job no member
 * knows any more adds nothing) or the call's exit code. */
static int cost_cmd_job(struct ctl_target *t, const struct cost_cmd_options *o, const char *job,
                        struct cost_table *tab)
{
    Argus__V1__StragglersRequest req = ARGUS__V1__STRAGGLERS_REQUEST__INIT;
    Argus__V1__StragglersResponse *resp;

    req.job = (char *)job;
    req.from_unix_ns = o->since_ns;
    int r = ctl_target_call(t, RPC_QUERY_STRAGGLERS, &req.base,
                            &argus__v1__stragglers_response__descriptor, o->timeout_ms, o->quiet,
                            (ProtobufCMessage **)&resp);
    if (r)
        return r == CTL_NOT_FOUND ? CTL_OK : r;
    for (size_t i = 0; i < resp->n_reports && !r; i++)
        r = cost_add(tab, resp->reports[i]) < 0 ? CTL_ERROR : CTL_OK;
    argus__v1__stragglers_response__free_unpacked(resp, NULL);
    return r;
}

static void cost_cmd_print(const struct cost_cmd_options *o, const struct cost_table *tab,
                           FILE *out)
{
    if (o->json) {
        struct json_object *j = cost_json(tab);
        fprintf(out, "%s\n", j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY) : "{}");
        json_object_put(j);
    } else {
        cost_print(out, tab, o->since_text);
    }
}

int cost_cmd_run(struct ctl_target *t, const struct cost_cmd_options *o, FILE *out)
{
    Argus__V1__JobsRequest jq = ARGUS__V1__JOBS_REQUEST__INIT;
    Argus__V1__JobsResponse *jobs;
    struct cost_table tab = {0};

    if (cost_parse_by(o->by, &tab.by) < 0) {
        fprintf(stderr, "argusctl: --by: '%s' is not node, cause or job\n", o->by);
        return CTL_USAGE;
    }
    jq.limit = o->limit;
    int r = ctl_target_call(t, RPC_QUERY_JOBS, &jq.base, &argus__v1__jobs_response__descriptor,
                            o->timeout_ms, o->quiet, (ProtobufCMessage **)&jobs);
    if (r)
        return r;
    for (size_t i = 0; i < jobs->n_jobs && !r; i++)
        if (!*o->job || strcmp(o->job, jobs->jobs[i]->job) == 0)
            r = cost_cmd_job(t, o, jobs->jobs[i]->job, &tab);
    argus__v1__jobs_response__free_unpacked(jobs, NULL);
    cost_sort(&tab);
    if (!r)
        cost_cmd_print(o, &tab, out);
    cost_free(&tab);
    return r;
}
