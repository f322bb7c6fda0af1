/* /metrics and /healthz of the agent, served from the snapshot the main
 * loop publishes each tick (the HTTP thread never touches live state). The
 * agent (agent.c) fills an agent_snapshot with the stats of its stages and
 * publishes it; /metrics writes it through one table of metrics
 * (agent_http.c: name, type, help, where the value is), then
 * argus_agent_source_up by hand (one sample per source, labelled with its
 * name from the snapshot), then the sources' own lines and the process's. */
#ifndef ARGUS_AGENT_AGENT_HTTP_H
#define ARGUS_AGENT_AGENT_HTTP_H

#include <pthread.h>
#include <stdint.h>

#include "agent/agent_delivery.h"
#include "agent/agent_sources.h"
#include "agent/discovery/discovery.h"
#include "agent/hw/hw.h"
#include "agent/liveness/liveness.h"
#include "agent/spans/spans.h"
#include "agent/steps/assembler.h"
#include "agent/steps/stepframes.h"
#include "agent/steps/stepinfer.h"
#include "common/http.h"

#define AGENT_SOURCE_METRICS_BYTES 8192

/* What /metrics shows: each stage's stats, copied by the main loop. */
struct agent_snapshot {
    uint64_t tick_ns; /* monotonic time of the last main-loop tick */
    struct assembler_stats assembler;
    struct agent_delivery_stats delivery;
    struct discovery_stats discovery;
    struct stepframes_stats frames;
    struct stepinfer_stats stepinfer;
    struct spans_stats spans;
    struct liveness_stats liveness;
    struct hw_stats hw;
    uint64_t loop_turns, loop_busy_max_ns; /* the main loop's wakeups */
    uint64_t clock_steps;                  /* times the realtime clock was seen set */
    /* filled by agent_http_publish */
    size_t nsources;
    struct agent_source_status sources[AGENT_SOURCES_MAX];
};

struct agent_http {
    pthread_mutex_t lock;
    struct agent_snapshot snap;
    /* the sources' own metrics (source_ops.metrics), Prometheus text,
     * rendered by the main loop at most once a second */
    char source_metrics[AGENT_SOURCE_METRICS_BYTES];
    uint64_t next_source_metrics_ns;
    /* per source of snap.sources: a uprobe source none of whose uprobes
     * attach, as of source_metrics (shown as down) */
    bool attach_failed[AGENT_SOURCES_MAX];
    /* the per-collector metrics (agent_delivery_member_metrics), rendered
     * with the sources' at most once a second; malloc'd, or NULL */
    char *member_metrics;
};

/* Initialise h (its lock); agent_http_destroy undoes it. */
void agent_http_init(struct agent_http *h);
void agent_http_destroy(struct agent_http *h);

/* http_handler_fn; ctx is a struct agent_http. */
void agent_http_handler(void *ctx, const char *path, struct http_response *resp);

/* The main loop's side: copy snap into h under its lock, with the status
 * of every source, and the sources' own metrics and the per-collector ones
 * of delivery at most once a second (a uprobe source none of whose uprobes
 * attach shows as down). now is monotonic. */
void agent_http_publish(struct agent_http *h, const struct agent_snapshot *snap,
                        const struct agent_sources *sources, const struct agent_delivery *delivery,
                        uint64_t now);

#endif
