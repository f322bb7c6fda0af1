/* collector/transport/, the first stage: it takes in gRPC connections (plaintext
 * or TLS, transport_tls.h) and gives out plain bytes to the registered method
 * handlers (ingest, query), and their replies back to the peer.
 *
 * The collector's gRPC server on the C core API. Every grpc_call, byte
 * buffer, slice and completion queue of the server lives in transport.c;
 * the ingest and query modules see plain bytes and return bytes or a status.
 *
 * What no handler takes is ended here: a call of a method nobody registered
 * gets UNIMPLEMENTED, a unary call without one complete request message
 * INVALID_ARGUMENT, and a call from a host that already has
 * max_calls_per_peer open RESOURCE_EXHAUSTED (transport_peers.h); each is
 * freed once the peer has closed it, so a client that goes leaves nothing.
 *
 * Threads: `workers` threads, each owning one completion queue. Every call
 * is served entirely by the thread whose queue accepted it, so handlers of
 * one stream are never called concurrently (handlers of different streams
 * are). Teardown is ordered: stop accepting, cancel live calls, drain each
 * queue until every call state is freed, destroy the server, then the queues.
 */
#ifndef ARGUS_COLLECTOR_TRANSPORT_H
#define ARGUS_COLLECTOR_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tls.h"

/* gRPC status codes used by handlers (same values as grpc_status_code). */
enum transport_status {
    TRANSPORT_OK = 0,
    TRANSPORT_CANCELLED = 1,
    TRANSPORT_INVALID_ARGUMENT = 3,
    TRANSPORT_NOT_FOUND = 5,
    TRANSPORT_PERMISSION_DENIED = 7,
    TRANSPORT_FAILED_PRECONDITION = 9,
    TRANSPORT_RESOURCE_EXHAUSTED = 8,
    TRANSPORT_UNIMPLEMENTED = 12,
    TRANSPORT_INTERNAL = 13,
    TRANSPORT_UNAVAILABLE = 14,
};

/* What a handler answers. status OK with a reply sends the reply; a non-OK
 * status ends the call with message (a sentence for the peer). */
struct transport_reply {
    int status;        /* enum transport_status */
    char message[256]; /* for non-OK status */
    void *data;        /* malloc'd reply bytes, freed by transport; NULL = no reply */
    size_t len;
};

/* Who is calling. With mTLS the identity and roles come from the client
 * certificate gRPC verified (common/tls.h); in plaintext identity is NULL and
 * roles is TLS_ROLE_ALL (anyone may call anything). Valid during the
 * handler call only: copy what must outlive it. */
struct transport_peer {
    const char *address;  /* gRPC's peer string, e.g. "ipv4:10.0.0.7:51234" */
    const char *identity; /* certificate name; NULL in plaintext */
    unsigned roles;       /* TLS_ROLE_* */
};

/* True when peer holds role. Else fills reply with PERMISSION_DENIED and a
 * message naming the certificate, its roles and method, and returns false. */
bool transport_peer_may(const struct transport_peer *peer, unsigned role, const char *method,
                        struct transport_reply *reply);

/* A bidirectional stream (ingest). open() returns the per-stream state;
 * NULL refuses the stream with reply's status and message (UNAVAILABLE when
 * it left the status OK). message() is called for each
 * received message; a reply with data is sent to the peer (replies are
 * coalesced: when a send is still in flight only the newest pending reply is
 * kept, which is right for cumulative acks); a non-OK status ends the stream.
 * close() is called exactly once per opened stream. */
struct transport_stream_ops {
    void *(*open)(void *ctx, const struct transport_peer *peer, struct transport_reply *reply);
    void (*message)(void *stream, const void *data, size_t len, struct transport_reply *reply);
    void (*close)(void *stream);
};

/* A unary method: request bytes in, reply out. */
typedef void (*transport_unary_fn)(void *ctx, const struct transport_peer *peer, const void *data,
                                   size_t len, struct transport_reply *reply);

struct transport_options {
    const char *listen;    /* "HOST:PORT"; port 0 picks one */
    unsigned workers;      /* threads, >= 1 */
    size_t max_message;    /* largest message gRPC accepts */
    uint64_t keepalive_ms; /* server keepalive pings; agents use the same */
    /* Calls one peer (host) may hold open at once; one more is refused with
     * RESOURCE_EXHAUSTED (counted). 0: no cap. Calls of unregistered methods
     * count too, and are answered UNIMPLEMENTED. */
    uint32_t max_calls_per_peer;
    /* mTLS: our certificate and key, and the CA that client certificates
     * must chain to (a client without a valid certificate fails the
     * handshake). All unset: plaintext. The paths must stay valid while the
     * server lives: the files are read again when they change or after
     * transport_reload_certs, at the next connection's handshake. */
    struct tls_files tls;
};

struct transport_server;

/* Create the server (not started). Returns NULL on allocation failure. */
struct transport_server *transport_new(const struct transport_options *o);

/* Register handlers before transport_start. method is a path such as
 * "/argus.v1.Ingest/Push" and must stay valid while the server lives.
 * Return 0 or -EINVAL (too many methods, server started). */
int transport_add_stream(struct transport_server *t, const char *method,
                         const struct transport_stream_ops *ops, void *ctx);
int transport_add_unary(struct transport_server *t, const char *method, transport_unary_fn fn,
                        void *ctx);

/* Bind and start the worker threads. Returns the bound port (> 0), or
 * -EADDRINUSE / -EINVAL when the address cannot be bound. */
int transport_start(struct transport_server *t);

struct transport_stats {
    uint64_t streams_opened, streams_closed, messages, unary_calls;
    uint64_t unimplemented; /* calls of unregistered methods (UNIMPLEMENTED) */
    uint64_t refused_busy;  /* calls refused: their peer had max_calls_per_peer open */
    uint64_t peers;         /* peers with a call open now */
};
void transport_get_stats(struct transport_server *t, struct transport_stats *out);

/* Read the TLS files again at the next handshake even if they look
 * unchanged (SIGHUP). A set that fails to load is logged and the previous
 * one stays in use. No-op in plaintext. Thread-safe. */
void transport_reload_certs(struct transport_server *t);

/* The notAfter (Unix seconds) of the loaded server certificate and CA.
 * Returns 0, or -ENOENT in plaintext. Thread-safe. */
int transport_cert_expiry(struct transport_server *t, int64_t *cert_not_after,
                          int64_t *ca_not_after);

/* Stop and free everything (ordered teardown). NULL is fine. */
void transport_free(struct transport_server *t);

#endif
