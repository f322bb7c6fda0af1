/* The agent counter -> HostCounters field table (see host_counters.h). */
#include "agent/steps/host_counters.h"

#include <errno.h>

/* A row; the field must be a uint64_t (the compile fails otherwise). */
#define HOST_COUNTER(id, field)                                                                    \
    [id] = {#field,                                                                                \
            offsetof(Argus__V1__HostCounters, field) +                                             \
                0 * sizeof(char[__builtin_types_compatible_p(                                      \
                                    __typeof__(((Argus__V1__HostCounters *)0)->field), uint64_t)   \
                                    ? 1                                                            \
                                    : -1])}

static const struct host_counter host_counter_table[AGENT_COUNTER_END] = {
    HOST_COUNTER(AGENT_COUNTER_OFF_CPU_NS, off_cpu_ns),
    HOST_COUNTER(AGENT_COUNTER_RUNQ_NS, runq_ns),
    HOST_COUNTER(AGENT_COUNTER_SYNC_WAIT_NS, sync_wait_ns),
    HOST_COUNTER(AGENT_COUNTER_LAUNCHES, launches),
    HOST_COUNTER(AGENT_COUNTER_RETRANSMITS, retransmits),
    HOST_COUNTER(AGENT_COUNTER_IO_WAIT_NS, io_wait_ns),
    HOST_COUNTER(AGENT_COUNTER_ALLOC_NS, alloc_ns),
};

const struct host_counter *host_counter_find(uint32_t counter)
{
    if (counter >= AGENT_COUNTER_END || !host_counter_table[counter].name)
        return NULL;
    return &host_counter_table[counter];
}

static uint64_t *host_counters_field(Argus__V1__HostCounters *host, const struct host_counter *c)
{
    return (uint64_t *)((char *)host + c->offset);
}

int host_counters_add(Argus__V1__HostCounters *host, uint32_t counter, uint64_t value)
{
    const struct host_counter *c = host_counter_find(counter);

    if (!c)
        return -ENOENT;
    *host_counters_field(host, c) += value;
    return 0;
}

void host_counters_set(Argus__V1__HostCounters *host, const uint64_t values[AGENT_COUNTER_END])
{
    for (uint32_t i = 0; i < AGENT_COUNTER_END; i++) {
        const struct host_counter *c = host_counter_find(i);

        if (c)
            *host_counters_field(host, c) = values[i];
    }
}
