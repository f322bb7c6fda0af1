/* The gRPC client side of argus (agent exporter, argusctl, argus-sim, tests).
 * Every grpc_channel, grpc_call, byte buffer, slice and status string of a
 * client lives in rpc.c; callers see bytes, status codes and messages.
 *
 * A channel is thread-safe. A stream (and its completion queue) belongs to
 * the thread that opened it. */
#ifndef ARGUS_COMMON_RPC_H
#define ARGUS_COMMON_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Status codes (= grpc_status_code). */
#define RPC_OK 0
#define RPC_CANCELLED 1
#define RPC_DEADLINE_EXCEEDED 4
#define RPC_NOT_FOUND 5
#define RPC_RESOURCE_EXHAUSTED 8
#define RPC_INVALID_ARGUMENT 3
#define RPC_PERMISSION_DENIED 7
#define RPC_FAILED_PRECONDITION 9
#define RPC_UNIMPLEMENTED 12
#define RPC_INTERNAL 13
#define RPC_UNAVAILABLE 14

struct rpc_channel;
struct tls_pem;

struct rpc_channel_options {
    uint64_t keepalive_ms; /* 0 = 30 s; must match the collector's */
    size_t max_message;    /* largest message received; 0 = 64 MiB */
    /* gRPC's own reconnect backoff of the channel (between connection
     * attempts while the server is down): from reconnect_min_ms growing to
     * reconnect_max_ms; 0 = 200 ms and 2 s. A call made between attempts
     * fails UNAVAILABLE at once, so a caller that retries with its own
     * backoff passes its bounds here, or its retries find the channel still
     * waiting for gRPC's next attempt. */
    uint64_t reconnect_min_ms, reconnect_max_ms;
    /* mTLS: the CA that signed the collector's certificate, and our own
     * certificate and key (common/tls.h, loaded and checked by the caller;
     * copied by gRPC, so it may be freed after rpc_channel_new). NULL:
     * plaintext. The collector's certificate must name the host of target
     * (a DNS or IP subjectAltName). */
    const struct tls_pem *tls;
};

/* Open a channel to "HOST:PORT". opts may be NULL (plaintext). Returns NULL
 * on allocation failure only: connection and handshake errors appear on
 * calls (UNAVAILABLE, with gRPC's reason). */
struct rpc_channel *rpc_channel_new(const char *target, const struct rpc_channel_options *opts);
void rpc_channel_free(struct rpc_channel *ch);

/* Ask the channel to connect, and make progress on its connection with what
 * is ready now (never blocks). gRPC moves a connection attempt on only while
 * some thread polls: a caller with no call open (a client waiting out its
 * backoff) calls this every few milliseconds, or the attempt stalls until
 * its timeout and the server that came back stays unreached for seconds.
 * Returns true when the channel is READY. Not thread-safe with itself. */
bool rpc_channel_connect(struct rpc_channel *ch);

/* One unary call. On return *status is the gRPC status and message (msglen
 * bytes, may be NULL) its details. On RPC_OK, *resp (malloc'd, caller frees)
 * holds *resp_len bytes. Returns 0 when the call completed (whatever its
 * status), -ETIMEDOUT when the deadline passed, -ENOMEM. A call that failed
 * because no connection was made (the request never sent) is tried once
 * more when the channel's next connection attempt begins, within the same
 * deadline: gRPC 1.51 now and then fails a good connect (see rpc.c); a server
 * that is down costs one reconnect backoff (200 ms by default) more. */
int rpc_unary(struct rpc_channel *ch, const char *method, const void *req, size_t req_len,
              uint64_t timeout_ms, void **resp, size_t *resp_len, int *status, char *message,
              size_t msglen);

/* rpc_unary with protobuf-c messages: pack req, call, unpack the reply as
 * type into *resp (caller frees with protobuf_c_message_free_unpacked).
 * Returns 0 when the call completed (*status says how; *resp is set only on
 * RPC_OK), -ETIMEDOUT, -ENOMEM, or -EBADMSG when an OK reply is not a type
 * (*status is then RPC_INTERNAL). */
int rpc_call(struct rpc_channel *ch, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *type, uint64_t timeout_ms, ProtobufCMessage **resp,
             int *status, char *message, size_t msglen);

/* A bidirectional stream. One send and one receive may be in flight at a
 * time; rpc_stream_poll reports their completion. */
struct rpc_stream;

enum rpc_stream_event_kind {
    RPC_STREAM_NONE = 0, /* timeout: nothing happened */
    RPC_STREAM_SENT,     /* the send in flight completed; another may start */
    RPC_STREAM_MESSAGE,  /* a message arrived: data/len valid until the next poll */
    RPC_STREAM_CLOSED,   /* the stream ended: status and message set */
};

struct rpc_stream_event {
    enum rpc_stream_event_kind kind;
    const void *data;
    size_t len;
    int status;
    char message[256];
};

/* Open a stream on method with its own completion queue. wait_for_ready
 * queues the call until the channel connects instead of failing at once when
 * the server is down. Returns NULL on failure. */
struct rpc_stream *rpc_stream_open(struct rpc_channel *ch, const char *method, bool wait_for_ready);

/* Many streams on one completion queue, polled together by one thread (the
 * simulator runs a thousand streams on two threads). */
struct rpc_queue;
struct rpc_queue *rpc_queue_new(void);

/* Free the queue; every stream on it must have been freed (rpc_stream_free)
 * and polled until rpc_queue_poll reports no live streams. */
void rpc_queue_free(struct rpc_queue *q);

/* Open a stream whose events arrive through rpc_queue_poll(q). user is
 * returned with each event. */
struct rpc_stream *rpc_stream_open_on(struct rpc_channel *ch, const char *method,
                                      bool wait_for_ready, struct rpc_queue *q, void *user);

/* Wait up to timeout_ms for an event of any stream on q. Returns 1 with
 * *user and ev set, 0 on timeout. Events of freed streams are consumed
 * silently (their memory is released here). */
int rpc_queue_poll(struct rpc_queue *q, int timeout_ms, void **user, struct rpc_stream_event *ev);

/* Streams on q not yet fully released. */
size_t rpc_queue_live(const struct rpc_queue *q);

/* Start sending data (copied). Returns 0, -EBUSY while a send is in flight,
 * -EPIPE after the stream ended. */
int rpc_stream_send(struct rpc_stream *st, const void *data, size_t len);

/* True when no send is in flight. */
bool rpc_stream_can_send(const struct rpc_stream *st);

/* Wait up to timeout_ms for the next event. Returns 0 (ev filled). */
int rpc_stream_poll(struct rpc_stream *st, int timeout_ms, struct rpc_stream_event *ev);

/* Half-close the sending side (no more sends). */
int rpc_stream_close_send(struct rpc_stream *st);

/* Cancel if still open, drain, free. NULL is fine. For a stream on a shared
 * queue the memory is released by rpc_queue_poll once its last operation
 * completes; the caller must not touch st afterwards. */
void rpc_stream_free(struct rpc_stream *st);

#endif
