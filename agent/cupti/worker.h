/* The worker thread of libargus-cupti.so (worker.c): it drains the buffers
 * CUPTI completed into the shared-memory ring of the agent connection, owns
 * the hello socket, the sampling state and stepping aside when another CUPTI
 * client appears. inject.c starts and stops it; what the worker needs of
 * CUPTI's registration it calls through the hooks it is given, so calls go
 * one way only (inject -> worker). */
#ifndef ARGUS_AGENT_CUPTI_WORKER_H
#define ARGUS_AGENT_CUPTI_WORKER_H

#include <stdbool.h>

#include <cupti.h>

#include "agent/cupti/lib.h"

struct worker_hooks {
    /* Register argus's timestamp and buffer callbacks with CUPTI again
     * (coming back after another client left). Returns the CUPTI result. */
    CUptiResult (*register_callbacks)(void);
    /* Enable (on) or disable the traced activity kinds; MARKER with them
     * when all is set (it stays on while sampling). */
    void (*set_tracing)(bool on, bool all);
};

/* Start the worker thread on state (the pool must be allocated, the
 * settings set; state outlives the worker) with hooks (copied). Connects to
 * the agent once first. Returns 0 or -errno. */
int worker_start(struct lib_state *state, const struct worker_hooks *hooks);

/* Stop the worker, draining what CUPTI has completed into the ring first.
 * Nothing when it was not started. */
void worker_stop(void);

#endif
