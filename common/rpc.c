#include "common/rpc.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tls.h"

/* A unary call that never reached its server (no connection made) is tried
 * once more, waiting for the channel's next connection attempt: gRPC 1.51's
 * connect reads errno after calls that may change it (tcp_client_posix.cc),
 * so now and then a connect in progress is taken for a failed one ("No such
 * file or directory"; 6 in 1,500 argusctl calls over four collectors). A
 * refused connection is an answer (the server is down) and is not tried
 * again. The second try waits at most the first backoff and this. */
#define RPC_RECONNECT_GRACE_MS 300

struct rpc_channel {
    grpc_channel *channel;
    int backoff_min_ms;        /* GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS */
    grpc_completion_queue *cq; /* polled by rpc_channel_connect (no call uses it) */
};

enum rpc_tag {
    TAG_START,
    TAG_SEND,
    TAG_RECV,
    TAG_STATUS,
    TAG_COUNT,
};

struct rpc_stream;

struct rpc_stream_tag {
    struct rpc_stream *st;
    enum rpc_tag op;
};

struct rpc_queue {
    grpc_completion_queue *cq;
    size_t live;
};

struct rpc_stream {
    struct rpc_queue *q;
    bool own_queue;
    void *user;
    grpc_call *call;
    grpc_metadata_array initial_md, trailing_md;
    grpc_byte_buffer *send_buf, *recv_buf;
    grpc_slice details;
    grpc_status_code status;
    char *recv_data;
    struct rpc_stream_tag tags[TAG_COUNT];
    int outstanding;
    bool send_busy, recv_busy, closed, send_closed, dying;
};

/* 0 ms is the infinite past: a deadline of "now" made gRPC's poller block
 * in epoll_wait for 1 ms (it rounds a deadline up to the millisecond), which
 * cost the agent's loop a sleep and a wakeup on every turn. */
static gpr_timespec rpc_deadline(uint64_t timeout_ms)
{
    if (!timeout_ms)
        return gpr_inf_past(GPR_CLOCK_MONOTONIC);
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                        gpr_time_from_millis((int64_t)timeout_ms, GPR_TIMESPAN));
}

struct rpc_channel *rpc_channel_new(const char *target, const struct rpc_channel_options *opts)
{
    struct rpc_channel *ch = calloc(1, sizeof(*ch));
    grpc_channel_credentials *creds;
    int keepalive = (int)(opts && opts->keepalive_ms ? opts->keepalive_ms : 30000);
    int max_message = (int)(opts && opts->max_message ? opts->max_message : 64u << 20);
    int backoff_min = (int)(opts && opts->reconnect_min_ms ? opts->reconnect_min_ms : 200);
    int backoff_max = (int)(opts && opts->reconnect_max_ms ? opts->reconnect_max_ms : 2000);
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = max_message}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = keepalive}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 10000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, {.integer = 1}},
        {GRPC_ARG_INTEGER, GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, {.integer = backoff_min}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, {.integer = backoff_max}},
    };
    grpc_channel_args ca = {sizeof(args) / sizeof(args[0]), args};

    if (!ch)
        return NULL;
    grpc_init();
    if (opts && opts->tls) {
        grpc_ssl_pem_key_cert_pair pair = {opts->tls->key, opts->tls->cert};
        creds = grpc_ssl_credentials_create_ex(opts->tls->ca, &pair, NULL, NULL);
    } else {
        creds = grpc_insecure_credentials_create();
    }
    ch->channel = grpc_channel_create(target, creds, &ca);
    ch->backoff_min_ms = backoff_min;
    grpc_channel_credentials_release(creds);
    ch->cq = grpc_completion_queue_create_for_next(NULL);
    if (!ch->channel || !ch->cq) {
        if (ch->channel)
            grpc_channel_destroy(ch->channel);
        if (ch->cq)
            grpc_completion_queue_destroy(ch->cq);
        free(ch);
        grpc_shutdown();
        return NULL;
    }
    return ch;
}

void rpc_channel_free(struct rpc_channel *ch)
{
    if (!ch)
        return;
    grpc_channel_destroy(ch->channel);
    grpc_completion_queue_shutdown(ch->cq);
    while (grpc_completion_queue_next(ch->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(ch->cq);
    free(ch);
    grpc_shutdown();
}

bool rpc_channel_connect(struct rpc_channel *ch)
{
    if (grpc_channel_check_connectivity_state(ch->channel, 1) == GRPC_CHANNEL_READY)
        return true;
    /* one poll pass with nothing to wait for: the poller (one epoll set for
     * every descriptor) runs the connection's pending I/O */
    grpc_completion_queue_next(ch->cq, gpr_inf_past(GPR_CLOCK_MONOTONIC), NULL);
    return grpc_channel_check_connectivity_state(ch->channel, 0) == GRPC_CHANNEL_READY;
}

static grpc_byte_buffer *rpc_buffer(const void *data, size_t len)
{
    grpc_slice s = grpc_slice_from_copied_buffer(data, len);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);

    grpc_slice_unref(s);
    return bb;
}

/* Flatten bb into a malloc'd buffer (NULL bb gives an empty one). */
static void *rpc_flatten(grpc_byte_buffer *bb, size_t *len)
{
    grpc_byte_buffer_reader r;
    grpc_slice s = grpc_empty_slice();
    void *out;

    if (bb && grpc_byte_buffer_reader_init(&r, bb)) {
        s = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
    }
    *len = GRPC_SLICE_LENGTH(s);
    out = malloc(*len ? *len : 1);
    if (out)
        memcpy(out, GRPC_SLICE_START_PTR(s), *len);
    grpc_slice_unref(s);
    return out;
}

static void rpc_copy_details(grpc_slice details, char *message, size_t msglen)
{
    size_t n;

    if (!message || !msglen)
        return;
    n = GRPC_SLICE_LENGTH(details);
    if (n >= msglen)
        n = msglen - 1;
    memcpy(message, GRPC_SLICE_START_PTR(details), n);
    message[n] = '\0';
}

/* One try of a unary call: its status, details and reply (*recv). Returns 0
 * when the call completed, -EINVAL when gRPC took no batch, -ETIMEDOUT. */
static int rpc_unary_try(struct rpc_channel *ch, const char *method, grpc_byte_buffer *send,
                         gpr_timespec deadline, uint32_t flags, grpc_status_code *st,
                         grpc_slice *details, grpc_byte_buffer **recv)
{
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_metadata_array imd, tmd;
    grpc_op ops[6] = {{0}};
    int tag = 0, r = 0;
    grpc_call *call =
        grpc_channel_create_call(ch->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                 grpc_slice_from_static_string(method), NULL, deadline, NULL);

    *st = GRPC_STATUS_UNKNOWN;
    *details = grpc_empty_slice();
    *recv = NULL;
    grpc_metadata_array_init(&imd);
    grpc_metadata_array_init(&tmd);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].flags = flags;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
    ops[5].data.recv_status_on_client.status = st;
    ops[5].data.recv_status_on_client.status_details = details;
    if (grpc_call_start_batch(call, ops, 6, &tag, NULL) != GRPC_CALL_OK) {
        r = -EINVAL;
    } else {
        grpc_event ev = grpc_completion_queue_pluck(
            cq, &tag, gpr_time_add(deadline, gpr_time_from_seconds(5, GPR_TIMESPAN)), NULL);
        if (ev.type != GRPC_OP_COMPLETE) {
            grpc_call_cancel(call, NULL);
            grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
            r = -ETIMEDOUT;
        }
    }
    grpc_metadata_array_destroy(&imd);
    grpc_metadata_array_destroy(&tmd);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    grpc_completion_queue_destroy(cq);
    return r;
}

/* The call never left this process, for no good reason: no connection to
 * the server was made (gRPC's pick_first says so in these words: the request
 * was not sent, so another try cannot run it twice), and not because the
 * server refused it. */
static bool rpc_not_sent(grpc_status_code st, grpc_slice details)
{
    static const char said[] = "failed to connect to all addresses";
    static const char refused[] = "Connection refused";
    size_t n = GRPC_SLICE_LENGTH(details);
    const char *d = (const char *)GRPC_SLICE_START_PTR(details);

    return st == GRPC_STATUS_UNAVAILABLE && n >= sizeof(said) - 1 &&
           memcmp(d, said, sizeof(said) - 1) == 0 && !memmem(d, n, refused, sizeof(refused) - 1);
}

/* The deadline of the second try of a call not sent: the channel's first
 * reconnect backoff (at most 20% jitter on top) and time to connect, or the
 * call's own deadline when that is sooner. */
static gpr_timespec rpc_retry_deadline(const struct rpc_channel *ch, gpr_timespec deadline)
{
    int64_t ms = (int64_t)ch->backoff_min_ms * 6 / 5 + RPC_RECONNECT_GRACE_MS;
    gpr_timespec t =
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));

    return gpr_time_cmp(t, deadline) < 0 ? t : deadline;
}

/* The second try of a call not sent (RPC_RECONNECT_GRACE_MS): it waits for
 * the channel's next connection; its outcome replaces the first's unless it
 * ran out of time, when the first failure says why. */
static void rpc_unary_retry(struct rpc_channel *ch, const char *method, grpc_byte_buffer *send,
                            gpr_timespec deadline, grpc_status_code *st, grpc_slice *details,
                            grpc_byte_buffer **recv)
{
    grpc_status_code st2;
    grpc_slice details2;
    grpc_byte_buffer *recv2;
    int r;

    if (gpr_time_cmp(deadline, gpr_now(GPR_CLOCK_MONOTONIC)) <= 0)
        return;
    r = rpc_unary_try(ch, method, send, rpc_retry_deadline(ch, deadline),
                      GRPC_INITIAL_METADATA_WAIT_FOR_READY, &st2, &details2, &recv2);
    if (r == 0 && st2 != GRPC_STATUS_DEADLINE_EXCEEDED) {
        grpc_slice_unref(*details);
        if (*recv)
            grpc_byte_buffer_destroy(*recv);
        *st = st2, *details = details2, *recv = recv2;
        return;
    }
    grpc_slice_unref(details2);
    if (recv2)
        grpc_byte_buffer_destroy(recv2);
}

int rpc_unary(struct rpc_channel *ch, const char *method, const void *req, size_t req_len,
              uint64_t timeout_ms, void **resp, size_t *resp_len, int *status, char *message,
              size_t msglen)
{
    grpc_byte_buffer *send = rpc_buffer(req, req_len), *recv = NULL;
    grpc_slice details = grpc_empty_slice();
    grpc_status_code st = GRPC_STATUS_UNKNOWN;
    gpr_timespec deadline = rpc_deadline(timeout_ms);
    int r = 0;

    *resp = NULL;
    *resp_len = 0;
    r = rpc_unary_try(ch, method, send, deadline, 0, &st, &details, &recv);
    if (r == 0 && rpc_not_sent(st, details))
        rpc_unary_retry(ch, method, send, deadline, &st, &details, &recv);
    *status = (int)st;
    rpc_copy_details(details, message, msglen);
    if (r == 0 && st == GRPC_STATUS_OK) {
        *resp = rpc_flatten(recv, resp_len);
        if (!*resp)
            r = -ENOMEM;
    }
    if (st == GRPC_STATUS_DEADLINE_EXCEEDED && r == 0)
        r = -ETIMEDOUT;
    if (recv)
        grpc_byte_buffer_destroy(recv);
    grpc_byte_buffer_destroy(send);
    grpc_slice_unref(details);
    return r;
}

int rpc_call(struct rpc_channel *ch, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *type, uint64_t timeout_ms, ProtobufCMessage **resp,
             int *status, char *message, size_t msglen)
{
    size_t len = protobuf_c_message_get_packed_size(req), rlen;
    uint8_t *buf = malloc(len ? len : 1);
    void *rbuf;
    int r;

    *resp = NULL;
    *status = RPC_INTERNAL;
    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(req, buf);
    r = rpc_unary(ch, method, buf, len, timeout_ms, &rbuf, &rlen, status, message, msglen);
    free(buf);
    if (r < 0 || *status != RPC_OK)
        return r;
    *resp = protobuf_c_message_unpack(type, NULL, rlen, rbuf);
    free(rbuf);
    if (!*resp) {
        *status = RPC_INTERNAL;
        snprintf(message, msglen, "the reply is not a %s", type->name);
        return -EBADMSG;
    }
    return 0;
}

static bool rpc_stream_batch(struct rpc_stream *st, grpc_op *ops, size_t n, enum rpc_tag tag)
{
    if (grpc_call_start_batch(st->call, ops, n, &st->tags[tag], NULL) != GRPC_CALL_OK)
        return false;
    st->outstanding++;
    return true;
}

static void rpc_stream_post_recv(struct rpc_stream *st)
{
    grpc_op op = {0};

    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &st->recv_buf;
    st->recv_busy = rpc_stream_batch(st, &op, 1, TAG_RECV);
}

struct rpc_queue *rpc_queue_new(void)
{
    struct rpc_queue *q = calloc(1, sizeof(*q));

    if (q)
        q->cq = grpc_completion_queue_create_for_next(NULL);
    return q;
}

void rpc_queue_free(struct rpc_queue *q)
{
    if (!q)
        return;
    grpc_completion_queue_shutdown(q->cq);
    while (grpc_completion_queue_next(q->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(q->cq);
    free(q);
}

size_t rpc_queue_live(const struct rpc_queue *q)
{
    return q->live;
}

struct rpc_stream *rpc_stream_open_on(struct rpc_channel *ch, const char *method,
                                      bool wait_for_ready, struct rpc_queue *q, void *user)
{
    struct rpc_stream *st = calloc(1, sizeof(*st));
    grpc_op ops[2] = {{0}};

    if (!st)
        return NULL;
    st->q = q;
    st->user = user;
    for (int i = 0; i < TAG_COUNT; i++)
        st->tags[i] = (struct rpc_stream_tag){st, (enum rpc_tag)i};
    st->call = grpc_channel_create_call(ch->channel, NULL, GRPC_PROPAGATE_DEFAULTS, q->cq,
                                        grpc_slice_from_static_string(method), NULL,
                                        gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    st->details = grpc_empty_slice();
    grpc_metadata_array_init(&st->initial_md);
    grpc_metadata_array_init(&st->trailing_md);
    q->live++;
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].flags = wait_for_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
    ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[1].data.recv_initial_metadata.recv_initial_metadata = &st->initial_md;
    rpc_stream_batch(st, ops, 2, TAG_START);
    ops[0] = (grpc_op){0};
    ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[0].data.recv_status_on_client.trailing_metadata = &st->trailing_md;
    ops[0].data.recv_status_on_client.status = &st->status;
    ops[0].data.recv_status_on_client.status_details = &st->details;
    rpc_stream_batch(st, ops, 1, TAG_STATUS);
    rpc_stream_post_recv(st);
    return st;
}

struct rpc_stream *rpc_stream_open(struct rpc_channel *ch, const char *method, bool wait_for_ready)
{
    struct rpc_queue *q = rpc_queue_new();
    struct rpc_stream *st = q ? rpc_stream_open_on(ch, method, wait_for_ready, q, NULL) : NULL;

    if (!st) {
        rpc_queue_free(q);
        return NULL;
    }
    st->own_queue = true;
    return st;
}

int rpc_stream_send(struct rpc_stream *st, const void *data, size_t len)
{
    grpc_op op = {0};

    if (st->closed || st->send_closed)
        return -EPIPE;
    if (st->send_busy)
        return -EBUSY;
    st->send_buf = rpc_buffer(data, len);
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = st->send_buf;
    st->send_busy = rpc_stream_batch(st, &op, 1, TAG_SEND);
    if (!st->send_busy) {
        grpc_byte_buffer_destroy(st->send_buf);
        st->send_buf = NULL;
        return -EPIPE;
    }
    return 0;
}

bool rpc_stream_can_send(const struct rpc_stream *st)
{
    return !st->send_busy && !st->closed && !st->send_closed;
}

int rpc_stream_close_send(struct rpc_stream *st)
{
    grpc_op op = {0};

    if (st->send_closed || st->closed || st->send_busy)
        return st->send_busy ? -EBUSY : 0;
    op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    st->send_closed = true;
    return rpc_stream_batch(st, &op, 1, TAG_SEND) ? 0 : -EPIPE;
}

static void rpc_stream_release(struct rpc_stream *st)
{
    if (st->send_buf)
        grpc_byte_buffer_destroy(st->send_buf);
    if (st->recv_buf)
        grpc_byte_buffer_destroy(st->recv_buf);
    free(st->recv_data);
    grpc_slice_unref(st->details);
    grpc_metadata_array_destroy(&st->initial_md);
    grpc_metadata_array_destroy(&st->trailing_md);
    grpc_call_unref(st->call);
    st->q->live--;
    free(st);
}

/* Account one completed operation; fill ev when it is worth reporting. */
static void rpc_stream_handle(struct rpc_stream *st, enum rpc_tag op, bool ok,
                              struct rpc_stream_event *ev)
{
    st->outstanding--;
    if (op == TAG_SEND) {
        st->send_busy = false;
        if (st->send_buf)
            grpc_byte_buffer_destroy(st->send_buf);
        st->send_buf = NULL;
        ev->kind = RPC_STREAM_SENT;
    } else if (op == TAG_RECV) {
        st->recv_busy = false;
        if (ok && st->recv_buf) {
            size_t len;
            st->recv_data = rpc_flatten(st->recv_buf, &len);
            grpc_byte_buffer_destroy(st->recv_buf);
            st->recv_buf = NULL;
            ev->kind = RPC_STREAM_MESSAGE;
            ev->data = st->recv_data;
            ev->len = len;
            if (!st->dying)
                rpc_stream_post_recv(st);
        }
    } else if (op == TAG_STATUS) {
        st->closed = true;
        ev->kind = RPC_STREAM_CLOSED;
        ev->status = (int)st->status;
        rpc_copy_details(st->details, ev->message, sizeof(ev->message));
    }
}

int rpc_queue_poll(struct rpc_queue *q, int timeout_ms, void **user, struct rpc_stream_event *ev)
{
    gpr_timespec deadline = rpc_deadline(timeout_ms < 0 ? 0 : (uint64_t)timeout_ms);

    memset(ev, 0, sizeof(*ev));
    for (;;) {
        grpc_event e = grpc_completion_queue_next(q->cq, deadline, NULL);
        if (e.type != GRPC_OP_COMPLETE)
            return 0;
        struct rpc_stream_tag *tag = e.tag;
        struct rpc_stream *st = tag->st;
        free(st->recv_data);
        st->recv_data = NULL;
        rpc_stream_handle(st, tag->op, e.success != 0, ev);
        if (st->dying) {
            if (st->outstanding == 0)
                rpc_stream_release(st);
            memset(ev, 0, sizeof(*ev));
            continue;
        }
        if (ev->kind != RPC_STREAM_NONE) {
            *user = st->user;
            return 1;
        }
    }
}

int rpc_stream_poll(struct rpc_stream *st, int timeout_ms, struct rpc_stream_event *ev)
{
    void *user;

    rpc_queue_poll(st->q, timeout_ms, &user, ev);
    return 0;
}

void rpc_stream_free(struct rpc_stream *st)
{
    struct rpc_queue *q;

    if (!st)
        return;
    if (!st->closed)
        grpc_call_cancel(st->call, NULL);
    if (!st->own_queue) {
        st->dying = true;
        if (st->outstanding == 0)
            rpc_stream_release(st);
        return;
    }
    q = st->q;
    while (st->outstanding > 0) {
        grpc_event e = grpc_completion_queue_next(q->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (e.type != GRPC_OP_COMPLETE)
            break;
        st->outstanding--;
    }
    rpc_stream_release(st);
    rpc_queue_free(q);
}
