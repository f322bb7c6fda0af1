#include "collector/transport/transport.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collector/transport/transport_peers.h"
#include "collector/transport/transport_tls.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/rpc_paths.h"

#define TRANSPORT_MAX_METHODS 16
#define TRANSPORT_MAX_WORKERS 64
#define TRANSPORT_REQUESTS_PER_METHOD 16 /* calls kept requested per method and queue */

enum transport_op {
    OP_NEW,
    OP_RECV,
    OP_SEND,
    OP_STATUS,
    OP_CLOSE,
};

struct transport_method {
    const char *path;
    void *handle;
    bool stream;
    bool generic; /* every method not registered: answered UNIMPLEMENTED */
    const struct transport_stream_ops *ops;
    transport_unary_fn unary;
    void *ctx;
};

/* A completion queue and the thread that serves it. Every batch of a call
 * on cq starts from that thread, while it handles an event under lock; once
 * cq is shut down none may start (gRPC asserts), so transport_free shuts it
 * down under lock and sets closed, which the thread reads under lock. */
struct transport_worker {
    struct transport_server *t;
    grpc_completion_queue *cq;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    bool closed; /* cq shut down: no batch starts, no call is requested */
};

struct transport_call;

struct transport_tag {
    struct transport_call *call;
    enum transport_op op;
};

struct transport_call {
    struct transport_worker *w;
    struct transport_method *m;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array request_md;
    grpc_call_details details; /* the method of a generic call */
    char peer_key[TRANSPORT_PEER_KEY];
    bool counted;               /* entered in the peer table: left when freed */
    grpc_byte_buffer *payload;  /* unary request, or the stream's current recv */
    grpc_byte_buffer *send_buf; /* the stream's send in flight */
    grpc_slice status_details;
    bool have_details;
    int cancelled;   /* RECV_CLOSE_ON_SERVER output */
    int outstanding; /* batches in flight */
    void *stream;    /* stream handler state */
    bool opened, send_busy, finishing, status_started, metadata_sent;
    void *pending; /* newest reply waiting for the send slot */
    size_t pending_len;
    int final_status;
    char final_message[256];
    struct transport_tag t_new, t_recv, t_send, t_status, t_close;
};

struct transport_server {
    struct transport_options opts;
    struct transport_tls *tls; /* NULL: plaintext */
    grpc_server *server;
    struct transport_method methods[TRANSPORT_MAX_METHODS];
    unsigned nmethods;
    struct transport_method unknown; /* the generic calls */
    struct transport_peers *peers;
    struct transport_worker *workers;
    unsigned nworkers;
    atomic_bool shutting_down;
    atomic_bool shutdown_done;
    int shutdown_tag;
    bool started;
    atomic_uint_fast64_t opened, closed, messages, unary_calls, unimplemented, refused_busy;
};

static void transport_request(struct transport_worker *w, struct transport_method *m);

static struct transport_call *transport_call_new(struct transport_worker *w,
                                                 struct transport_method *m)
{
    struct transport_call *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->w = w;
    c->m = m;
    grpc_metadata_array_init(&c->request_md);
    grpc_call_details_init(&c->details);
    c->t_new = (struct transport_tag){c, OP_NEW};
    c->t_recv = (struct transport_tag){c, OP_RECV};
    c->t_send = (struct transport_tag){c, OP_SEND};
    c->t_status = (struct transport_tag){c, OP_STATUS};
    c->t_close = (struct transport_tag){c, OP_CLOSE};
    return c;
}

static void transport_call_free(struct transport_call *c)
{
    if (c->stream && c->m->ops && c->opened) {
        c->m->ops->close(c->stream);
        atomic_fetch_add(&c->w->t->closed, 1);
    }
    if (c->payload)
        grpc_byte_buffer_destroy(c->payload);
    if (c->send_buf)
        grpc_byte_buffer_destroy(c->send_buf);
    if (c->have_details)
        grpc_slice_unref(c->status_details);
    free(c->pending);
    grpc_metadata_array_destroy(&c->request_md);
    grpc_call_details_destroy(&c->details);
    if (c->counted)
        transport_peers_leave(c->w->t->peers, c->peer_key);
    if (c->call)
        grpc_call_unref(c->call);
    free(c);
}

static void transport_maybe_free(struct transport_call *c)
{
    if (c->outstanding == 0)
        transport_call_free(c);
}

static bool transport_start_batch(struct transport_call *c, const grpc_op *ops, size_t n,
                                  struct transport_tag *tag)
{
    grpc_call_error e;

    if (c->w->closed) /* shutting down: the call ends with what is in flight */
        return false;
    e = grpc_call_start_batch(c->call, ops, n, tag, NULL);
    if (e != GRPC_CALL_OK) {
        log_error("transport", "grpc_call_start_batch: error %d", (int)e);
        return false;
    }
    c->outstanding++;
    return true;
}

/* Copy a byte buffer's content into one contiguous slice. */
static grpc_slice transport_read_all(grpc_byte_buffer *bb)
{
    grpc_byte_buffer_reader r;
    grpc_slice s;

    if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
        return grpc_empty_slice();
    s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    return s;
}

static grpc_byte_buffer *transport_wrap(void *data, size_t len)
{
    grpc_slice s = grpc_slice_new(data, len, free); /* takes ownership of data */
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);

    grpc_slice_unref(s);
    return bb;
}

static void transport_send_status(struct transport_call *c)
{
    grpc_op ops[2] = {{0}};
    size_t n = 0;

    c->status_started = true;
    c->status_details = grpc_slice_from_copied_string(c->final_message);
    c->have_details = true;
    if (!c->metadata_sent) /* a stream refused at open: gRPC waits for these otherwise */
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    c->metadata_sent = true;
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)c->final_status;
    ops[n++].data.send_status_from_server.status_details =
        c->final_status == TRANSPORT_OK ? NULL : &c->status_details;
    transport_start_batch(c, ops, n, &c->t_status);
}

/* End a call that was never served (unknown method, peer over its cap,
 * no complete request) with status and message, and wait for its close. */
static void transport_refuse(struct transport_call *c, int status, const char *message)
{
    grpc_op ops[3] = {{0}};

    c->finishing = c->status_started = c->metadata_sent = true;
    snprintf(c->final_message, sizeof(c->final_message), "%s", message);
    c->status_details = grpc_slice_from_copied_string(c->final_message);
    c->have_details = true;
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[1].data.send_status_from_server.status = (grpc_status_code)status;
    ops[1].data.send_status_from_server.status_details = &c->status_details;
    ops[2].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[2].data.recv_close_on_server.cancelled = &c->cancelled;
    transport_start_batch(c, ops, 3, &c->t_status);
}

/* End the stream with a status once the send slot is free. */
static void transport_finish(struct transport_call *c, int status, const char *message)
{
    if (c->finishing)
        return;
    c->finishing = true;
    c->final_status = status;
    snprintf(c->final_message, sizeof(c->final_message), "%s", message ? message : "");
    if (!c->send_busy)
        transport_send_status(c);
}

static void transport_send(struct transport_call *c, void *data, size_t len)
{
    grpc_op op = {0};

    c->send_buf = transport_wrap(data, len);
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = c->send_buf;
    c->send_busy = transport_start_batch(c, &op, 1, &c->t_send);
}

static void transport_queue_reply(struct transport_call *c, void *data, size_t len)
{
    if (c->send_busy) {
        free(c->pending); /* replies are cumulative acks: keep the newest */
        c->pending = data;
        c->pending_len = len;
        return;
    }
    transport_send(c, data, len);
}

static void transport_post_recv(struct transport_call *c, bool with_metadata)
{
    grpc_op ops[2] = {{0}};
    size_t n = 0;

    if (with_metadata)
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    c->metadata_sent = true;
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n++].data.recv_message.recv_message = &c->payload;
    transport_start_batch(c, ops, n, &c->t_recv);
}

bool transport_peer_may(const struct transport_peer *peer, unsigned role, const char *method,
                        struct transport_reply *reply)
{
    if (peer->roles & role)
        return true;
    reply->status = TRANSPORT_PERMISSION_DENIED;
    snprintf(reply->message, sizeof(reply->message),
             "certificate '%s' (roles: %s) may not call %s: it needs OU=%s",
             peer->identity ? peer->identity : "?", tls_role_name(peer->roles), method,
             tls_role_name(role));
    return false;
}

/* Who is calling (see struct transport_peer); identity points into ident.
 * Returns gRPC's peer string (the caller gpr_frees it; NULL is fine). */
static char *transport_peer_of(struct transport_call *c, struct transport_peer *p, char *ident,
                               size_t len)
{
    char *addr = grpc_call_get_peer(c->call);

    *p = (struct transport_peer){addr ? addr : "?", NULL, TLS_ROLE_ALL};
    if (c->w->t->tls) {
        transport_tls_peer(c->call, ident, len, &p->roles);
        p->identity = ident;
    }
    return addr;
}

static void transport_stream_new(struct transport_call *c)
{
    grpc_op op = {0};
    struct transport_reply reply = {.status = TRANSPORT_OK};
    struct transport_peer peer;
    char ident[TLS_MAX_IDENTITY];

    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    transport_start_batch(c, &op, 1, &c->t_close);
    char *addr = transport_peer_of(c, &peer, ident, sizeof(ident));
    c->stream = c->m->ops->open(c->m->ctx, &peer, &reply);
    gpr_free(addr);
    if (!c->stream) {
        if (reply.status == TRANSPORT_OK)
            transport_finish(c, TRANSPORT_UNAVAILABLE, "collector is not accepting streams");
        else
            transport_finish(c, reply.status, reply.message);
        return;
    }
    c->opened = true;
    atomic_fetch_add(&c->w->t->opened, 1);
    transport_post_recv(c, true);
}

static void transport_stream_recv(struct transport_call *c, bool ok)
{
    struct transport_reply reply = {.status = TRANSPORT_OK};

    if (!ok || !c->payload) {
        /* half-close by the client (payload NULL) or a dead call */
        if (ok)
            transport_finish(c, TRANSPORT_OK, NULL);
        return;
    }
    grpc_slice s = transport_read_all(c->payload);
    grpc_byte_buffer_destroy(c->payload);
    c->payload = NULL;
    atomic_fetch_add(&c->w->t->messages, 1);
    c->m->ops->message(c->stream, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), &reply);
    grpc_slice_unref(s);
    if (reply.data)
        transport_queue_reply(c, reply.data, reply.len);
    if (reply.status != TRANSPORT_OK)
        transport_finish(c, reply.status, reply.message);
    else
        transport_post_recv(c, false);
}

static void transport_stream_sent(struct transport_call *c, bool ok)
{
    c->send_busy = false;
    grpc_byte_buffer_destroy(c->send_buf);
    c->send_buf = NULL;
    if (ok && c->pending) {
        void *data = c->pending;
        c->pending = NULL;
        transport_send(c, data, c->pending_len);
        return;
    }
    if (c->finishing && !c->status_started)
        transport_send_status(c);
}

static void transport_unary_new(struct transport_call *c)
{
    struct transport_reply reply = {.status = TRANSPORT_OK};
    grpc_op ops[4] = {{0}};
    size_t n = 0;
    struct transport_peer peer;
    char ident[TLS_MAX_IDENTITY];

    if (!c->payload) { /* gRPC drops a message cut short by the end of the call */
        transport_refuse(c, TRANSPORT_INVALID_ARGUMENT,
                         "the request holds no complete message (missing, or cut short)");
        return;
    }
    grpc_slice s = transport_read_all(c->payload);
    atomic_fetch_add(&c->w->t->unary_calls, 1);
    char *addr = transport_peer_of(c, &peer, ident, sizeof(ident));
    c->m->unary(c->m->ctx, &peer, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), &reply);
    gpr_free(addr);
    grpc_slice_unref(s);
    grpc_byte_buffer_destroy(c->payload);
    c->payload = NULL;

    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (reply.status == TRANSPORT_OK) {
        c->send_buf =
            transport_wrap(reply.data ? reply.data : malloc(1), reply.data ? reply.len : 0);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->send_buf;
    } else {
        free(reply.data);
    }
    c->status_details = grpc_slice_from_copied_string(reply.message);
    c->have_details = true;
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)reply.status;
    ops[n++].data.send_status_from_server.status_details =
        reply.status == TRANSPORT_OK ? NULL : &c->status_details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    transport_start_batch(c, ops, n, &c->t_status);
}

/* Count the call against its peer's cap; a peer at its cap is refused
 * with RESOURCE_EXHAUSTED (and false returned). */
static bool transport_admit(struct transport_call *c)
{
    struct transport_server *t = c->w->t;
    char *addr = grpc_call_get_peer(c->call);
    char msg[256];
    int r;

    transport_peers_key(addr ? addr : "?", c->peer_key);
    gpr_free(addr);
    r = transport_peers_enter(t->peers, c->peer_key);
    c->counted = r > 0;
    if (r != -EBUSY)
        return true; /* -ENOMEM: served uncounted rather than refused */
    atomic_fetch_add(&t->refused_busy, 1);
    snprintf(msg, sizeof(msg),
             "%s has %u calls open, the most one peer may (" RPC_PEER_CAP_MARK "): "
             "retry once some have ended",
             c->peer_key, (unsigned)t->opts.max_calls_per_peer);
    transport_refuse(c, TRANSPORT_RESOURCE_EXHAUSTED, msg);
    return false;
}

/* A call of a method nobody registered: UNIMPLEMENTED, and freed once the
 * status is sent and the peer has closed (gRPC holds it, and its
 * connection, until then). */
static void transport_unknown_new(struct transport_call *c)
{
    char msg[256];
    int n = (int)GRPC_SLICE_LENGTH(c->details.method);

    atomic_fetch_add(&c->w->t->unimplemented, 1);
    snprintf(msg, sizeof(msg), "the argus collector does not serve the method %.*s",
             n > 160 ? 160 : n, (const char *)GRPC_SLICE_START_PTR(c->details.method));
    transport_refuse(c, TRANSPORT_UNIMPLEMENTED, msg);
}

static void transport_dispatch(struct transport_tag *tag, bool ok)
{
    struct transport_call *c = tag->call;
    struct transport_server *t = c->w->t;

    if (tag->op == OP_NEW) {
        if (!ok) { /* server shutting down: the requested call never came */
            transport_call_free(c);
            return;
        }
        if (!atomic_load(&t->shutting_down))
            transport_request(c->w, c->m);
        if (!transport_admit(c))
            ; /* refused: the status is on its way */
        else if (c->m->generic)
            transport_unknown_new(c);
        else if (c->m->stream)
            transport_stream_new(c);
        else
            transport_unary_new(c);
        transport_maybe_free(c);
        return;
    }
    c->outstanding--;
    switch (tag->op) {
    case OP_RECV:
        transport_stream_recv(c, ok);
        break;
    case OP_SEND:
        transport_stream_sent(c, ok);
        break;
    default: /* OP_STATUS, OP_CLOSE: nothing more to do */
        break;
    }
    transport_maybe_free(c);
}

static void transport_request(struct transport_worker *w, struct transport_method *m)
{
    struct transport_call *c;
    grpc_call_error e;

    if (w->closed)
        return;
    c = transport_call_new(w, m);
    if (!c)
        return;
    if (m->generic)
        e = grpc_server_request_call(w->t->server, &c->call, &c->details, &c->request_md, w->cq,
                                     w->cq, &c->t_new);
    else
        e = grpc_server_request_registered_call(w->t->server, m->handle, &c->call, &c->deadline,
                                                &c->request_md, m->stream ? NULL : &c->payload,
                                                w->cq, w->cq, &c->t_new);
    if (e != GRPC_CALL_OK) {
        log_error("transport", "request_registered_call %s: error %d", m->path, (int)e);
        transport_call_free(c);
    }
}

/* Serve w's queue until it is shut down and empty: every call on it is
 * then freed. */
static void *transport_worker_main(void *arg)
{
    struct transport_worker *w = arg;

    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (ev.tag == &w->t->shutdown_tag) {
            atomic_store(&w->t->shutdown_done, true);
            continue;
        }
        pthread_mutex_lock(&w->lock);
        transport_dispatch(ev.tag, ev.success != 0);
        pthread_mutex_unlock(&w->lock);
    }
    return NULL;
}

struct transport_server *transport_new(const struct transport_options *o)
{
    struct transport_server *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->opts = *o;
    if (t->opts.workers < 1)
        t->opts.workers = 1;
    if (t->opts.workers > TRANSPORT_MAX_WORKERS)
        t->opts.workers = TRANSPORT_MAX_WORKERS;
    t->peers = transport_peers_new(o->max_calls_per_peer);
    if (!t->peers) {
        free(t);
        return NULL;
    }
    t->unknown = (struct transport_method){.path = "(unregistered)", .generic = true};
    grpc_init();
    return t;
}

int transport_add_stream(struct transport_server *t, const char *method,
                         const struct transport_stream_ops *ops, void *ctx)
{
    if (t->started || t->nmethods >= TRANSPORT_MAX_METHODS)
        return -EINVAL;
    t->methods[t->nmethods++] =
        (struct transport_method){.path = method, .stream = true, .ops = ops, .ctx = ctx};
    return 0;
}

int transport_add_unary(struct transport_server *t, const char *method, transport_unary_fn fn,
                        void *ctx)
{
    if (t->started || t->nmethods >= TRANSPORT_MAX_METHODS)
        return -EINVAL;
    t->methods[t->nmethods++] = (struct transport_method){.path = method, .unary = fn, .ctx = ctx};
    return 0;
}

static grpc_server *transport_create_server(const struct transport_options *o)
{
    grpc_arg args[6];
    int n = 0;
    int keepalive = (int)(o->keepalive_ms ? o->keepalive_ms : 30000);

    args[n++] = (grpc_arg){
        GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = (int)o->max_message}};
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = keepalive}};
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 10000}};
    args[n++] =
        (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, {.integer = 1}};
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER,
                           GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                           {.integer = keepalive / 2}};
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MAX_PING_STRIKES, {.integer = 0}};
    grpc_channel_args ca = {(size_t)n, args};
    return grpc_server_create(&ca, NULL);
}

int transport_start(struct transport_server *t)
{
    grpc_server_credentials *creds;
    int port;

    t->server = transport_create_server(&t->opts);
    t->workers = calloc(t->opts.workers, sizeof(*t->workers));
    if (!t->server || !t->workers)
        return -ENOMEM;
    t->nworkers = t->opts.workers;
    for (unsigned i = 0; i < t->nworkers; i++) {
        t->workers[i].t = t;
        pthread_mutex_init(&t->workers[i].lock, NULL);
        t->workers[i].cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(t->server, t->workers[i].cq, NULL);
    }
    for (unsigned i = 0; i < t->nmethods; i++) {
        struct transport_method *m = &t->methods[i];
        m->handle = grpc_server_register_method(
            t->server, m->path, NULL,
            m->stream ? GRPC_SRM_PAYLOAD_NONE : GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    }
    if (tls_files_set(&t->opts.tls)) {
        char err[512];
        t->tls = transport_tls_new(&t->opts.tls, err, sizeof(err));
        if (!t->tls) {
            log_error("transport", "%s", err);
            return -EINVAL;
        }
        creds = transport_tls_credentials(t->tls);
    } else {
        creds = grpc_insecure_server_credentials_create();
    }
    port = creds ? grpc_server_add_http2_port(t->server, t->opts.listen, creds) : 0;
    if (creds)
        grpc_server_credentials_release(creds);
    if (port <= 0)
        return creds ? -EADDRINUSE : -EINVAL;
    grpc_server_start(t->server);
    t->started = true;
    for (unsigned i = 0; i < t->nworkers; i++) {
        for (unsigned m = 0; m < t->nmethods; m++)
            for (int k = 0; k < TRANSPORT_REQUESTS_PER_METHOD; k++)
                transport_request(&t->workers[i], &t->methods[m]);
        for (int k = 0; k < TRANSPORT_REQUESTS_PER_METHOD; k++)
            transport_request(&t->workers[i], &t->unknown);
        t->workers[i].running =
            pthread_create(&t->workers[i].thread, NULL, transport_worker_main, &t->workers[i]) == 0;
    }
    return port;
}

void transport_get_stats(struct transport_server *t, struct transport_stats *out)
{
    out->streams_opened = atomic_load(&t->opened);
    out->streams_closed = atomic_load(&t->closed);
    out->messages = atomic_load(&t->messages);
    out->unary_calls = atomic_load(&t->unary_calls);
    out->unimplemented = atomic_load(&t->unimplemented);
    out->refused_busy = atomic_load(&t->refused_busy);
    out->peers = transport_peers_count(t->peers);
}

void transport_reload_certs(struct transport_server *t)
{
    if (t->tls)
        transport_tls_request_reload(t->tls);
}

int transport_cert_expiry(struct transport_server *t, int64_t *cert_not_after,
                          int64_t *ca_not_after)
{
    if (!t->tls)
        return -ENOENT;
    transport_tls_expiry(t->tls, cert_not_after, ca_not_after);
    return 0;
}

void transport_free(struct transport_server *t)
{
    if (!t)
        return;
    if (t->server && t->started) {
        atomic_store(&t->shutting_down, true);
        grpc_server_shutdown_and_notify(t->server, t->workers[0].cq, &t->shutdown_tag);
        grpc_server_cancel_all_calls(t->server);
        while (!atomic_load(&t->shutdown_done) && t->workers[0].running)
            clock_sleep_ns(NSEC_PER_MSEC);
    }
    if (t->server)
        grpc_server_destroy(t->server);
    for (unsigned i = 0; i < t->nworkers; i++) {
        struct transport_worker *w = &t->workers[i];

        pthread_mutex_lock(&w->lock); /* not while its thread starts a batch */
        w->closed = true;
        grpc_completion_queue_shutdown(w->cq);
        pthread_mutex_unlock(&w->lock);
        if (w->running)
            pthread_join(w->thread, NULL);
        else /* never started: its calls end here */
            transport_worker_main(w);
        grpc_completion_queue_destroy(w->cq);
        pthread_mutex_destroy(&w->lock);
    }
    free(t->workers);
    transport_tls_free(t->tls);
    transport_peers_free(t->peers);
    free(t);
    grpc_shutdown();
}
