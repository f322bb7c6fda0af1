/* The exporter: the agent's end of /argus.v1.Ingest/Push. It sends every
 * unacked spool record in seq order on one long-lived stream, one message
 * in flight at a time, and advances the spool on each ack (and tells its
 * on_ack callback, which the agent points at the names registry). On any
 * stream failure it reconnects with exponential backoff and jitter and
 * re-sends from the last ack, so delivery is at-least-once and the
 * collector's dedup makes it exactly-once. A batch the collector rejects as
 * invalid (INVALID_ARGUMENT / RESOURCE_EXHAUSTED) would be rejected forever:
 * it is dropped from the spool and counted in the drop table as
 * EXPORTER_DROP_REJECTED, never retried. Polled from the main loop; never
 * blocks. */
#ifndef ARGUS_AGENT_EXPORTER_H
#define ARGUS_AGENT_EXPORTER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"
struct tls_pem;

struct spool;
struct drops;

/* The drop reason of a batch the collector refused. */
#define EXPORTER_DROP_REJECTED "collector_rejected"

/* Told of each new ack watermark of this spool epoch, after the spool took
 * it: every batch with a seq <= seq is at the collector. */
typedef void (*exporter_ack_fn)(void *ctx, uint64_t seq);

/* Told of each capture request an ack carries (Ack.captures); req is valid
 * during the call. */
typedef void (*exporter_capture_fn)(void *ctx, const Argus__V1__CaptureRequest *req);

struct exporter_options {
    const char *collector;   /* HOST:PORT, copied */
    uint64_t keepalive_ns;   /* must match the collector's */
    uint64_t backoff_min_ns; /* first reconnect delay */
    uint64_t backoff_max_ns; /* cap of the exponential backoff */
    exporter_ack_fn on_ack;  /* may be NULL */
    void *on_ack_ctx;
    bool eager; /* keep a stream up with nothing to send (the agent: it says at start
                 * whether it reaches the collector); else connect when records wait */
    exporter_capture_fn on_capture; /* may be NULL */
    void *on_capture_ctx;
    const struct tls_pem *tls; /* mTLS credentials (common/tls.h), copied; NULL: plaintext */
};

struct exporter;

/* spool and drops (for EXPORTER_DROP_REJECTED) are not owned and must
 * outlive the exporter. NULL on -ENOMEM or a collector address gRPC
 * refuses. */
struct exporter *exporter_new(const struct exporter_options *o, struct spool *spool,
                              struct drops *drops);
void exporter_free(struct exporter *e);

/* New credentials (rotated certificate files; NULL: plaintext): a new
 * channel replaces the old one and the stream reconnects at the next poll
 * (unacked batches are sent again; the collector drops what it has). Returns
 * 0, or -ENOMEM with the old channel kept. */
int exporter_set_tls(struct exporter *e, const struct tls_pem *tls, uint64_t now_ns);

/* Do what can be done now without blocking: connect when due, handle
 * completed sends and acks, start the next send. now_ns is monotonic. */
void exporter_poll(struct exporter *e, uint64_t now_ns);

/* The monotonic time of the next exporter_poll that has work: soon while a
 * send or an ack is outstanding or records wait to be sent, the reconnect
 * time while disconnected with records spooled, UINT64_MAX when idle. */
uint64_t exporter_next_ns(const struct exporter *e, uint64_t now_ns);

/* True when every spooled record is acked. */
bool exporter_idle(const struct exporter *e);

struct exporter_stats {
    bool connected;
    uint64_t sent, acked, reconnects, rejected, resent;
    uint64_t last_ack_ns; /* monotonic time of the last ack */
    char last_error[256];
};
void exporter_get_stats(const struct exporter *e, struct exporter_stats *out);

#endif
