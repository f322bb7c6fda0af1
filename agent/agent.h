/* agent/: the node daemon's composition root. It wires the stages and runs
 * them on one epoll main loop (DESIGN.md section 1):
 *   discovery/        /proc -> the ranks (pids) to trace
 *   sources/ probes/  those pids -> events (kernels, phases, collectives, ...)
 *   steps/            events -> one step record per rank and step
 *   delivery/         step records -> batches in the spool -> acked by the collector
 * It takes in the config (config.c), signals and /proc, and gives out batches
 * to the collector, /metrics and /healthz (agent_http.c). main() is
 * agent_setup, agent_run, agent_teardown. */
#ifndef ARGUS_AGENT_AGENT_H
#define ARGUS_AGENT_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/sources/source.h"

#define AGENT_MAX_SOURCES 16

struct agent_source {
    const struct source_ops *ops;
    void *state;
    bool running;
    int fd;
    char why[256]; /* why it is not running */
};

/* What /metrics shows, copied by the main loop under lock each tick. */
struct agent_snapshot {
    uint64_t tick_ns; /* monotonic time of the last main-loop tick */
    uint64_t ranks, steps, events, untracked_events;
    uint64_t batches, batch_raw_bytes, batch_frame_bytes, batch_errors;
    uint64_t spool_bytes, spool_records, spool_dropped, spool_dropped_bytes, spool_corrupt;
    uint64_t spool_fsync_errors, spool_acked_seq, spool_epoch;
    bool connected;
    uint64_t sent, acked, reconnects, rejected, resent;
    uint64_t discovery_scans, discovery_processes, discovery_watched;
    uint64_t discovery_skipped[8];                          /* by enum discovery_skip */
    uint64_t frames_waited, frames_expired, frames_waiting; /* agent/steps/stepframes.h */
    uint64_t loop_turns, loop_busy_max_ns;                  /* the main loop's wakeups */
    uint64_t clock_steps; /* times the realtime clock was seen set */
    uint64_t spans_bytes, spans_dropped_age, spans_dropped_cap; /* agent/spans/ */
    uint64_t spans_corrupt, spans_captures;
    size_t nsources;
    struct {
        const char *name;
        bool running;
    } sources[AGENT_MAX_SOURCES];
};

struct agent;

/* Build the agent from cfg (owned by the caller, must outlive the agent).
 * Returns NULL after logging why. */
struct agent *agent_setup(struct agent_config *cfg, int argc, char **argv);

/* Run until SIGTERM/SIGINT; SIGHUP reloads. Returns 0 after a clean stop. */
int agent_run(struct agent *a);

/* Flush what can be flushed (bounded time), stop everything, free. */
void agent_teardown(struct agent *a);

#endif
