/* A tracked rank as the rest of the agent needs it: paths inside its
 * container, the Resource of the batches (see resource.h). */
#include "agent/discovery/resource.h"

#include <errno.h>
#include <stdio.h>

int discovery_host_path(const struct rank_info *ri, const char *path, char *buf, size_t len)
{
    if (!path || path[0] != '/')
        return -EINVAL;
    int n = snprintf(buf, len, "%s%s", ri->root, path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

void discovery_fill_resource(const struct rank_info *ri, Argus__V1__Resource *r)
{
    argus__v1__resource__init(r);
    r->job = (char *)ri->job;
    r->rank = ri->rank;
    r->local_rank = ri->local_rank;
    r->world_size = ri->world_size;
    r->node = (char *)ri->node;
    r->gpu = ri->gpu;
    r->gpu_uuid = (char *)ri->gpu_uuid;
    r->pid = ri->pid;
    r->dp = ri->dp, r->tp = ri->tp, r->pp = ri->pp, r->ep = ri->ep;
    r->dp_size = ri->dp_size, r->tp_size = ri->tp_size;
    r->pp_size = ri->pp_size, r->ep_size = ri->ep_size;
    r->restart = ri->restart;
}
