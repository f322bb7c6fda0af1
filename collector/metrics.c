#include "collector/metrics.h"

#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "collector/diagnosis.h"
#include "collector/ingest.h"
#include "collector/store/store.h"
#include "collector/transport.h"

struct collector_drop_ctx {
    struct http_buf *b;
    bool first;
};

static void collector_drop(void *ctx, const char *agent, const char *reason, const char *job,
                           int32_t rank, uint64_t total)
{
    struct collector_drop_ctx *d = ctx;
    char labels[600], e1[160], e2[160], e3[160];

    snprintf(labels, sizeof(labels), "agent=\"%s\",reason=\"%s\",job=\"%s\",rank=\"%d\"",
             http_label_escape(e1, sizeof(e1), agent), http_label_escape(e2, sizeof(e2), reason),
             http_label_escape(e3, sizeof(e3), job), rank);
    if (d->first)
        http_buf_metric(d->b, "argus_agent_reported_drops", "gauge",
                        "cumulative drop counters as reported by each agent", labels, total);
    else
        http_buf_sample(d->b, "argus_agent_reported_drops", labels, total);
    d->first = false;
}

static void collector_metrics(struct collector_metrics_ctx *m, struct http_buf *b)
{
    struct ingest_stats in;
    struct store_stats st;
    struct transport_stats ts;
    char labels[64];

    ingest_get_stats(m->ingest, &in);
    store_get_stats(m->store, &st);
    transport_get_stats(m->transport, &ts);
    http_buf_metric(b, "argus_ingest_batches_total", "counter", "batches written", "", in.batches);
    http_buf_metric(b, "argus_ingest_duplicate_batches_total", "counter",
                    "replayed batches acked without writing", "", in.duplicates);
    http_buf_metric(b, "argus_ingest_bytes_total", "counter", "frame bytes received", "", in.bytes);
    http_buf_metric(b, "argus_ingest_rank_steps_total", "counter", "step records written", "",
                    in.rank_steps);
    http_buf_metric(b, "argus_ingest_acks_total", "counter", "acks sent", "", in.acks);
    http_buf_metric(b, "argus_ingest_streams", "gauge", "open agent streams", "", in.streams);
    for (int r = 0; r < INGEST_REJECT_COUNT; r++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", ingest_reject_name(r));
        if (r == 0)
            http_buf_metric(b, "argus_ingest_rejects_total", "counter",
                            "batches rejected, by reason", labels, in.rejects[r]);
        else
            http_buf_sample(b, "argus_ingest_rejects_total", labels, in.rejects[r]);
    }
    http_buf_metric(b, "argus_store_write_errors_total", "counter", "failed store writes", "",
                    st.write_errors);
    http_buf_metric(b, "argus_store_write_seconds_total", "counter", "time in RocksDB writes", "",
                    st.write_ns_total / 1e9);
    http_buf_metric(b, "argus_store_write_seconds_max", "gauge", "slowest RocksDB write", "",
                    st.write_ns_max / 1e9);
    http_buf_metric(b, "argus_store_live_sst_bytes", "gauge", "bytes in live SST files", "",
                    st.live_sst_bytes);
    http_buf_metric(b, "argus_store_failing", "gauge", "1 while the last store write failed", "",
                    st.failing);
    http_buf_metric(b, "argus_query_calls_total", "counter", "unary query calls", "",
                    ts.unary_calls);
    struct diagnosis_stats ds;
    diagnosis_get_stats(m->diagnosis, &ds);
    http_buf_metric(b, "argus_diag_jobs", "gauge", "jobs under diagnosis", "", ds.jobs);
    http_buf_metric(b, "argus_diag_steps_closed_total", "counter", "job steps closed", "",
                    ds.steps_closed);
    http_buf_metric(b, "argus_diag_reports_total", "counter", "straggler reports stored", "",
                    ds.reports);
    http_buf_metric(b, "argus_diag_step_close_seconds_max", "gauge",
                    "slowest diagnosis of one closed step", "", ds.close_ns_max / 1e9);
    struct collector_drop_ctx dc = {b, true};
    ingest_foreach_drop(m->ingest, collector_drop, &dc);
}

void collector_http_handler(void *ctx, const char *path, struct http_response *resp)
{
    struct collector_metrics_ctx *m = ctx;
    struct http_buf b = {0};

    if (strcmp(path, "/metrics") == 0) {
        collector_metrics(m, &b);
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        resp->status = 200;
    } else if (strcmp(path, "/healthz") == 0) {
        struct store_stats st;

        store_get_stats(m->store, &st);
        /* failing: still answering, but nothing new is made durable (disk
         * full, I/O errors); agents keep it in their spools meanwhile */
        if (st.failing)
            http_buf_printf(&b, "store writes failing: %s\n", st.last_error);
        else
            http_buf_printf(&b, "ok\n");
        resp->status = st.failing ? 503 : 200;
    } else {
        resp->status = 404;
        return;
    }
    if (b.failed)
        resp->status = 500;
    resp->body = b.data;
    resp->len = b.len;
}
