/* collector/trace/: the drill-down. It takes in the reports diagnosis stores
 * (a suspect that pages), the batches of ingest and their acks, and gives
 * out captured windows of raw spans stored with the report and exported as
 * Chrome-trace JSON (trace_json.h).
 *
 * Captures: for a report that pages, each paging suspect rank and one
 * healthy rank of the same job get a capture request for a window around the
 * last flagged steps (TRACE_WINDOW_STEPS of the report's range; the times
 * from that rank's stored step records, padded by a tenth). A request waits
 * here until a batch with steps of its (job, rank) arrives: the ack of that
 * batch carries it (Ack.captures), again every retry_ns until the agent's
 * answer (Batch.traces) is stored, and it fails (counted) after expire_ns.
 * Thread-safe: diagnosis and every ingest stream call in. */
#ifndef ARGUS_COLLECTOR_TRACE_CAPTURE_H
#define ARGUS_COLLECTOR_TRACE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define TRACE_WINDOW_STEPS 4
#define TRACE_MAX_PENDING 1024
#define TRACE_MAX_PER_ACK 8
#define TRACE_MAX_SPANS 1000000 /* per window; a bigger one is refused */
#define TRACE_RETRY_NS (10 * 1000000000ull)
#define TRACE_EXPIRE_NS (120 * 1000000000ull)

struct store;
struct trace_capture;

/* store is not owned and must outlive it. NULL on -ENOMEM. */
struct trace_capture *trace_capture_new(struct store *store);
void trace_capture_free(struct trace_capture *t);

/* The diagnosis hook (diagnosis_options.on_report): queue the captures of a
 * stored report that pages. */
void trace_capture_report(void *ctx, const Argus__V1__Report *r);

/* Add to ack the requests for ranks whose steps batch b carries (at most
 * TRACE_MAX_PER_ACK); ack->captures is malloc'd here and freed by
 * trace_capture_ack_done after the ack is packed. */
void trace_capture_ack(struct trace_capture *t, const Argus__V1__Batch *b, Argus__V1__Ack *ack);
void trace_capture_ack_done(Argus__V1__Ack *ack);

/* Store the windows of a durable batch (Batch.traces) and settle their
 * requests. A window without a report id or over TRACE_MAX_SPANS is refused
 * (counted, logged); the batch is not. */
void trace_capture_ingest(struct trace_capture *t, const Argus__V1__Batch *b);

struct trace_capture_stats {
    uint64_t requested, sent, received, failed, refused, store_errors, pending;
};
void trace_capture_get_stats(struct trace_capture *t, struct trace_capture_stats *out);

#endif
