#include "common/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler_fn fn;
    void *ctx;
    int port;
};

static enum MHD_Result http_answer(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    struct http_server *h = cls;
    struct http_response resp = {.status = 404, .content_type = "text/plain; charset=utf-8"};
    struct MHD_Response *r;
    enum MHD_Result ret;

    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        resp.status = 405;
        resp.body = strdup("only GET\n");
    } else {
        h->fn(h->ctx, url, &resp);
    }
    if (!resp.body) {
        resp.body = strdup(resp.status == 404 ? "not found\n" : "");
        resp.len = resp.body ? strlen(resp.body) : 0;
    }
    r = MHD_create_response_from_buffer(resp.len, resp.body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(resp.body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", resp.content_type);
    ret = MHD_queue_response(conn, (unsigned)resp.status, r);
    MHD_destroy_response(r);
    return ret;
}

static int http_parse_listen(const char *listen, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(listen, ':');
    char *end;
    long port;

    if (!colon || (size_t)(colon - listen) >= sizeof(host))
        return -EINVAL;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535)
        return -EINVAL;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (!*host)
        strcpy(host, "0.0.0.0");
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

struct http_server *http_start(const char *listen, http_handler_fn fn, void *ctx, char *err,
                               size_t errlen)
{
    struct http_server *h;
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (http_parse_listen(listen, &sa) < 0) {
        snprintf(err, errlen, "'%s' is not an IPv4 HOST:PORT", listen);
        return NULL;
    }
    h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->fn = fn;
    h->ctx = ctx;
    h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
                                 http_answer, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                 MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT,
                                 64u, MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, errlen, "cannot listen on %s: %s", listen,
                 strerror(errno ? errno : EADDRINUSE));
        free(h);
        return NULL;
    }
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    if (info) {
        struct sockaddr_in bound;
        socklen_t len = sizeof(bound);
        if (getsockname(info->listen_fd, (struct sockaddr *)&bound, &len) == 0)
            h->port = ntohs(bound.sin_port);
    }
    return h;
}

int http_port(const struct http_server *h)
{
    return h->port;
}

void http_stop(struct http_server *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->daemon);
    free(h);
}

void http_buf_printf(struct http_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->failed)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->data && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
}

void http_buf_sample(struct http_buf *b, const char *name, const char *labels, double value)
{
    if (labels && *labels)
        http_buf_printf(b, "%s{%s} %.17g\n", name, labels, value);
    else
        http_buf_printf(b, "%s %.17g\n", name, value);
}

void http_buf_metric(struct http_buf *b, const char *name, const char *type, const char *help,
                     const char *labels, double value)
{
    http_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    http_buf_sample(b, name, labels, value);
}

char *http_label_escape(char *dst, size_t len, const char *src)
{
    size_t k = 0;

    for (; src && *src && k + 3 < len; src++) {
        if (*src == '"' || *src == '\\')
            dst[k++] = '\\';
        if (*src == '\n') {
            dst[k++] = '\\';
            dst[k++] = 'n';
            continue;
        }
        dst[k++] = *src;
    }
    if (len)
        dst[k] = '\0';
    return dst;
}
