#include "collector/metrics.h"

#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "collector/actions/actions.h"
#include "collector/alerts/alerts_metrics.h"
#include "collector/diag/diagnosis.h"
#include "collector/diag/diagq.h"
#include "collector/ingest/ingest.h"
#include "collector/ingest/limits.h"
#include "collector/ingest/owners.h"
#include "collector/fleet/fleet.h"
#include "collector/membership.h"
#include "collector/series/remote_write.h"
#include "collector/series/series.h"
#include "collector/store/store.h"
#include "collector/ingest/stream_clock.h"
#include "collector/transport/transport.h"
#include "collector/trace/trace_capture.h"
#include "collector/trace/trace_json.h"
#include "common/clock.h"
#include "collector/web/web.h"
#include "common/procstat.h"

/* A labelled series being written: the first sample brings HELP and TYPE. */
struct collector_series {
    struct http_buf *b;
    bool first;
};

static void collector_drop(void *ctx, const char *agent, const char *reason, const char *job,
                           int32_t rank, uint64_t total)
{
    struct collector_series *d = ctx;
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

struct collector_job_ctx {
    struct http_buf *b;
    int metric; /* which per-job gauge is being written */
    bool first;
};

static void collector_diag_job(void *ctx, const char *job, const struct diagnosis_job_lag *lag)
{
    static const char *const names[][2] = {
        {"argus_diag_watermark_lag_seconds",
         "per job: receive time the oldest open step has waited for its watermark"},
        {"argus_diag_watermark_lag_steps", "per job: newest step delivered minus the watermark"},
        {"argus_diag_job_open_steps", "per job: steps open"},
    };
    struct collector_job_ctx *c = ctx;
    char labels[200], e[160];
    double v[] = {lag->watermark_lag_s, (double)lag->watermark_steps, (double)lag->open_steps};

    snprintf(labels, sizeof(labels), "job=\"%s\"", http_label_escape(e, sizeof(e), job));
    if (c->first)
        http_buf_metric(c->b, names[c->metric][0], "gauge", names[c->metric][1], labels,
                        v[c->metric]);
    else
        http_buf_sample(c->b, names[c->metric][0], labels, v[c->metric]);
    c->first = false;
}

static void collector_diag_counter(struct http_buf *b, const char *name, const char *help,
                                   const char *label, const char *const *values,
                                   const uint64_t *counts, int n)
{
    char labels[64];

    for (int i = 0; i < n; i++) {
        snprintf(labels, sizeof(labels), "%s=\"%s\"", label, values[i]);
        if (i == 0)
            http_buf_metric(b, name, "counter", help, labels, counts[i]);
        else
            http_buf_sample(b, name, labels, counts[i]);
    }
}

/* The argus_diag_* metrics: totals, closes by reason, late data, per-job lag. */
static void collector_diag_metrics(struct collector_metrics_ctx *m, struct http_buf *b)
{
    static const char *const reasons[] = {"complete", "watermark", "timeout", "budget", "flush"};
    static const char *const drops[] = {"horizon", "memory", "queue_full", "before_start"};
    struct diagnosis_stats ds;
    struct diagq_stats qs = {0};

    diagnosis_get_stats(m->diagnosis, &ds);
    if (m->diagq)
        diagq_get_stats(m->diagq, &qs);
    for (int st = 0; st < DIAGNOSIS_STATES; st++) {
        char label[40];
        snprintf(label, sizeof(label), "state=\"%s\"", diagnosis_state_name(st));
        if (st == 0)
            http_buf_metric(b, "argus_diag_jobs", "gauge",
                            "jobs under diagnosis, by state (unknown: no tick yet)", label,
                            ds.jobs_by_state[st]);
        else
            http_buf_sample(b, "argus_diag_jobs", label, ds.jobs_by_state[st]);
    }
    http_buf_metric(b, "argus_diag_statuses_total", "counter",
                    "rank statuses (liveness) taken by diagnosis", "", ds.statuses);
    http_buf_metric(b, "argus_diag_liveness_findings_total", "counter",
                    "liveness reports: a hung job (kind hang) or a rank that died (kind exited)",
                    "kind=\"hang\"", ds.hangs);
    http_buf_sample(b, "argus_diag_liveness_findings_total", "kind=\"exited\"", ds.deaths);
    http_buf_metric(b, "argus_diag_suppressed_reports_total", "counter",
                    "reports of a job after one of its ranks died (its consequences), not "
                    "published",
                    "", ds.suppressed);
    http_buf_metric(b, "argus_diag_jobs_retired_total", "counter",
                    "jobs whose diagnosis state was freed (idle past diag.job_idle, or over the "
                    "job limit)",
                    "", ds.jobs_retired);
    http_buf_metric(b, "argus_diag_jobs_retired_memory_total", "counter",
                    "of those, freed because all jobs' steps were over diag.max_bytes", "",
                    ds.jobs_retired_memory);
    http_buf_metric(b, "argus_diag_steps_closed_total", "counter", "job steps closed", "",
                    ds.steps_closed);
    collector_diag_counter(b, "argus_diag_steps_closed_by_reason_total",
                           "job steps closed, by why they closed", "reason", reasons, ds.closed_by,
                           5);
    http_buf_metric(b, "argus_diag_budget_closes_total", "counter",
                    "steps forced to close by diag.max_open_bytes", "", ds.closed_by[3]);
    http_buf_metric(b, "argus_diag_open_steps", "gauge", "steps open, all jobs", "", ds.open_steps);
    http_buf_metric(b, "argus_diag_open_bytes", "gauge", "memory of open and kept steps", "",
                    ds.open_bytes);
    http_buf_metric(b, "argus_diag_late_records_total", "counter",
                    "records of steps that had closed", "", ds.late);
    http_buf_metric(b, "argus_diag_amended_records_total", "counter",
                    "late records that amended their closed step", "", ds.amended);
    uint64_t dropped[] = {ds.dropped_horizon, ds.dropped_memory, qs.dropped_records,
                          ds.dropped_early};
    collector_diag_counter(b, "argus_diag_dropped_from_diagnosis_total",
                           "step records stored but not diagnosed, by reason: late beyond the "
                           "horizon or the memory budget, the diagnosis queue full, or of steps "
                           "before the job's diagnosis began (a late start, a catch-up)",
                           "reason", drops, dropped, 4);
    http_buf_metric(b, "argus_diag_silent_findings_total", "counter",
                    "silence findings: a whole node (agent stream) or a rank alone",
                    "kind=\"node\"", ds.silent_nodes);
    http_buf_sample(b, "argus_diag_silent_findings_total", "kind=\"rank\"", ds.silent_ranks);
    http_buf_metric(b, "argus_diag_reports_total", "counter", "straggler reports stored", "",
                    ds.reports);
    http_buf_metric(b, "argus_diag_step_close_seconds_max", "gauge",
                    "slowest diagnosis of one closed step", "", ds.close_ns_max / 1e9);
    for (int k = 0; k < 3; k++) {
        struct collector_job_ctx jc = {b, k, true};
        diagnosis_foreach_job(m->diagnosis, collector_diag_job, &jc);
    }
}

static void collector_lag(void *ctx, const char *job, double lag_seconds)
{
    struct collector_series *d = ctx;
    char labels[200], e[160];

    snprintf(labels, sizeof(labels), "job=\"%s\"", http_label_escape(e, sizeof(e), job));
    if (d->first)
        http_buf_metric(d->b, "argus_diag_lag_seconds", "gauge",
                        "how far diagnosis of the job is behind what was received", labels,
                        lag_seconds);
    else
        http_buf_sample(d->b, "argus_diag_lag_seconds", labels, lag_seconds);
    d->first = false;
}

/* The diagnosis queue: depth, bytes, what it could not take, lag per job. */
static void collector_metrics_diagq(struct diagq *q, struct http_buf *b)
{
    struct collector_series lag = {b, true};
    struct diagq_stats qs;

    diagq_get_stats(q, &qs);
    http_buf_metric(b, "argus_diag_queue_batches", "gauge", "stored batches waiting for diagnosis",
                    "", qs.queued_batches);
    http_buf_metric(b, "argus_diag_queue_bytes", "gauge", "memory they hold", "", qs.queued_bytes);
    http_buf_metric(b, "argus_diag_queue_bytes_limit", "gauge", "diag.queue_bytes", "",
                    qs.max_bytes);
    http_buf_metric(b, "argus_diag_fed_batches_total", "counter", "batches fed to diagnosis", "",
                    qs.fed_batches);
    http_buf_metric(b, "argus_diag_queue_dropped_batches_total", "counter",
                    "batches the full diagnosis queue did not take (stored, acked)", "",
                    qs.dropped_batches);
    http_buf_metric(b, "argus_diag_queue_noted_batches_total", "counter",
                    "of those, whose ranks' progress still went to diagnosis (no silence, no wait)",
                    "", qs.noted_batches);
    http_buf_metric(b, "argus_diag_lag_warnings_total", "counter",
                    "times a job's diagnosis lag went over diag.lag_warn", "", qs.lag_warnings);
    diagq_foreach_lag(q, collector_lag, &lag);
}

static void collector_clock(void *ctx, const char *agent, int64_t offset_ns, bool flagged)
{
    struct collector_series *d = ctx;
    char labels[200], e[160];

    snprintf(labels, sizeof(labels), "node=\"%s\"", http_label_escape(e, sizeof(e), agent));
    if (d->first)
        http_buf_metric(d->b, "argus_ingest_clock_offset_seconds", "gauge",
                        "agent clock minus collector clock, from its least-delayed batch", labels,
                        offset_ns / 1e9);
    else
        http_buf_sample(d->b, "argus_ingest_clock_offset_seconds", labels, offset_ns / 1e9);
    d->first = false;
}

static void collector_metrics_clock(struct stream_clock *c, struct http_buf *b)
{
    struct collector_series each = {b, true};
    struct stream_clock_stats cs;

    stream_clock_get_stats(c, &cs);
    http_buf_metric(b, "argus_ingest_clock_skewed_streams", "gauge",
                    "agent streams off by more than ingest.clock_skew_warn now", "", cs.flagged);
    http_buf_metric(b, "argus_ingest_clock_skew_flags_total", "counter",
                    "times an agent stream was flagged for its clock", "", cs.flags_total);
    stream_clock_foreach(c, collector_clock, &each);
}

/* Seconds until the loaded TLS certificates expire (negative: expired). */
static void collector_metrics_tls(struct transport_server *t, struct http_buf *b)
{
    int64_t cert, ca, now = (int64_t)(clock_real_ns() / NSEC_PER_SEC);

    if (transport_cert_expiry(t, &cert, &ca) < 0)
        return;
    http_buf_metric(b, "argus_tls_cert_expiry_seconds", "gauge",
                    "seconds until the loaded certificate expires (tls.cert: server, tls.ca: ca)",
                    "role=\"server\"", (double)(cert - now));
    http_buf_sample(b, "argus_tls_cert_expiry_seconds", "role=\"ca\"", (double)(ca - now));
}

/* The per-job series (collector/series/series.h), as remote write sends them. */
static void collector_metrics_series(struct diagnosis *d, struct http_buf *b)
{
    struct series_set s = {0};

    series_collect(d, &s);
    series_write_text(&s, b);
    series_set_clear(&s);
}

static void collector_metrics_remote_write(struct remote_write *w, struct http_buf *b)
{
    struct remote_write_stats rs;

    remote_write_get_stats(w, &rs);
    http_buf_metric(b, "argus_remote_write_requests_total", "counter",
                    "remote write requests, by result: sent (2xx), failed (5xx, 429 or transport "
                    "error: retried)",
                    "result=\"sent\"", rs.requests_sent);
    http_buf_sample(b, "argus_remote_write_requests_total", "result=\"failed\"",
                    rs.requests_failed);
    http_buf_metric(b, "argus_remote_write_samples_sent_total", "counter",
                    "samples in requests the endpoint accepted", "", rs.samples_sent);
    http_buf_metric(b, "argus_remote_write_samples_dropped_total", "counter",
                    "samples dropped from the full queue (remote_write.queue_bytes)", "",
                    rs.samples_dropped);
    http_buf_metric(b, "argus_remote_write_samples_rejected_total", "counter",
                    "samples in requests the endpoint refused with 4xx (not retried)", "",
                    rs.samples_rejected);
    http_buf_metric(b, "argus_remote_write_queue_requests", "gauge", "requests waiting", "",
                    rs.queued_requests);
    http_buf_metric(b, "argus_remote_write_queue_bytes", "gauge", "their compressed bytes", "",
                    rs.queued_bytes);
    http_buf_metric(b, "argus_remote_write_last_success_timestamp_seconds", "gauge",
                    "when the endpoint last accepted a request (0: never)", "",
                    rs.last_success_unix);
}

/* Rank ownership (owners.h): refusals, moves, the table's size. */
static void collector_metrics_owners(struct owners *ow, struct http_buf *b)
{
    struct owners_stats os;

    owners_get_stats(ow, &os);
    http_buf_metric(b, "argus_collector_rank_owner_refused_total", "counter",
                    "batches refused: a rank they write belongs to another agent identity", "",
                    os.refused);
    http_buf_metric(b, "argus_collector_rank_owner_moves_total", "counter",
                    "ranks that moved to another agent identity (a new attempt of the job, or "
                    "the owner silent past diag.job_idle)",
                    "", os.moves);
    http_buf_metric(b, "argus_collector_rank_owner_store_errors_total", "counter",
                    "rank owner entries not written to the store (written again later)", "",
                    os.store_errors);
    http_buf_metric(b, "argus_collector_rank_owner_jobs", "gauge", "jobs in the rank owner table",
                    "", os.jobs);
}

/* The admission limits (limits.*): refusals by limit, the memory budget. */
static void collector_metrics_limits(struct limits *l, struct http_buf *b)
{
    const char *names[LIMITS_KIND_COUNT];
    struct limits_stats ls;

    limits_get_stats(l, &ls);
    for (int k = 0; k < LIMITS_KIND_COUNT; k++)
        names[k] = limits_kind_name(k);
    collector_diag_counter(b, "argus_limit_rejections_total",
                           "batches refused by an admission limit (limits.*), by limit", "limit",
                           names, ls.rejections, LIMITS_KIND_COUNT);
    http_buf_metric(b, "argus_limit_jobs", "gauge", "jobs active (counted against limits.max_jobs)",
                    "", ls.jobs);
    http_buf_metric(b, "argus_limit_names", "gauge", "distinct names of the active jobs", "",
                    ls.names);
    http_buf_metric(b, "argus_limit_job_memory_bytes", "gauge",
                    "per-job state charged against limits.job_memory", "", ls.memory);
    http_buf_metric(b, "argus_limit_job_memory_limit_bytes", "gauge", "limits.job_memory", "",
                    ls.memory_limit);
    http_buf_metric(b, "argus_limit_jobs_forgotten_total", "counter",
                    "jobs whose admission state was freed after diag.job_idle", "",
                    ls.jobs_forgotten);
}

/* The drill-down captures (collector/trace/). */
static void collector_metrics_traces(struct trace_capture *t, struct http_buf *b)
{
    struct trace_capture_stats s;

    if (!t)
        return;
    trace_capture_get_stats(t, &s);
    http_buf_metric(b, "argus_trace_captures_total", "counter",
                    "drill-down capture requests, by outcome", "outcome=\"requested\"",
                    s.requested);
    http_buf_sample(b, "argus_trace_captures_total", "outcome=\"received\"", s.received);
    http_buf_sample(b, "argus_trace_captures_total", "outcome=\"failed\"", s.failed);
    http_buf_sample(b, "argus_trace_captures_total", "outcome=\"refused\"", s.refused);
    http_buf_sample(b, "argus_trace_captures_total", "outcome=\"store_error\"", s.store_errors);
    http_buf_metric(b, "argus_trace_captures_pending", "gauge",
                    "capture requests waiting for their agent's answer", "", s.pending);
}

/* Which jobs: one sample per job this collector is primary or standby of
 * (history placed elsewhere is only counted). */
static void collector_metrics_job_role(void *ctx, const char *job, enum membership_role role)
{
    struct http_buf *b = ctx;
    char e[300], labels[400];

    if (role == MEMBERSHIP_OTHER)
        return;
    snprintf(labels, sizeof(labels), "job=\"%s\",role=\"%s\"", http_label_escape(e, sizeof(e), job),
             membership_role_name(role));
    http_buf_sample(b, "argus_collector_job_role", labels, 1);
}

/* The collector's place in the set: jobs it holds by role, members, self. */
static void collector_metrics_membership(struct collector_metrics_ctx *m, struct http_buf *b)
{
    struct membership_counts mc;
    char labels[32];

    if (!m->membership)
        return;
    http_buf_printf(b, "# HELP argus_collector_job_role a job this collector is the primary or "
                       "the standby of under the current collector set\n"
                       "# TYPE argus_collector_job_role gauge\n");
    if (membership_count_each(m->membership, m->store, &mc, collector_metrics_job_role, b) < 0)
        return;
    for (int r = 0; r < MEMBERSHIP_ROLES; r++) {
        snprintf(labels, sizeof(labels), "role=\"%s\"", membership_role_name(r));
        if (r == 0)
            http_buf_metric(b, "argus_collector_jobs_owned", "gauge",
                            "jobs this collector holds, by its role for each under the current "
                            "collector set (other: placed elsewhere)",
                            labels, mc.jobs[r]);
        else
            http_buf_sample(b, "argus_collector_jobs_owned", labels, mc.jobs[r]);
    }
    http_buf_metric(b, "argus_collector_set_members", "gauge",
                    "members of the collector set (1: a collector on its own)", "", mc.members);
    http_buf_metric(b, "argus_collector_set_self_found", "gauge",
                    "1 when this collector is a member of its collector set (else it owns no job)",
                    "", mc.self_found);
}

/* The store's disk and its reserve (store.reserve). */
static void collector_metrics_disk(const struct store_stats *st, struct http_buf *b)
{
    http_buf_metric(b, "argus_store_reserve_bytes", "gauge",
                    "bytes the store's reserve file holds (0: released for a full disk)", "",
                    st->reserve_bytes);
    http_buf_metric(b, "argus_store_reserve_configured_bytes", "gauge", "store.reserve", "",
                    st->reserve_want);
    http_buf_metric(b, "argus_store_reserve_released_total", "counter",
                    "times the reserve was released because a write or the open failed for space",
                    "", st->reserve_released);
    http_buf_metric(b, "argus_store_disk_free_bytes", "gauge", "free bytes of store.dir's disk", "",
                    st->disk_free_bytes);
    http_buf_metric(b, "argus_store_disk_size_bytes", "gauge", "size of store.dir's disk", "",
                    st->disk_total_bytes);
}

static void collector_metrics_kernel_sets(const struct kernel_sets_stats *k, struct http_buf *b)
{
    http_buf_metric(b, "argus_ingest_kernel_sets_defined_total", "counter",
                    "kernel identity sets kept for the agents to refer to", "", k->defined);
    http_buf_metric(b, "argus_ingest_kernel_sets_referred_total", "counter",
                    "step records whose kernels came coded as a kept identity set", "",
                    k->referred);
    http_buf_metric(b, "argus_ingest_kernel_sets_unknown_total", "counter",
                    "step records that referred to a set this collector does not hold, stored "
                    "without their kernels",
                    "", k->unknown);
    http_buf_metric(b, "argus_ingest_kernel_sets_bad_total", "counter",
                    "set definitions whose id is not their groups' (ignored)", "", k->bad);
    http_buf_metric(b, "argus_ingest_kernel_sets_cached", "gauge",
                    "kernel identity sets held in memory", "", k->cached);
}

static void collector_metrics(struct collector_metrics_ctx *m, struct http_buf *b)
{
    struct ingest_stats in;
    struct store_stats st;
    struct transport_stats ts;
    char labels[64];

    alerts_write_metrics(m->alerts, b);
    actions_write_metrics(m->actions, b);
    ingest_get_stats(m->ingest, &in);
    store_get_stats(m->store, &st);
    transport_get_stats(m->transport, &ts);
    collector_metrics_traces(m->traces, b);
    http_buf_metric(b, "argus_ingest_batches_total", "counter", "batches written", "", in.batches);
    http_buf_metric(b, "argus_ingest_duplicate_batches_total", "counter",
                    "replayed batches acked without writing", "", in.duplicates);
    http_buf_metric(b, "argus_ingest_bytes_total", "counter", "frame bytes received", "", in.bytes);
    http_buf_metric(b, "argus_ingest_rank_steps_total", "counter", "step records written", "",
                    in.rank_steps);
    http_buf_metric(b, "argus_ingest_duplicate_records_total", "counter",
                    "step records already stored (replayed under new sequence numbers)", "",
                    st.duplicate_records);
    http_buf_metric(b, "argus_ingest_acks_total", "counter", "acks sent", "", in.acks);
    http_buf_metric(b, "argus_ingest_streams", "gauge", "open agent streams", "", in.streams);
    http_buf_metric(b, "argus_ingest_agents_unreachable", "gauge",
                    "agents whose stream ended and none came back: their nodes are unreachable, "
                    "not silent",
                    "", in.unreachable);
    collector_metrics_kernel_sets(&in.kernel_sets, b);
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
    collector_metrics_disk(&st, b);
    http_buf_metric(b, "argus_query_calls_total", "counter", "unary query calls", "",
                    ts.unary_calls);
    http_buf_metric(b, "argus_grpc_unimplemented_total", "counter",
                    "calls of methods the collector does not serve (answered UNIMPLEMENTED)", "",
                    ts.unimplemented);
    http_buf_metric(b, "argus_grpc_calls_refused_total", "counter",
                    "calls refused: their peer had grpc.max_calls_per_peer open", "",
                    ts.refused_busy);
    http_buf_metric(b, "argus_grpc_peers", "gauge", "hosts with a gRPC call open", "", ts.peers);
    collector_metrics_tls(m->transport, b);
    collector_metrics_membership(m, b);
    fleet_write_metrics(m->fleet, b);
    collector_metrics_limits(ingest_admission(m->ingest), b);
    collector_metrics_owners(ingest_owners(m->ingest), b);
    collector_diag_metrics(m, b);
    if (m->diagq)
        collector_metrics_diagq(m->diagq, b);
    if (m->clock)
        collector_metrics_clock(m->clock, b);
    struct collector_series dc = {b, true};
    ingest_foreach_drop(m->ingest, collector_drop, &dc);
    collector_metrics_series(m->diagnosis, b);
    if (m->remote_write)
        collector_metrics_remote_write(m->remote_write, b);
    procstat_metrics(b, "argus-collector");
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
        if (st.reserve_want && !st.reserve_bytes)
            http_buf_printf(&b, "store reserve not held: %.1f MiB free of %.1f MiB\n",
                            st.disk_free_bytes / 1048576.0, st.disk_total_bytes / 1048576.0);
        resp->status = st.failing ? 503 : 200;
    } else {
        /* a page of the report (collector/web/), or not found */
        if (!trace_json_http(m->store, path, resp) && !web_handle(m->store, path, resp))
            resp->status = 404;
        return;
    }
    if (b.failed)
        resp->status = 500;
    resp->body = b.data;
    resp->len = b.len;
}
