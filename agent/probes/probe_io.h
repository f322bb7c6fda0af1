/* The `io` probe: block I/O latency (tp_btf block_rq_issue ->
 * block_rq_complete) summed per node (pid 0) and per tracked rank that issued
 * the request (requests issued by kernel threads count for the node only).
 * Emits AGENT_EVENT_COUNTER IO_WAIT_NS deltas every tick. */
#ifndef ARGUS_AGENT_PROBE_IO_H
#define ARGUS_AGENT_PROBE_IO_H

#include "agent/sources/source.h"

extern const struct source_ops probe_io_ops;

#endif
