/* The engine under the uprobe probes (collectives, sync): one instance of
 * bpf/calls.bpf.c, its ring buffer, the tracked-pid map, and uprobes on a
 * table of functions in matching libraries, attached per inode and re-scanned
 * from /proc/PID/maps every second (libraries loaded late, e.g. by
 * `import torch`, are picked up). Each call comes back as one
 * argus_call_record to the owner's callback. */
#ifndef ARGUS_AGENT_PROBE_CALLS_H
#define ARGUS_AGENT_PROBE_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/probes/probe_common.h"

struct argus_call_record;

struct probe_calls_spec {
    const char *probe; /* metric label */
    const struct probe_uprobe_func *funcs;
    size_t nfuncs;
    const char *const *libs;  /* basename prefixes, NULL-terminated */
    bool all_processes;       /* no pid filter in BPF (benchmarks, tests) */
    const char *const *files; /* extra library paths to attach at start, NULL-terminated */
    /* One record, on the dispatching thread: a struct argus_call_text when
     * its cookie has ARGUS_CALL_TEXT (checked to be that long; shorter
     * records are counted and dropped). Returns events delivered. */
    int (*on_record)(void *owner, const struct argus_call_record *rec);
    void *owner;
    const char *drop_reason; /* AGENT_EVENT_DROPS reason when the ring is full */
};

struct probe_calls;

/* Copies spec (the arrays it points to must outlive the instance). NULL on
 * allocation failure. */
struct probe_calls *probe_calls_new(const struct probe_calls_spec *spec);

/* Load, attach the extra files, apply pids tracked before start. Drops
 * (ring full) are reported to sink as AGENT_EVENT_DROPS. Returns 0 or -errno
 * with why set. */
int probe_calls_start(struct probe_calls *pc, const struct event_sink *sink, char *why,
                      size_t whylen);

/* Re-scan (at most once a second) and consume the ring. Returns the number
 * of events the callback delivered, or -errno. */
int probe_calls_dispatch(struct probe_calls *pc);

/* Track or untrack pid (before or after start). Returns 0 or -errno. */
int probe_calls_track(struct probe_calls *pc, uint32_t pid, const char *root, bool add);

/* The fd for source_ops.fd: readable when the ring is a quarter full or
 * every 100 ms; -1 before start. */
int probe_calls_fd(struct probe_calls *pc);

size_t probe_calls_metrics(struct probe_calls *pc, char *buf, size_t len);

/* Detach and free; NULL is fine. */
void probe_calls_free(struct probe_calls *pc);

#endif
