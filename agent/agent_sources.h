/* The agent's sources: the eBPF probes listed in probes.enable (one row
 * each in the probe table of agent_sources.c), CUPTI and the replay
 * sources, each created and started through its source_ops (a source that
 * cannot run is logged and left off with its reason). The agent (agent.c)
 * owns one agent_sources and calls it; the sources report back only through
 * the event sink and the collectives callbacks given in its options.
 *
 * A new probe: its bpf/ program, its agent/probes/ file with a source_ops,
 * and one row in agent_probes[] (agent_sources.c): probes.enable then
 * accepts its source_ops.name (it is on by default once that name is in
 * the option's default, agent/config.c). A probe that reports a new host
 * counter adds its row to agent/steps/host_counters.c too. Single-threaded: the
 * agent's main loop. */
#ifndef ARGUS_AGENT_AGENT_SOURCES_H
#define ARGUS_AGENT_AGENT_SOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "common/log.h"
#include "agent/probes/probe_collectives.h"
#include "agent/sources/source.h"

#define AGENT_SOURCES_MAX 16

struct agent_sources_options {
    const struct agent_config *cfg; /* probes.enable, stacks.*, cupti.*, replay.*; outlives */
    const char *node;               /* the node's name (replay); outlives the sources */
    int epfd;                       /* a source with an fd joins it, data.ptr its handle */
    struct event_sink sink;         /* where every source delivers */
    /* the collectives probe's observers (on_call, on_comm_init, on_done and
     * their ctx); the rest of its config is the sources' own */
    struct probe_collectives_config collectives;
    struct log_ratelimit *rl; /* the agent's one limit on its repeated warnings; outlives */
};

/* A source's name and whether it runs, for /metrics. */
struct agent_source_status {
    const char *name; /* static (source_ops.name) */
    bool running;
};

struct agent_sources;

/* The names probes.enable may list (source_ops.name of every row of the
 * probe table), NULL-terminated, in start order; static. */
const char *const *agent_sources_probe_names(void);

/* An empty set of sources with options o (copied). Returns NULL on
 * allocation failure. */
struct agent_sources *agent_sources_new(const struct agent_sources_options *o);

/* Start the probes listed in probes.enable. One that cannot run is logged
 * and kept off. The caller connects what needs a probe's state
 * (agent_sources_state) before agent_sources_start_others. */
void agent_sources_start_probes(struct agent_sources *s);

/* Then start CUPTI and the replay sources the config asks for, as above.
 * A source may deliver to the sink while it starts (replay announces its
 * ranks), and the sink may call agent_sources_track: s is complete. */
void agent_sources_start_others(struct agent_sources *s);

/* Destroy every source (the log says which took long: uprobe detach waits
 * for the kernel) and free s. s may be NULL. */
void agent_sources_free(struct agent_sources *s);

/* Let the source whose handle an epoll event carried (data.ptr) handle
 * what is pending; an error is logged, rate-limited. */
void agent_sources_dispatch(struct agent_sources *s, void *handle);

/* Dispatch every running source that has no fd (the loop's 100 ms tick). */
void agent_sources_poll(struct agent_sources *s);

/* Does any running source need agent_sources_poll? */
bool agent_sources_polled(const struct agent_sources *s);

/* Stopping: a last dispatch of every running source, then its flush
 * (what it still holds back goes to the sink). */
void agent_sources_flush(struct agent_sources *s);

/* Tell the running sources (only those with ops only, or all when only is
 * NULL) that pid (in mount root root) is a rank now (add) or no longer. */
void agent_sources_track(struct agent_sources *s, const struct source_ops *only, uint32_t pid,
                         const char *root, bool add);

/* The state of the running source with these ops (e.g. the stacks probe's,
 * for stepframes), or NULL when none runs. Valid until agent_sources_free. */
void *agent_sources_state(const struct agent_sources *s, const struct source_ops *ops);

/* The CUPTI duty cycle of config c, at runtime: every traced process gets
 * the new mode over its hello socket. */
void agent_sources_apply_sampling(struct agent_sources *s, const struct agent_config *c);

/* Every source's name and whether it runs, in start order, into
 * out[0..max); returns how many. */
size_t agent_sources_status(const struct agent_sources *s, struct agent_source_status *out,
                            size_t max);

/* The running sources' own Prometheus lines (source_ops.metrics) into buf,
 * NUL-terminated (len > 0). */
void agent_sources_metrics(const struct agent_sources *s, char *buf, size_t len);

#endif
