/* Query/Nodes: fleet memory (collector/fleet/fleet.h) for argusctl nodes and
 * argusctl exclude. A NodesRequest in, a NodesResponse out: the culprit rows
 * of the reports created since its since_unix_ns (0: fleet.window back from
 * now), with the window's start and fleet.suspect_jobs. Errors as the other
 * Query methods (query.h): a malformed request INVALID_ARGUMENT, a store
 * failure UNAVAILABLE, no memory INTERNAL; the query role under mTLS. */
#ifndef ARGUS_COLLECTOR_QUERY_NODES_H
#define ARGUS_COLLECTOR_QUERY_NODES_H

#include "collector/transport/transport.h"

struct fleet;

/* Register /argus.v1.Query/Nodes on t, answering from f (not owned; it
 * must outlive t's workers). 0 or -EINVAL. */
int query_register_nodes(struct transport_server *t, struct fleet *f);

#endif
