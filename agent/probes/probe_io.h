/* The `io` probe: block I/O latency (tp_btf block_rq_issue ->
 * block_rq_complete) summed per node (pid 0) and per tracked rank that issued
 * the request (requests issued by kernel threads count for the node only).
 * Emits AGENT_EVENT_COUNTER IO_WAIT_NS deltas every tick. */
#ifndef ARGUS_AGENT_PROBE_IO_H
#define ARGUS_AGENT_PROBE_IO_H

#include <stdint.h>

#include "agent/sources/event.h"
#include "agent/sources/source.h"

/* One map entry's growth as an event (pure): key 0 = node, else tgid.
 * Returns 1 when out was written, 0 when it did not grow. */
int probe_io_decode(uint32_t key, uint64_t cur, uint64_t last, uint64_t ts,
                    struct agent_event *out);

extern const struct source_ops probe_io_ops;

#endif
