/* What the agent must keep re-sending until the collector has it: the name
 * dictionary (per job), rank resources and kernel identity sets (ksets.h).
 * An entry goes into every sealed batch that needs it until a batch that
 * carried it is acked (by every collector meant to have it: the owner
 * passes the lowest ack); after that it is never sent again, until the
 * agent restarts or names_reset (a collector that holds none of them
 * joined). */
#ifndef ARGUS_AGENT_NAMES_H
#define ARGUS_AGENT_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

struct names;

struct names *names_new(void);
void names_free(struct names *n);

/* The kernel identity sets (ksets.h), sealed, acked and reset with the
 * names (names_take, names_ack, names_reset). Valid while n lives. */
struct ksets *names_ksets(struct names *n);

/* Remember the string of id (copied). Returns 0, -ENOMEM. */
int names_define(struct names *n, uint64_t id, const char *name);

/* The string of id, or NULL. Valid while n lives. */
const char *names_lookup(const struct names *n, uint64_t id);

/* The index of job for names_reference_at, added when new. Returns it, or
 * -ENOMEM. */
long names_job_index(struct names *n, const char *job);

/* The job of index j (names_job_index), or NULL. Valid while n lives. */
const char *names_job_name(const struct names *n, long j);

/* A step of job (its names_job_index; a negative one is ignored) references
 * id: when (job, id) is not acked yet and id has a known string, it is
 * queued for the batch being built. */
void names_reference_at(struct names *n, long job, uint64_t id);

/* The entries queued since the last call, stamped with seq (the batch that
 * carries them), as NameEntry structs valid until the next call or
 * names_free. Returns how many. */
size_t names_take(struct names *n, uint64_t seq, Argus__V1__NameEntry ***out);

/* A rank's resource (copied, replacing an older one of the same job and
 * rank) to send until acked. */
int names_set_resource(struct names *n, const Argus__V1__Resource *r);

/* Resources not acked yet, stamped with seq; valid until the next call. */
size_t names_take_resources(struct names *n, uint64_t seq, Argus__V1__Resource ***out);

/* Resources never sent yet (a batch without steps is sealed for them). */
size_t names_unsent_resources(const struct names *n);

/* Every entry carried by a batch with seq <= acked is now known to the
 * collector. */
void names_ack(struct names *n, uint64_t acked);

/* Forget every ack: each entry is sent again with the next batch that
 * needs it, each resource with the next batch (the collectors changed, and
 * a new one has none of them). Entries sent and not acked yet wait for
 * their next sending. */
void names_reset(struct names *n);

#endif
