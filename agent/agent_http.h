/* /metrics and /healthz of the agent. */
#ifndef ARGUS_AGENT_AGENT_HTTP_H
#define ARGUS_AGENT_AGENT_HTTP_H

#include <pthread.h>

#include "agent/agent.h"
#include "common/http.h"

#define AGENT_SOURCE_METRICS_BYTES 8192

struct agent_http {
    pthread_mutex_t lock;
    struct agent_snapshot snap;
    /* the sources' own metrics (source_ops.metrics), Prometheus text,
     * rendered by the main loop at most once a second */
    char source_metrics[AGENT_SOURCE_METRICS_BYTES];
};

/* http_handler_fn; ctx is a struct agent_http. */
void agent_http_handler(void *ctx, const char *path, struct http_response *resp);

struct agent;

/* The main loop's side: copy the stats of every stage into a's snapshot,
 * under its lock, and the sources' own metrics at most once a second. now
 * is monotonic. */
void agent_publish(struct agent *a, uint64_t now);

#endif
