/* /metrics and /healthz of the agent. */
#ifndef ARGUS_AGENT_AGENT_HTTP_H
#define ARGUS_AGENT_AGENT_HTTP_H

#include <pthread.h>

#include "agent/agent.h"
#include "common/http.h"

struct agent_http {
    pthread_mutex_t lock;
    struct agent_snapshot snap;
};

/* http_handler_fn; ctx is a struct agent_http. */
void agent_http_handler(void *ctx, const char *path, struct http_response *resp);

#endif
