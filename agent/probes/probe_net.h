/* The `net` probe: TCP retransmissions (tp_btf/tcp_retransmit_skb) per node
 * (pid 0) and per tracked rank owning the socket (remembered from the
 * socket's TCP state changes made by the rank: connect, accept, close).
 * Emits AGENT_EVENT_COUNTER RETRANSMITS deltas every tick. */
#ifndef ARGUS_AGENT_PROBE_NET_H
#define ARGUS_AGENT_PROBE_NET_H

#include "agent/sources/source.h"

extern const struct source_ops probe_net_ops;

#endif
