/* collector/ingest/, the second stage: it takes in the bytes of each Push
 * stream from transport and gives out validated batches, durably in the store
 * and queued for diagnosis. Beside ingest.h: limits.h (admission limits per
 * stream and agent), stream_clock.h (each agent's clock offset).
 *
 * Ingest: the handler of /argus.v1.Ingest/Push. For each Frame on a stream:
 * note the receive time (the collector's clock) -> decode (common/frame.h,
 * limits first) -> unpack the Batch -> validate every size, string and rank
 * against the limits -> store_ingest_raw (one WriteBatch with the dedup
 * high-water mark, committed with the WAL) -> the agent's clock offset
 * (stream_clock.h) -> hand the batch to the diagnosis queue (diagq.h, which
 * never waits) -> ack. A replayed batch is acked without writing twice. Bad input ends the stream
 * with INVALID_ARGUMENT or RESOURCE_EXHAUSTED and a message that says what was wrong; a store error
 * ends it with UNAVAILABLE and nothing is acked, so the agent keeps the batch and retries after
 * reconnecting.
 *
 * Identity. Under mTLS a stream needs a certificate with the agent role
 * (OU=agent), and every batch on it must name the certificate's identity as
 * its agent id and as the node of each resource (else PERMISSION_DENIED
 * naming both): the dedup high-water mark, keyed by agent id, is then keyed
 * by the authenticated identity and no client can move another's. In
 * plaintext anyone may claim any agent id; there a batch whose seq jumps more
 * than max_seq_jump above the stored high-water mark of its (agent, epoch)
 * is refused (FAILED_PRECONDITION, counted as seq_jump), so a spoofed
 * seq = 2^64-1 cannot silence an agent (docs/operations.md: residual risk).
 *
 * Rank ownership (owners.h), in both modes: after admission, every rank a
 * batch writes (Resource, StepRecord, RankStatus) must belong to its sender
 * (the certificate's identity, or the claimed agent id in plaintext) or be
 * free to move to it; else the whole batch is refused with PERMISSION_DENIED
 * naming the rank, the job, the owner and the sender, counted as rank_owner,
 * and nothing of it is stored (the agent keeps it spooled and retries with
 * its backoff). */
#ifndef ARGUS_COLLECTOR_INGEST_H
#define ARGUS_COLLECTOR_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "collector/ingest/kernel_sets.h"
#include "collector/ingest/limits.h"
#include "collector/transport/transport.h"
#include "proto/argus.pb-c.h"

struct store;

struct ingest_limits {
    size_t max_frame;    /* packed Frame bytes */
    size_t max_raw;      /* decoded Batch bytes */
    size_t max_id_len;   /* job, agent id, node, gpu uuid */
    size_t max_name_len; /* one dictionary name */
    size_t max_names_per_batch;
    size_t max_steps_per_batch;
    size_t max_resources_per_batch;
    size_t max_groups_per_step; /* kernel groups, phases, collectives each */
    size_t max_statuses_per_batch;
    size_t max_comms_per_status; /* RankStatus.comms */
    size_t max_stack_frames;     /* RankStatus.stack */
    size_t max_clusters_per_group;
    uint64_t max_seq_jump;       /* plaintext only: seq above the high-water mark; 0 = no bound */
    struct limits_options admit; /* per job and per collector (limits.h) */
};

/* Defaults used by the collector's config table. */
void ingest_default_limits(struct ingest_limits *l);

struct diagq;
struct ingest;
struct stream_clock;

/* Create the ingest handler over store; durable batches (not duplicates) go
 * to diagq, every accepted batch's creation time to clock. None is owned;
 * diagq and clock may be NULL (no diagnosis, no clock estimate). */
struct ingest *ingest_new(struct store *store, const struct ingest_limits *limits,
                          struct diagq *diagq, struct stream_clock *clock);
void ingest_free(struct ingest *in);

/* Drill-down captures (collector/trace/trace_capture.h): acks carry its
 * capture requests, durable batches' Batch.traces go to it. Not owned; set
 * before streams open. */
struct trace_capture;
void ingest_set_traces(struct ingest *in, struct trace_capture *traces);

/* Which agents the collector hears (collector/ingest/links.h): told of each
 * stream's first batch and of its end. Not owned; set before streams open. */
struct links;
void ingest_set_links(struct ingest *in, struct links *links);

/* The stream handler to register with transport_add_stream (ctx = ingest). */
extern const struct transport_stream_ops ingest_stream_ops;

/* The admission limits (for /metrics); valid while in lives. */
struct limits *ingest_admission(struct ingest *in);

/* The rank owners (owners.h, for /metrics and tests); valid while in lives. */
struct owners;
struct owners *ingest_owners(struct ingest *in);

/* Why batches were rejected, for /metrics. */
enum ingest_reject {
    INGEST_REJECT_FRAME_SIZE,
    INGEST_REJECT_FRAME_INVALID,
    INGEST_REJECT_BATCH_INVALID,
    INGEST_REJECT_LIMITS,
    INGEST_REJECT_STORE_ERROR,
    INGEST_REJECT_IDENTITY,   /* mTLS: the batch names another node, or no agent role */
    INGEST_REJECT_SEQ_JUMP,   /* plaintext: seq far above the high-water mark */
    INGEST_REJECT_RANK_OWNER, /* a rank another identity owns (owners.h) */
    INGEST_REJECT_COUNT,
};
const char *ingest_reject_name(enum ingest_reject r);

struct ingest_stats {
    uint64_t batches;    /* written */
    uint64_t duplicates; /* acked without writing */
    uint64_t bytes;      /* frame bytes received */
    uint64_t rank_steps; /* step records written */
    uint64_t acks;
    uint64_t rejects[INGEST_REJECT_COUNT];
    uint64_t streams;     /* open now */
    uint64_t unreachable; /* agents whose stream ended, none back (links.h) */
    struct kernel_sets_stats kernel_sets;
};
void ingest_get_stats(struct ingest *in, struct ingest_stats *out);

/* The newest cumulative drop counters each agent reported (Batch.drops), so
 * "no data" can be told from "healthy": fn is called for each under the
 * ingest lock; it must not call back into ingest. */
typedef void (*ingest_drop_fn)(void *ctx, const char *agent, const char *reason, const char *job,
                               int32_t rank, uint64_t total);
void ingest_foreach_drop(struct ingest *in, ingest_drop_fn fn, void *ctx);

#endif
