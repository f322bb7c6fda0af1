/* The `marker` probe: uprobes on libargus-marker.so (argus_step,
 * argus_phase_begin, argus_phase_end) in tracked ranks' mapped libraries.
 * Emits AGENT_EVENT_STEP (source STEP_SOURCE_MARKER), PHASE_BEGIN (name id =
 * name_id() of the string, announced once) and PHASE_END. */
#ifndef ARGUS_AGENT_PROBE_MARKER_H
#define ARGUS_AGENT_PROBE_MARKER_H

#include <stdbool.h>

#include "agent/sources/event.h"
#include "agent/sources/source.h"

struct argus_marker_record;

struct probe_marker_config {
    bool all_processes;       /* no pid filter (benchmarks) */
    const char *const *files; /* extra library paths to attach at start, NULL-terminated */
};

/* argus.v1.StepSource STEP_SOURCE_MARKER */
#define PROBE_MARKER_STEP_SOURCE 2

/* Decode a raw record into ev (pure). For a phase begin, *name points at the
 * record's NUL-terminated copy of the name (valid while rec is). Returns 0,
 * or -EINVAL (unknown kind, unreadable name). */
int probe_marker_decode(const struct argus_marker_record *rec, struct agent_event *ev,
                        const char **name);

extern const struct source_ops probe_marker_ops;

#endif
