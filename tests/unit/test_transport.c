/* The server transport and the client rpc module over real gRPC on loopback:
 * streams with coalesced replies, handler errors as statuses, unary calls,
 * the message size limit, and teardown with live streams. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/transport/transport.h"
#include "common/rpc.h"

struct stream_state {
    uint64_t count;
};

static int open_streams;

static void *echo_open(void *ctx, const struct transport_peer *peer, struct transport_reply *reply)
{
    open_streams++;
    return calloc(1, sizeof(struct stream_state));
}

/* Reply with the running count; a message "bad" ends the stream. */
static void echo_message(void *stream, const void *data, size_t len, struct transport_reply *reply)
{
    struct stream_state *s = stream;

    if (len == 3 && memcmp(data, "bad", 3) == 0) {
        reply->status = TRANSPORT_INVALID_ARGUMENT;
        snprintf(reply->message, sizeof(reply->message), "message %llu is bad",
                 (unsigned long long)s->count + 1);
        return;
    }
    s->count++;
    reply->data = malloc(sizeof(uint64_t));
    memcpy(reply->data, &s->count, sizeof(uint64_t));
    reply->len = sizeof(uint64_t);
}

static void echo_close(void *stream)
{
    open_streams--;
    free(stream);
}

static const struct transport_stream_ops echo_ops = {echo_open, echo_message, echo_close};

static void upper_unary(void *ctx, const struct transport_peer *peer, const void *data, size_t len,
                        struct transport_reply *reply)
{
    if (len == 0) {
        reply->status = TRANSPORT_NOT_FOUND;
        snprintf(reply->message, sizeof(reply->message), "empty request");
        return;
    }
    reply->data = malloc(len);
    for (size_t i = 0; i < len; i++)
        ((char *)reply->data)[i] = (char)(((const char *)data)[i] & ~0x20);
    reply->len = len;
}

static struct transport_server *server;
static char target[64];

static int setup(void **state)
{
    struct transport_options o = {.listen = "127.0.0.1:0", .workers = 2, .max_message = 1 << 20};
    server = transport_new(&o);
    assert_int_equal(transport_add_stream(server, "/test.Echo/Stream", &echo_ops, NULL), 0);
    assert_int_equal(transport_add_unary(server, "/test.Echo/Upper", upper_unary, NULL), 0);
    int port = transport_start(server);
    assert_true(port > 0);
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    return 0;
}

static int teardown(void **state)
{
    transport_free(server);
    assert_int_equal(open_streams, 0);
    return 0;
}

/* Poll until an event of kind arrives (or the stream closes), 30 s at
 * most: the first connection under ASan on a loaded machine took over 10. */
static void wait_for(struct rpc_stream *st, enum rpc_stream_event_kind kind,
                     struct rpc_stream_event *ev)
{
    for (int i = 0; i < 300; i++) {
        assert_int_equal(rpc_stream_poll(st, 100, ev), 0);
        if (ev->kind == kind || ev->kind == RPC_STREAM_CLOSED)
            return;
    }
    fail_msg("no event of kind %d", kind);
}

static void test_stream_replies(void **state)
{
    struct rpc_channel *ch = rpc_channel_new(target, NULL);
    struct rpc_stream *st = rpc_stream_open(ch, "/test.Echo/Stream", true);
    struct rpc_stream_event ev;
    uint64_t last = 0;

    for (int i = 0; i < 200; i++) {
        assert_int_equal(rpc_stream_send(st, "hello", 5), 0);
        assert_int_equal(rpc_stream_send(st, "again", 5), -EBUSY);
        do {
            wait_for(st, RPC_STREAM_SENT, &ev);
            if (ev.kind == RPC_STREAM_MESSAGE) {
                memcpy(&last, ev.data, 8);
            }
        } while (ev.kind == RPC_STREAM_MESSAGE);
        assert_int_equal(ev.kind, RPC_STREAM_SENT);
    }
    /* replies may be coalesced, but the newest one always arrives */
    while (last < 200) {
        wait_for(st, RPC_STREAM_MESSAGE, &ev);
        assert_int_equal(ev.kind, RPC_STREAM_MESSAGE);
        memcpy(&last, ev.data, 8);
    }
    assert_int_equal(last, 200);
    assert_int_equal(rpc_stream_close_send(st), 0);
    wait_for(st, RPC_STREAM_CLOSED, &ev);
    assert_int_equal(ev.status, RPC_OK);
    rpc_stream_free(st);
    rpc_channel_free(ch);
}

static void test_stream_error_status(void **state)
{
    struct rpc_channel *ch = rpc_channel_new(target, NULL);
    struct rpc_stream *st = rpc_stream_open(ch, "/test.Echo/Stream", true);
    struct rpc_stream_event ev;

    assert_int_equal(rpc_stream_send(st, "ok", 2), 0);
    wait_for(st, RPC_STREAM_SENT, &ev);
    assert_int_equal(rpc_stream_send(st, "bad", 3), 0);
    do
        wait_for(st, RPC_STREAM_CLOSED, &ev);
    while (ev.kind != RPC_STREAM_CLOSED);
    assert_int_equal(ev.status, RPC_INVALID_ARGUMENT);
    assert_string_equal(ev.message, "message 2 is bad");
    assert_int_equal(rpc_stream_send(st, "x", 1), -EPIPE);
    rpc_stream_free(st);
    rpc_channel_free(ch);
}

static void test_unary(void **state)
{
    struct rpc_channel *ch = rpc_channel_new(target, NULL);
    void *resp;
    size_t len;
    int status;
    char msg[128];

    assert_int_equal(
        rpc_unary(ch, "/test.Echo/Upper", "argus", 5, 2000, &resp, &len, &status, msg, sizeof(msg)),
        0);
    assert_int_equal(status, RPC_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(resp, "ARGUS", 5);
    free(resp);
    assert_int_equal(
        rpc_unary(ch, "/test.Echo/Upper", "", 0, 2000, &resp, &len, &status, msg, sizeof(msg)), 0);
    assert_int_equal(status, RPC_NOT_FOUND);
    assert_string_equal(msg, "empty request");
    assert_null(resp);
    rpc_channel_free(ch);
}

static void test_message_limit(void **state)
{
    struct rpc_channel *ch = rpc_channel_new(target, NULL);
    size_t n = 2 << 20;
    char *big = calloc(1, n);
    void *resp;
    size_t len;
    int status;
    char msg[256];

    assert_int_equal(
        rpc_unary(ch, "/test.Echo/Upper", big, n, 5000, &resp, &len, &status, msg, sizeof(msg)), 0);
    assert_int_equal(status, RPC_RESOURCE_EXHAUSTED);
    free(big);
    rpc_channel_free(ch);
}

static void test_unknown_method(void **state)
{
    struct rpc_channel *ch = rpc_channel_new(target, NULL);
    struct transport_stats ts;
    void *resp;
    size_t len;
    int status;
    char msg[256];

    /* gRPC held such a call unanswered, and its connection open, forever */
    for (int i = 0; i < 20; i++) {
        assert_int_equal(
            rpc_unary(ch, "/test.Echo/Nope", "a", 1, 5000, &resp, &len, &status, msg, sizeof(msg)),
            0);
        assert_int_equal(status, RPC_UNIMPLEMENTED);
        assert_non_null(strstr(msg, "/test.Echo/Nope"));
    }
    transport_get_stats(server, &ts);
    assert_int_equal(ts.unimplemented, 20);
    rpc_channel_free(ch);
}

static void test_calls_per_peer(void **state)
{
    struct transport_options o = {
        .listen = "127.0.0.1:0", .workers = 2, .max_message = 1 << 20, .max_calls_per_peer = 2};
    struct transport_server *capped = transport_new(&o);
    struct rpc_stream *st[2];
    struct rpc_stream_event ev;
    struct transport_stats ts;
    char addr[64], msg[256];
    void *resp;
    size_t len;
    int status;

    assert_int_equal(transport_add_stream(capped, "/test.Echo/Stream", &echo_ops, NULL), 0);
    assert_int_equal(transport_add_unary(capped, "/test.Echo/Upper", upper_unary, NULL), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", transport_start(capped));
    struct rpc_channel *ch = rpc_channel_new(addr, NULL);
    for (int i = 0; i < 2; i++) { /* two streams held open: the peer's cap */
        st[i] = rpc_stream_open(ch, "/test.Echo/Stream", true);
        assert_int_equal(rpc_stream_send(st[i], "x", 1), 0);
        wait_for(st[i], RPC_STREAM_MESSAGE, &ev);
        assert_int_equal(ev.kind, RPC_STREAM_MESSAGE);
    }
    assert_int_equal(
        rpc_unary(ch, "/test.Echo/Upper", "a", 1, 5000, &resp, &len, &status, msg, sizeof(msg)), 0);
    assert_int_equal(status, RPC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(msg, "grpc.max_calls_per_peer"));
    transport_get_stats(capped, &ts);
    assert_int_equal(ts.refused_busy, 1);
    assert_int_equal(ts.peers, 1);
    rpc_stream_free(st[0]); /* one ends: the peer is served again */
    for (int i = 0; i < 100 && status != RPC_OK; i++) {
        assert_int_equal(
            rpc_unary(ch, "/test.Echo/Upper", "a", 1, 5000, &resp, &len, &status, msg, sizeof(msg)),
            0);
        free(resp);
    }
    assert_int_equal(status, RPC_OK);
    rpc_stream_free(st[1]);
    rpc_channel_free(ch);
    transport_free(capped);
}

static void test_unreachable(void **state)
{
    struct rpc_channel *ch = rpc_channel_new("127.0.0.1:1", NULL);
    void *resp;
    size_t len;
    int status;
    char msg[256];

    assert_int_equal(
        rpc_unary(ch, "/test.Echo/Upper", "a", 1, 2000, &resp, &len, &status, msg, sizeof(msg)), 0);
    assert_int_equal(status, RPC_UNAVAILABLE);
    rpc_channel_free(ch);
}

static void test_teardown_with_live_streams(void **state)
{
    struct rpc_channel *ch = rpc_channel_new(target, NULL);
    struct rpc_stream *st[4];
    struct rpc_stream_event ev;

    for (int i = 0; i < 4; i++) {
        st[i] = rpc_stream_open(ch, "/test.Echo/Stream", true);
        assert_int_equal(rpc_stream_send(st[i], "x", 1), 0);
        wait_for(st[i], RPC_STREAM_SENT, &ev);
    }
    transport_free(server); /* must cancel and free every live call */
    server = NULL;
    assert_int_equal(open_streams, 0);
    /* A client whose stream the server never matched to a call may only
     * learn of the shutdown from its keepalive; when it does learn, the
     * status must not claim success. */
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 30; k++) {
            rpc_stream_poll(st[i], 100, &ev);
            if (ev.kind == RPC_STREAM_CLOSED) {
                assert_int_not_equal(ev.status, RPC_OK);
                break;
            }
        }
        rpc_stream_free(st[i]);
    }
    rpc_channel_free(ch);
    setup(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_replies), cmocka_unit_test(test_stream_error_status),
        cmocka_unit_test(test_unary),          cmocka_unit_test(test_message_limit),
        cmocka_unit_test(test_unreachable),    cmocka_unit_test(test_unknown_method),
        cmocka_unit_test(test_calls_per_peer), cmocka_unit_test(test_teardown_with_live_streams),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
