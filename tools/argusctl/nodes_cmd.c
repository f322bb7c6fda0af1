/* argusctl nodes and exclude, the commands (see nodes_cmd.h). */
#include "tools/argusctl/nodes_cmd.h"

#include "common/clock.h"
#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/nodes.h"
#include "tools/argusctl/target.h"

int nodes_cmd_run(struct ctl_target *t, const struct nodes_cmd_options *o, FILE *out)
{
    Argus__V1__NodesRequest req = ARGUS__V1__NODES_REQUEST__INIT;
    struct nodes_options no = {.json = o->json, .suspect = o->suspect, .min_jobs = o->min_jobs};
    Argus__V1__NodesResponse *resp;
    int r;

    if (o->exclude && nodes_parse_format(o->format, &no.format) < 0) {
        fprintf(stderr, "argusctl: --format must be slurm or k8s, not '%s'\n", o->format);
        return CTL_USAGE;
    }
    req.since_unix_ns = o->since_ns;
    if (o->exclude && !req.since_unix_ns)
        req.since_unix_ns = clock_real_ns() - 86400 * NSEC_PER_SEC;
    r = ctl_target_call(t, RPC_QUERY_NODES, &req.base, &argus__v1__nodes_response__descriptor,
                        o->timeout_ms, o->quiet, (ProtobufCMessage **)&resp);
    if (r)
        return r;
    if (o->exclude)
        r = nodes_print_exclude(out, resp, &no) < 0 ? CTL_ERROR : CTL_OK;
    else
        r = nodes_print(out, resp, &no) < 0 ? CTL_ERROR : CTL_OK;
    argus__v1__nodes_response__free_unpacked(resp, NULL);
    return r;
}
