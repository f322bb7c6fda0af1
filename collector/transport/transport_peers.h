/* Per-peer accounting of open gRPC calls: the transport takes in the peer
 * string of each call it accepts and gives out whether that peer may open
 * one more (below its cap), so one host cannot hold every call, descriptor
 * and byte of the collector.
 *
 * A peer is its host: gRPC's peer string without the port ("ipv4:10.0.0.7",
 * "ipv6:[::1]"; "unix" for every Unix-socket client). Thread-safe (one
 * mutex): the transport's workers enter and leave from their own threads. */
#ifndef ARGUS_COLLECTOR_TRANSPORT_PEERS_H
#define ARGUS_COLLECTOR_TRANSPORT_PEERS_H

#include <stddef.h>
#include <stdint.h>

#define TRANSPORT_PEER_KEY 72 /* bytes of a peer key, with its NUL */

struct transport_peers;

/* A table allowing max_calls open calls per peer (0: no cap). Returns NULL
 * on allocation failure. */
struct transport_peers *transport_peers_new(uint32_t max_calls);

/* Free the table (NULL is fine). */
void transport_peers_free(struct transport_peers *p);

/* The peer key of gRPC's peer string address into key (TRANSPORT_PEER_KEY
 * bytes): the address without its last ":PORT" (longer hosts truncated). */
void transport_peers_key(const char *address, char *key);

/* Count one more open call of key. Returns the calls it now has open (>= 1),
 * -EBUSY when it already has max_calls (nothing counted), -ENOMEM. */
int transport_peers_enter(struct transport_peers *p, const char *key);

/* One call of key ended (each successful enter is left exactly once). */
void transport_peers_leave(struct transport_peers *p, const char *key);

/* Peers with an open call (for tests and /metrics). */
size_t transport_peers_count(struct transport_peers *p);

#endif
