/* The agent's drop counters: one table of cumulative totals of what was lost
 * on the way to the collector, keyed by (reason, job, rank); job NULL and
 * rank -1 for node-level losses. A total counts since the start of the
 * spool epoch (argus.v1.DropCounter.total) and never falls.
 *
 * Writers call drops_add, the only writer: the sources' drop events and a
 * failed spool append (agent.c), the spool's own losses (cap, corruption:
 * reported through its loss callback), the exporter (batches the collector
 * rejected). Readers: the batcher attaches every total to each batch it
 * seals (drops_version tells it when one changed), dropstate saves the table
 * and loads it back after a restart (drops_changed, drops_saved).
 * Single-threaded, like the main loop that owns it. */
#ifndef ARGUS_AGENT_DROPS_H
#define ARGUS_AGENT_DROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct drops;

/* An empty table, or NULL on -ENOMEM. */
struct drops *drops_new(void);

/* Free the table and its strings. NULL is fine. */
void drops_free(struct drops *d);

/* Add count to the total of (reason, job, rank), creating it (at the end of
 * the creation order) when new; reason and job are copied. Every call marks
 * the table changed, also with count 0. Returns 0, or -ENOMEM when a new
 * counter cannot be created (the loss is not counted). */
int drops_add(struct drops *d, const char *reason, const char *job, int32_t rank, uint64_t count);

/* The total of (reason, job, rank); 0 when there is no such counter. */
uint64_t drops_get(const struct drops *d, const char *reason, const char *job, int32_t rank);

/* How many counters the table holds. */
size_t drops_count(const struct drops *d);

typedef void (*drops_fn)(void *ctx, const char *reason, const char *job, int32_t rank,
                         uint64_t total);

/* Call fn for each counter (job NULL for node-level ones) in creation order.
 * The strings stay valid while d lives; fn must not call drops_add. */
void drops_foreach(const struct drops *d, drops_fn fn, void *ctx);

/* A number that grows with every drops_add: a reader that remembers it
 * knows whether anything changed since. */
uint64_t drops_version(const struct drops *d);

/* True when the table changed since the last drops_saved (or since it was
 * created): dropstate must write it again. */
bool drops_changed(const struct drops *d);
void drops_saved(struct drops *d);

#endif
