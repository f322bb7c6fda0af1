/* The agent's delivery: finished step records into batches (batcher), the
 * batches into the spool, the spool to the collectors (fanout: each job's
 * batches to its primary and standby of the collector set, or to the one
 * collector.address), with every drop counter (drops, carried across
 * restarts by dropstate). The agent (agent.c) owns one and calls it; the
 * collectors' capture requests come back through the callback in its
 * options. Built from the delivery stage (agent/delivery/) and the config's
 * spool.*, batch.*, collector.*, tls.* keys. Single-threaded: the agent's
 * main loop (a collector.dns set is resolved on a thread of its own). */
#ifndef ARGUS_AGENT_AGENT_DELIVERY_H
#define ARGUS_AGENT_AGENT_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/delivery/batcher.h"
#include "agent/delivery/exporter.h"
#include "agent/delivery/names.h"
#include "agent/delivery/spool.h"
#include "common/log.h"
#include "proto/argus.pb-c.h"

struct agent_delivery_options {
    const struct agent_config *cfg; /* read again at each use (a reload changes it); outlives */
    const char *agent_id;           /* copied by the batcher */
    struct names *names;            /* the names batches carry; acked ones are told; outlives */
    /* The collector asks for the raw spans of a rank in a window; answer
     * with agent_delivery_add_trace. */
    void (*on_capture)(void *ctx, const Argus__V1__CaptureRequest *req);
    void *on_capture_ctx;
    struct log_ratelimit *rl; /* the agent's one limit on its repeated warnings; outlives */
};

/* What /metrics shows of delivery. */
struct agent_delivery_stats {
    struct batcher_stats batcher; /* its steps: assembled, inferred and replayed */
    struct spool_stats spool;
    struct exporter_stats exporter; /* the collectors together (fanout_get_stats) */
    uint64_t batch_errors;          /* batches lost before the spool (encode or write failed) */
};

struct agent_delivery;

/* Load the TLS files (unless grpc.plaintext), open the spool (carrying its
 * drop counters over from the last run of its epoch), the collector set
 * (resolving collector.dns once) and a channel to each collector. Returns
 * NULL after logging why (a spool another agent holds, TLS files that do
 * not load, out of memory). */
struct agent_delivery *agent_delivery_new(const struct agent_delivery_options *o);

/* Close the channel and the spool, free. d may be NULL. */
void agent_delivery_free(struct agent_delivery *d);

/* A finished step record (copied) into the open batch; one the batcher has
 * no memory for is counted as a drop of its rank. */
void agent_delivery_add_step(struct agent_delivery *d, const Argus__V1__StepRecord *s);

/* A rank's status (agent/liveness/, copied) into the open batch; one the
 * batcher has no memory for is counted as a drop of its rank. */
void agent_delivery_add_status(struct agent_delivery *d, const Argus__V1__RankStatus *s);

/* Packed raw spans (a capture's answer, copied) for the next batch.
 * Returns 0 or -errno. */
int agent_delivery_add_trace(struct agent_delivery *d, const void *packed, size_t len);

/* Add count to the drop counter reason (job NULL and rank -1: node-level). */
void agent_delivery_drop(struct agent_delivery *d, const char *reason, const char *job,
                         int32_t rank, uint64_t count);

/* Periodic work at now (monotonic): seal a batch that is due into the
 * spool, send and take acks, the spool's fsync and cleanup. */
void agent_delivery_tick(struct agent_delivery *d, uint64_t now);

/* When a batch or an fsync is due (work that may wait for the loop's next
 * wakeup), and when the exporter must run; UINT64_MAX for never. */
uint64_t agent_delivery_due_ns(const struct agent_delivery *d, uint64_t now);
uint64_t agent_delivery_send_ns(const struct agent_delivery *d, uint64_t now);

/* Stopping: seal what is open and send until every collector that is not
 * behind (fanout.h) acked everything meant for it, or end_ns (monotonic)
 * passes. Returns whether they did (what is left stays spooled). */
bool agent_delivery_flush(struct agent_delivery *d, uint64_t end_ns);

/* SIGHUP under mTLS: read the certificate files again and reconnect with
 * them; a set that does not load keeps the running one (logged). */
void agent_delivery_reload_tls(struct agent_delivery *d);

void agent_delivery_get_stats(const struct agent_delivery *d, struct agent_delivery_stats *out);

/* The collectors as configured, for the log: collector.set, collector.dns or
 * collector.address. Valid while d lives. */
const char *agent_delivery_collectors(const struct agent_delivery *d);

/* The per-collector metrics (label collector="NAME") as Prometheus text
 * into b: connected, behind, unacked, acked seq, behind-dropped,
 * reconnects. For the main loop: it walks the set. */
struct http_buf;
void agent_delivery_member_metrics(const struct agent_delivery *d, struct http_buf *b);

#endif
