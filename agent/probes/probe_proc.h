/* The `proc` probe: process exec and exit of every process on the node
 * (tp_btf sched_process_exec / sched_process_exit), delivered as
 * AGENT_EVENT_PROC_EXEC / PROC_EXIT so discovery looks at new processes and
 * forgets dead ranks, and liveness (agent/liveness/) says how a rank ended. Not filtered by pid:
 * discovery needs all of them. */
#ifndef ARGUS_AGENT_PROBE_PROC_H
#define ARGUS_AGENT_PROBE_PROC_H

#include "agent/sources/event.h"
#include "agent/sources/source.h"

struct argus_proc_event;

/* Decode a raw record (pure): an exit's raw status into ev->exit (its
 * code, or the signal and core dump). Returns 0 or -EINVAL for an unknown
 * kind. */
int probe_proc_decode(const struct argus_proc_event *rec, struct agent_event *ev);

extern const struct source_ops probe_proc_ops;

#endif
