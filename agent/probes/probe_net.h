/* The `net` probe: TCP retransmissions (tp_btf/tcp_retransmit_skb) per node
 * (pid 0) and per tracked rank owning the socket (remembered from the
 * socket's TCP state changes made by the rank: connect, accept, close).
 * Emits AGENT_EVENT_COUNTER RETRANSMITS deltas every tick. */
#ifndef ARGUS_AGENT_PROBE_NET_H
#define ARGUS_AGENT_PROBE_NET_H

#include <stdint.h>

#include "agent/sources/event.h"
#include "agent/sources/source.h"

/* One map entry's growth as an event (pure): key 0 = node, else tgid.
 * Returns 1 when out was written, 0 when it did not grow. */
int probe_net_decode(uint32_t key, uint64_t cur, uint64_t last, uint64_t ts,
                     struct agent_event *out);

extern const struct source_ops probe_net_ops;

#endif
