/* The host counters of a step: which field of argus.v1.HostCounters each
 * agent counter (enum agent_counter, agent/sources/event.h) adds to. One
 * table, read by every step maker (the assembler for annotated ranks, the
 * step inferrer for the others), so that a counter a probe reports lands in
 * the same field whichever made the step.
 *
 * A new counter: a value in enum agent_counter, a uint64 field in
 * HostCounters (proto/argus.proto) and one row in host_counters.c. */
#ifndef ARGUS_AGENT_HOST_COUNTERS_H
#define ARGUS_AGENT_HOST_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/sources/event.h"
#include "proto/argus.pb-c.h"

/* The row of an agent counter (its index in the table). */
struct host_counter {
    const char *name; /* the HostCounters field's name, for logs and tests; NULL: unused */
    size_t offset;    /* of its uint64_t field in Argus__V1__HostCounters */
};

/* The row of counter, or NULL for an id with none (out of range, unused). */
const struct host_counter *host_counter_find(uint32_t counter);

/* Add value to counter's field of host; an unknown counter is ignored.
 * Returns 0, or -ENOENT for a counter without a row. */
int host_counters_add(Argus__V1__HostCounters *host, uint32_t counter, uint64_t value);

/* Set every counter's field of host from values[0..AGENT_COUNTER_END),
 * indexed by enum agent_counter. */
void host_counters_set(Argus__V1__HostCounters *host, const uint64_t values[AGENT_COUNTER_END]);

#endif
