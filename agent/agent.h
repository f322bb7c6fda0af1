/* agent/: the node daemon's composition root. It wires the stages and runs
 * them on one epoll main loop (docs/design.md section 1):
 *   discovery/        /proc -> the ranks (pids) to trace
 *   sources/ probes/  those pids -> events (kernels, phases, collectives, ...)
 *   steps/            events -> one step record per rank and step
 *   delivery/         step records -> batches in the spool -> acked by the collector
 * It takes in the config (config.c), signals and /proc, and gives out batches
 * to the collector, /metrics and /healthz (agent_http.h). The sources and
 * probes are started and driven by agent_sources.h. main() is
 * agent_setup, agent_run, agent_teardown. */
#ifndef ARGUS_AGENT_AGENT_H
#define ARGUS_AGENT_AGENT_H

#include "agent/config.h"

struct agent;

/* Build the agent from cfg (owned by the caller, must outlive the agent).
 * Returns NULL after logging why. */
struct agent *agent_setup(struct agent_config *cfg, int argc, char **argv);

/* Run until SIGTERM/SIGINT; SIGHUP reloads. Returns 0 after a clean stop. */
int agent_run(struct agent *a);

/* Flush what can be flushed (bounded time), stop everything, free. */
void agent_teardown(struct agent *a);

#endif
