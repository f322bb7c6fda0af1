/* Which agents the collector can hear now: ingest takes in each stream that
 * carried a batch of an agent (Batch.agent_id) and each end of such a
 * stream; diagnosis gets out whether an agent's link is up, so a node whose
 * stream dropped (a link cut, an agent or collector restart) is reported
 * unreachable, never as a node gone silent while its job went on.
 *
 * An agent is up while a stream of it is open; down from the end of its
 * last stream until a batch of it arrives on a new one; unknown (never
 * seen since the start, records without an agent) counts as up. The table
 * keeps every agent seen (a few hundred bytes each: one per node).
 * Thread-safe: transport workers write, the diagnosis thread reads. */
#ifndef ARGUS_COLLECTOR_INGEST_LINKS_H
#define ARGUS_COLLECTOR_INGEST_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct links;

/* An empty table. NULL on ENOMEM. */
struct links *links_new(void);

/* Free the table (NULL is fine). */
void links_free(struct links *l);

/* A stream of agent carried its first batch at now_ns (UNIX ns). Returns 0
 * or -ENOMEM (the agent then stays unknown: up). */
int links_up(struct links *l, const char *agent, uint64_t now_ns);

/* A stream of agent that links_up counted ended at now_ns. */
void links_down(struct links *l, const char *agent, uint64_t now_ns);

/* A diag_silence_link_fn (diag_silence.h) over the table l: true unless
 * agent's last stream ended and none came back; *since_ns is then when
 * its open stream came up (0 unknown). */
bool links_is_up(void *l, const char *agent, uint64_t *since_ns);

/* Agents down now (argus_ingest_agents_unreachable). */
size_t links_unreachable(struct links *l);

#endif
