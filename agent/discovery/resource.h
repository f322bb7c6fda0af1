/* What the rest of the agent takes from a tracked rank (agent/discovery/):
 * the host path of a file as the rank's process sees it (containers), and
 * the Resource that describes the rank in the batches. Pure. */
#ifndef ARGUS_AGENT_DISCOVERY_RESOURCE_H
#define ARGUS_AGENT_DISCOVERY_RESOURCE_H

#include <stddef.h>

#include "agent/discovery/environ.h"
#include "proto/argus.pb-c.h"

/* Write into buf (len bytes) the path under which the agent opens `path` as
 * the process of ri sees it ("/usr/lib/libnccl.so.2" -> root + that path).
 * Returns the length, or -ENAMETOOLONG, -EINVAL for a relative path. */
int discovery_host_path(const struct rank_info *ri, const char *path, char *buf, size_t len);

/* Fill r (initialised here) from ri for Batch.resources. The string fields
 * point into ri: r is valid only while ri is, and must not be freed with
 * protobuf-c's free functions. */
void discovery_fill_resource(const struct rank_info *ri, Argus__V1__Resource *r);

#endif
