/* The collector's /metrics and /healthz. */
#ifndef ARGUS_COLLECTOR_METRICS_H
#define ARGUS_COLLECTOR_METRICS_H

#include "common/http.h"

struct actions;
struct alerts;
struct diagnosis;
struct diagq;
struct fleet;
struct ingest;
struct membership;
struct remote_write;
struct store;
struct stream_clock;
struct transport_server;

struct collector_metrics_ctx {
    struct ingest *ingest;
    struct store *store;
    struct transport_server *transport;
    struct diagnosis *diagnosis;
    struct diagq *diagq;
    struct stream_clock *clock;
    struct alerts *alerts;             /* NULL: no alert series */
    struct trace_capture *traces;      /* may be NULL */
    struct remote_write *remote_write; /* NULL: remote write off */
    struct membership *membership;     /* the collector set; NULL: no such series */
    struct fleet *fleet;               /* fleet memory; NULL: no such series */
    struct actions *actions;           /* NULL: no action series */
};

/* http_handler_fn for the collector (ctx = struct collector_metrics_ctx). */
void collector_http_handler(void *ctx, const char *path, struct http_response *resp);

#endif
