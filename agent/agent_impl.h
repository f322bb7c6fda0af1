/* The agent's state, shared by the files of the composition root: agent.c
 * (setup, the event path, the loop, teardown), agent_sources.c (sources and
 * probes) and agent_http.c (the /metrics snapshot). main.c uses agent.h. */
#ifndef ARGUS_AGENT_AGENT_IMPL_H
#define ARGUS_AGENT_AGENT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/agent_http.h"
#include "agent/probes/probe_collectives.h"
#include "agent/probes/probe_stacks.h"
#include "agent/sources/records.h"
#include "agent/sources/source_cupti.h"
#include "agent/sources/source_replay.h"
#include "common/clock.h"
#include "common/clock.h"
#include "common/log.h"

#define AGENT_MAX_SLEEP_NS NSEC_PER_SEC /* /metrics is at most this stale */

struct agent {
    struct agent_config *cfg;
    int argc;
    char **argv;
    char node[256], agent_id[256];
    struct names *names;
    struct drops *drops; /* every drop counter (agent/delivery/drops.h) */
    struct batcher *batcher;
    struct spool *spool;
    struct exporter *exporter;
    struct assembler *assembler;
    struct stepinfer *stepinfer;
    struct discovery *discovery;
    struct stepframes *frames; /* steps waiting for their stack samples */
    struct spans *spans;       /* raw spans per rank for drill-down (agent/spans/) */
    struct probe_collectives_config collectives;
    struct probe_stacks_config stacks;
    struct clock_offset clock; /* monotonic to UNIX time, refreshed each tick */
    uint64_t clock_steps;
    uint64_t next_infer_ns;
    struct agent_source sources[AGENT_MAX_SOURCES];
    size_t nsources;
    struct event_sink sink;
    struct replay_config replay;
    struct source_cupti_config cupti;
    struct records_config records;
    struct agent_http http_state;
    struct http_server *http;
    int epfd, sigfd;
    uint64_t next_scan_ns, next_dispatch_ns, batch_errors;
    uint64_t loop_turns, loop_busy_max_ns, next_source_metrics_ns;
    struct log_ratelimit rl;
    uint64_t discovery_logged; /* a digest of the discovery counts last logged */
};

/* A process created a communicator (the collectives probe): discovery
 * learns its rank (agent.c). */
void agent_comm_init(struct agent *a, uint32_t pid, uint32_t rank, uint32_t size, const char *what);

/* Is a source with these ops running? (agent_sources.c) */
bool agent_source_running(const struct agent *a, const struct source_ops *ops);

#endif
