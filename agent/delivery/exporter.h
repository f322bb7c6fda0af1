/* The exporter: the agent's end of /argus.v1.Ingest/Push to one collector.
 * It sends the spool records meant for its collector (its owner's wants
 * callback says which; others are passed over) in seq order on one
 * long-lived stream, one message in flight at a time, and keeps its own
 * ack cursor: every seq <= it was acked by this collector or is not meant
 * for it. It never acks the spool: its owner (agent/delivery/fanout.h)
 * does, with the lowest cursor of all its exporters. On any stream failure
 * it reconnects with exponential backoff and jitter and re-sends from its
 * cursor, so delivery is at-least-once and the collector's dedup makes it
 * exactly-once. A batch the collector rejects as invalid (INVALID_ARGUMENT
 * / RESOURCE_EXHAUSTED) would be rejected forever: the exporter tells
 * on_reject (the owner drops and counts it, once for all collectors) and
 * passes over it, never retrying. Polled from the main loop; never
 * blocks. */
#ifndef ARGUS_AGENT_EXPORTER_H
#define ARGUS_AGENT_EXPORTER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"
struct tls_pem;

struct spool;

/* The drop reason of a batch the collector refused. */
#define EXPORTER_DROP_REJECTED "collector_rejected"

/* Told of each new ack cursor of this spool epoch: every batch with a seq
 * <= seq is at the collector or not meant for it. */
typedef void (*exporter_ack_fn)(void *ctx, uint64_t seq);

/* Whether the spool record seq is meant for this collector. */
typedef bool (*exporter_wants_fn)(void *ctx, uint64_t seq);

/* The collector refused record seq as invalid: it will never take it. */
typedef void (*exporter_reject_fn)(void *ctx, uint64_t seq);

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
    /* mTLS credentials (common/tls.h), copied into the channel; NULL:
     * plaintext. Kept (it must outlive the exporter, or the next
     * exporter_set_tls) to say why a handshake fails (common/tls_why.h):
     * logged once per change of the reason, and the last error. */
    const struct tls_pem *tls;
    exporter_wants_fn wants; /* NULL: every record is meant for it */
    void *wants_ctx;
    exporter_reject_fn on_reject; /* may be NULL */
    void *on_reject_ctx;
    uint64_t start; /* the first ack cursor: records <= it are not sent (0: from the spool's
                     * ack watermark) */
};

struct exporter;

/* spool is not owned and must outlive the exporter; the exporter only
 * reads it. NULL on -ENOMEM or a collector address gRPC refuses. */
struct exporter *exporter_new(const struct exporter_options *o, struct spool *spool);
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
 * time while disconnected with records waiting, UINT64_MAX when idle. */
uint64_t exporter_next_ns(const struct exporter *e, uint64_t now_ns);

/* True when no spooled record meant for it waits for its ack (records it
 * did not pass over yet are asked about; the next poll passes over them). */
bool exporter_idle(const struct exporter *e);

/* The ack cursor: every seq <= it is acked by the collector or not meant
 * for it. */
uint64_t exporter_acked(const struct exporter *e);

/* What the collector reads besides the plain messages (Ack.features) as its
 * last ack on the stream up now said; 0 while no stream is up or none was
 * acked on it (a collector may be replaced while away). */
uint32_t exporter_features(const struct exporter *e);

/* Acks on this exporter's streams that said a batch referred to kernel sets
 * the collector does not hold (Ack.kernel_sets_unknown), since it started. */
uint64_t exporter_sets_unknown(const struct exporter *e);

/* Records up to seq need not be sent (they are gone from the spool, or a
 * new owner's start): the ack cursor moves up to seq. Lower values are
 * ignored. */
void exporter_advance(struct exporter *e, uint64_t seq);

struct exporter_stats {
    bool connected;
    uint64_t sent, acked, reconnects, rejected, resent;
    uint64_t kernel_sets_unknown; /* acks that said a batch's kernel sets were not held */
    uint64_t last_ack_ns;         /* monotonic time of the last ack */
    char last_error[256];
};
void exporter_get_stats(const struct exporter *e, struct exporter_stats *out);

#endif
