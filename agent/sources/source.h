/* agent/sources/: where the agent's events come from. In: the CUPTI span
 * rings libargus-cupti.so fills inside training processes (source_cupti,
 * with NVTX ranges projected onto the GPU by source_cupti_proj), or, to run
 * without a GPU, a PyTorch profiler trace (source_replay over kineto) or a
 * recorded step-records file (records); and from the agent, which processes
 * are ranks. Out: agent events (event.h: steps, phases, GPU kernels, ranks,
 * drops, or whole recorded step records) and name strings, one at a time to
 * the agent's event_sink on its main thread, for the step assembler
 * (agent/steps/). The eBPF probes (agent/probes/) are sources too.
 *
 * This header is the one interface every event source implements: eBPF
 * probes (agent/probes/probe_*.c), the CUPTI shared-memory rings
 * (agent/sources/source_cupti.c) and the replay sources
 * (agent/sources/source_replay.c, records.c). The agent's main loop polls
 * each source's fd (or calls dispatch on a timer when it has none) and
 * tells every source which processes are ranks.
 *
 * A source that cannot run here (no BPF, no permission, no CUDA) fails
 * supported() or start() with a negative errno and a reason; the agent logs
 * it, reports it in /metrics, and runs on without it. */
#ifndef ARGUS_AGENT_SOURCE_H
#define ARGUS_AGENT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/sources/event.h"

struct source_ops {
    const char *name; /* "sched", "collectives", "cupti", "replay"... */

    /* Can this source run on this machine? Returns 0, or -errno and a
     * sentence in why (whylen bytes). Must not have side effects. */
    int (*supported)(char *why, size_t whylen);

    /* Create the source's state (opaque to the agent). config is the
     * source's own options struct (NULL for defaults). Returns NULL and sets
     * why on failure. */
    void *(*create)(const void *config, char *why, size_t whylen);

    /* Load, attach, start threads. Events go to sink from dispatch() only.
     * Returns 0 or -errno with why set. */
    int (*start)(void *state, const struct event_sink *sink, char *why, size_t whylen);

    /* A file descriptor that becomes readable when dispatch has work, or -1
     * when the agent should call dispatch every tick (100 ms). */
    int (*fd)(void *state);

    /* Deliver what is ready to the sink without blocking. Returns the number
     * of events delivered, or -errno (the agent logs it, rate-limited). */
    int (*dispatch)(void *state);

    /* The set of ranks changed: pid is now tracked (add) or no longer. May be
     * NULL when the source does not filter by pid. */
    int (*track)(void *state, uint32_t pid, const char *root, bool add);

    /* Write the source's own Prometheus metrics (counters, drops) to buf.
     * Returns bytes written. May be NULL. */
    size_t (*metrics)(void *state, char *buf, size_t len);

    /* The agent is stopping, after a last dispatch: deliver to the sink
     * what the source still holds back for later (the sched probe's thread
     * ends waiting for their free). May be NULL. */
    void (*flush)(void *state);

    /* Detach, stop threads, free everything. state may be NULL. */
    void (*destroy)(void *state);
};

#endif
