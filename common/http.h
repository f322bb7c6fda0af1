/* A small HTTP endpoint for /metrics, /healthz and report pages, on
 * libmicrohttpd with its own thread. Handlers run on that thread: they must
 * only read thread-safe state (atomics, locked snapshots). */
#ifndef ARGUS_COMMON_HTTP_H
#define ARGUS_COMMON_HTTP_H

#include <stddef.h>

struct http_response {
    int status;               /* 200, 404, 503... */
    const char *content_type; /* static string */
    char *body;               /* malloc'd, freed by http.c */
    size_t len;
};

/* Fill resp for a GET of path ("/metrics"). Unknown paths: set 404. */
typedef void (*http_handler_fn)(void *ctx, const char *path, struct http_response *resp);

struct http_server;

/* Listen on "HOST:PORT" (IPv4 dotted address or "localhost"; port 0 picks
 * one). Returns NULL with a sentence in err on failure. */
struct http_server *http_start(const char *listen, http_handler_fn fn, void *ctx, char *err,
                               size_t errlen);

/* The bound port. */
int http_port(const struct http_server *h);

/* Stop the thread and free. NULL is fine. */
void http_stop(struct http_server *h);

/* printf into a growing buffer: the way handlers build bodies. */
struct http_buf {
    char *data;
    size_t len, cap;
    int failed; /* set on allocation failure; the body is then incomplete */
};
void http_buf_printf(struct http_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A Prometheus metric with its HELP and TYPE lines ("counter", "gauge"), then
 * one sample. labels is "" or 'key="value",...' without braces. */
void http_buf_metric(struct http_buf *b, const char *name, const char *type, const char *help,
                     const char *labels, double value);

/* Copy src into dst (len bytes) escaped for a Prometheus label value. */
char *http_label_escape(char *dst, size_t len, const char *src);

/* One more sample of a metric already introduced with http_buf_metric. */
void http_buf_sample(struct http_buf *b, const char *name, const char *labels, double value);

#endif
