/* The agent's /metrics and /healthz, served from the snapshot the main loop
 * publishes each tick (see agent_http.h). */
#include "agent/agent_http.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/procstat.h"

#define AGENT_HTTP_SOURCE_METRICS_NS NSEC_PER_SEC /* the sources' lines are rendered this often */

/* --- the metrics table ---------------------------------------------------- */

/* One metric of the snapshot: one sample, or, for a labelled family, an
 * array (count values from offset, labelled label_key=label(i)). */
struct agent_metric {
    const char *name, *type, *help;
    size_t offset; /* of its uint64_t in struct agent_snapshot, unless value */
    double (*value)(const struct agent_snapshot *s); /* a value computed from several fields */
    int count;                                       /* >0: an array of count values */
    const char *label_key;
    const char *(*label)(int i);
};

#define SNAP(field) .offset = offsetof(struct agent_snapshot, field)

static double snap_connected(const struct agent_snapshot *s)
{
    return s->delivery.exporter.connected;
}

static double snap_frames_expired(const struct agent_snapshot *s)
{
    return (double)(s->frames.expired + s->frames.overflowed);
}

static double snap_frames_waiting(const struct agent_snapshot *s)
{
    return (double)s->frames.waiting;
}

static double snap_loop_busy_max(const struct agent_snapshot *s)
{
    return s->loop_busy_max_ns / 1e9;
}

static double snap_hw_gpus(const struct agent_snapshot *s)
{
    return s->hw.gpus;
}

static double snap_hw_nics(const struct agent_snapshot *s)
{
    return s->hw.nics;
}

static double snap_hw_sample(const struct agent_snapshot *s)
{
    return s->hw.sample_ns / 1e9;
}

static const char *snap_skip_name(int i)
{
    return discovery_skip_name((enum discovery_skip)i);
}

/* The reasons of spans_stats' dropped_age, dropped_cap, corrupt_chunks. */
static const char *snap_span_drop_name(int i)
{
    static const char *const names[] = {"age", "cap", "corrupt_chunk"};

    return names[i];
}

/* In /metrics order. */
static const struct agent_metric agent_metrics[] = {
    {"argus_agent_ranks", "gauge", "ranks tracked", SNAP(assembler.ranks)},
    {"argus_agent_steps_total", "counter", "step records assembled", SNAP(delivery.batcher.steps)},
    {"argus_agent_events_total", "counter", "events from sources", SNAP(assembler.events)},
    {"argus_agent_untracked_events_total", "counter", "events of processes that are not ranks",
     SNAP(assembler.untracked)},
    {"argus_agent_unmapped_host_events_total", "counter",
     "host counter events of an id the agent has no row for (dropped)",
     SNAP(assembler.unknown_counters)},
    {"argus_agent_batches_total", "counter", "batches sealed", SNAP(delivery.batcher.batches)},
    {"argus_agent_steps_coded_total", "counter",
     "step records whose kernel groups went coded (every collector said it reads them)",
     SNAP(delivery.batcher.coded)},
    {"argus_agent_steps_kernel_sets_total", "counter",
     "... of those, coded as a kernel identity set the collectors hold (only their clusters)",
     SNAP(delivery.batcher.sets_referred)},
    {"argus_agent_batch_bytes_total", "counter", "batch bytes before LZ4",
     SNAP(delivery.batcher.raw_bytes)},
    {"argus_agent_frame_bytes_total", "counter", "frame bytes after LZ4",
     SNAP(delivery.batcher.frame_bytes)},
    {"argus_agent_batch_errors_total", "counter",
     "batches lost before the spool (encode or spool write failed)", SNAP(delivery.batch_errors)},
    {"argus_agent_spool_bytes", "gauge", "bytes in spool segments", SNAP(delivery.spool.bytes)},
    {"argus_agent_spool_records", "gauge", "unacked batches in the spool",
     SNAP(delivery.spool.records)},
    {"argus_agent_spool_dropped_total", "counter", "unacked batches dropped by the spool cap",
     SNAP(delivery.spool.dropped_records)},
    {"argus_agent_spool_corrupt_total", "counter", "spool records lost to corruption",
     SNAP(delivery.spool.corrupt_records)},
    {"argus_agent_spool_fsync_errors_total", "counter", "failed fsyncs",
     SNAP(delivery.spool.fsync_errors)},
    {"argus_agent_collector_connected", "gauge",
     "streams to the collector up (a set: to every collector of it)", .value = snap_connected},
    {"argus_agent_sent_total", "counter", "batches sent (with resends)",
     SNAP(delivery.exporter.sent)},
    {"argus_agent_acked_seq", "gauge",
     "highest batch seq acked (a set: by every collector meant to have it)",
     SNAP(delivery.exporter.acked)},
    {"argus_agent_reconnects_total", "counter", "stream reconnects",
     SNAP(delivery.exporter.reconnects)},
    {"argus_agent_rejected_total", "counter", "batches the collector refused as invalid (dropped)",
     SNAP(delivery.exporter.rejected)},
    {"argus_agent_discovery_scans_total", "counter", "/proc scans", SNAP(discovery.scans)},
    {"argus_agent_discovery_watched", "gauge",
     "processes watched for the communicator that will say their rank", SNAP(discovery.watched)},
    {"argus_agent_discovery_other_netns_total", "counter",
     "processes left alone in another network namespace (discovery.netns = own)",
     SNAP(discovery.other_netns)},
    {"argus_agent_discovery_skipped_total", "counter",
     "processes that look like ranks but are not tracked, by reason", SNAP(discovery.skipped),
     .count = DISCOVERY_SKIP_COUNT, .label_key = "reason", .label = snap_skip_name},
    {"argus_agent_step_frames_waited_total", "counter",
     "step records that waited for their stack samples to be symbolized", SNAP(frames.waited)},
    {"argus_agent_step_frames_expired_total", "counter",
     "step records sent on with stack samples still unresolved", .value = snap_frames_expired},
    {"argus_agent_step_frames_waiting", "gauge", "step records waiting for their stack samples now",
     .value = snap_frames_waiting},
    {"argus_agent_step_model_changes_lost_total", "counter",
     "step model locks and unlocks beyond those logged in one tick (not logged)",
     SNAP(stepinfer.changes_lost)},
    {"argus_agent_rank_statuses_total", "counter",
     "statuses of ranks that made no progress or ended, sent to the collector, by process state",
     SNAP(liveness.statuses), .count = LIVENESS_STATES, .label_key = "state",
     .label = liveness_state_name},
    {"argus_agent_rank_exits_total", "counter",
     "ranks whose process ended, by how (signal, error: exit code > 0, clean, unknown: no proc "
     "probe)",
     SNAP(liveness.exits), .count = LIVENESS_EXIT_COUNT, .label_key = "how",
     .label = liveness_how_name},
    {"argus_agent_hw_gpus", "gauge", "GPUs read through NVML (0: no NVML, hw.nvml)",
     .value = snap_hw_gpus},
    {"argus_agent_hw_nics", "gauge", "NICs and InfiniBand ports read (hw.nics)",
     .value = snap_hw_nics},
    {"argus_agent_hw_samples_total", "counter", "hardware samples taken (hw.interval)",
     SNAP(hw.samples)},
    {"argus_agent_hw_gpu_errors_total", "counter",
     "GPU samples that did not answer (the GPU kept its last counters)", SNAP(hw.gpu_errors)},
    {"argus_agent_hw_nic_read_errors_total", "counter", "NIC samples that read nothing",
     SNAP(hw.nic_errors)},
    {"argus_agent_hw_unmatched_total", "counter",
     "step records of a rank whose GPU NVML does not list (no GPU counters on them)",
     SNAP(hw.unmatched)},
    {"argus_agent_hw_sample_seconds", "gauge", "how long the last hardware sample took",
     .value = snap_hw_sample},
    {"argus_agent_loop_wakeups_total", "counter", "turns of the main loop", SNAP(loop_turns)},
    {"argus_agent_span_ring_bytes", "gauge",
     "bytes of raw spans kept for drill-down (spans.ring_bytes)", SNAP(spans.bytes)},
    {"argus_agent_spans_dropped_total", "counter", "raw spans dropped from the rings, by reason",
     SNAP(spans.dropped_age), .count = 3, .label_key = "reason", .label = snap_span_drop_name},
    {"argus_agent_span_captures_total", "counter", "capture requests of the collector answered",
     SNAP(spans.captures)},
    {"argus_agent_clock_steps_total", "counter",
     "times the realtime clock was set (timestamps from then on use the new time)",
     SNAP(clock_steps)},
    {"argus_agent_loop_busy_max_seconds", "gauge",
     "longest single turn of the main loop since start (events and periodic work)",
     .value = snap_loop_busy_max},
};

_Static_assert(sizeof(((struct agent_snapshot *)0)->discovery.skipped[0]) == sizeof(uint64_t),
               "discovery_stats.skipped is read as uint64_t");
#define SPANS_AT(field) offsetof(struct spans_stats, field)
_Static_assert(SPANS_AT(dropped_cap) == SPANS_AT(dropped_age) + sizeof(uint64_t) &&
                   SPANS_AT(corrupt_chunks) == SPANS_AT(dropped_cap) + sizeof(uint64_t) &&
                   sizeof(((struct spans_stats *)0)->dropped_age) == sizeof(uint64_t),
               "spans_stats' dropped_age, dropped_cap, corrupt_chunks are read as uint64_t[3]");

static double agent_metric_value(const struct agent_snapshot *s, const struct agent_metric *m,
                                 int i)
{
    if (m->value)
        return m->value(s);
    return (double)((const uint64_t *)((const char *)s + m->offset))[i];
}

/* One row's samples; HELP and TYPE before the first sample of a family. */
static void agent_metric_write(const struct agent_snapshot *s, const struct agent_metric *m,
                               struct http_buf *b)
{
    char labels[96] = "";
    int n = m->count ? m->count : 1;

    for (int i = 0; i < n; i++) {
        if (m->count)
            snprintf(labels, sizeof(labels), "%s=\"%s\"", m->label_key, m->label(i));
        if (i == 0)
            http_buf_metric(b, m->name, m->type, m->help, labels, agent_metric_value(s, m, i));
        else
            http_buf_sample(b, m->name, labels, agent_metric_value(s, m, i));
    }
}

static void agent_metrics_write(const struct agent_snapshot *s, struct http_buf *b)
{
    char labels[96];

    for (size_t i = 0; i < sizeof(agent_metrics) / sizeof(*agent_metrics); i++)
        agent_metric_write(s, &agent_metrics[i], b);
    for (size_t i = 0; i < s->nsources; i++) {
        snprintf(labels, sizeof(labels), "source=\"%s\"", s->sources[i].name);
        if (i == 0)
            http_buf_metric(b, "argus_agent_source_up", "gauge",
                            "1 when the source runs (uprobe sources: and their uprobes attach), "
                            "0 when unsupported or failed",
                            labels, s->sources[i].running);
        else
            http_buf_sample(b, "argus_agent_source_up", labels, s->sources[i].running);
    }
}

/* --- the sources' own lines ------------------------------------------------- */

/* The metric name of a sample line. */
static int family_len(const char *line)
{
    return (int)strcspn(line, "{ ");
}

static int family_cmp(const char *a, const char *b)
{
    int la = family_len(a), lb = family_len(b), c = strncmp(a, b, (size_t)(la < lb ? la : lb));

    return c ? c : la - lb;
}

/* By family; within one, the sources' order (the lines' places in text). */
static int line_cmp(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    int c = family_cmp(a, b);

    return c ? c : (a < b ? -1 : a > b);
}

/* The sources' own lines (argus_probe_*) in text (modified), grouped by
 * metric name: several probes write samples of the same name, and a family
 * must be contiguous. */
static void source_metrics(char *text, struct http_buf *b)
{
    char *lines[AGENT_SOURCE_METRICS_BYTES / 8], *save = NULL;
    size_t n = 0;

    for (char *l = strtok_r(text, "\n", &save); l && n < sizeof(lines) / sizeof(*lines);
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    qsort(lines, n, sizeof(*lines), line_cmp);
    for (size_t i = 0; i < n; i++) {
        int len = family_len(lines[i]);

        if (i == 0 || family_cmp(lines[i - 1], lines[i])) { /* a new family */
            bool counter = len > 6 && !strncmp(lines[i] + len - 6, "_total", 6);

            http_buf_printf(b, "# HELP %.*s a counter of the agent's sources, one sample each\n",
                            len, lines[i]);
            http_buf_printf(b, "# TYPE %.*s %s\n", len, lines[i], counter ? "counter" : "gauge");
        }
        http_buf_printf(b, "%s\n", lines[i]);
    }
}

/* /healthz: what discovery watches and skipped, by reason. */
static void agent_healthz_discovery(const struct agent_snapshot *s, struct http_buf *b)
{
    http_buf_printf(b,
                    "discovery: %llu ranks tracked, %llu processes watched for their "
                    "communicator, skipped:",
                    (unsigned long long)s->assembler.ranks,
                    (unsigned long long)s->discovery.watched);
    uint64_t total = 0;
    for (int r = 0; r < DISCOVERY_SKIP_COUNT; r++) {
        total += s->discovery.skipped[r];
        if (s->discovery.skipped[r])
            http_buf_printf(b, " %s %llu", discovery_skip_name(r),
                            (unsigned long long)s->discovery.skipped[r]);
    }
    http_buf_printf(b, "%s\n", total ? "" : " none");
}

void agent_http_handler(void *ctx, const char *path, struct http_response *resp)
{
    struct agent_http *h = ctx;
    struct agent_snapshot s;
    struct http_buf b = {0};
    char text[AGENT_SOURCE_METRICS_BYTES], *members = NULL;
    bool metrics = strcmp(path, "/metrics") == 0;

    pthread_mutex_lock(&h->lock);
    s = h->snap;
    if (metrics) { /* only /metrics shows the sources' lines and the collectors' */
        memcpy(text, h->source_metrics, sizeof(text));
        members = h->member_metrics ? strdup(h->member_metrics) : NULL;
    }
    pthread_mutex_unlock(&h->lock);
    if (metrics) {
        agent_metrics_write(&s, &b);
        if (members)
            http_buf_printf(&b, "%s", members);
        free(members);
        source_metrics(text, &b);
        procstat_metrics(&b, "argus-agent");
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        resp->status = 200;
    } else if (strcmp(path, "/healthz") == 0) {
        bool alive = clock_mono_ns() - s.tick_ns < 5 * NSEC_PER_SEC;
        http_buf_printf(&b, "%s\nranks %llu, spool %llu batches, collector %s\n",
                        alive ? "ok" : "main loop stalled", (unsigned long long)s.assembler.ranks,
                        (unsigned long long)s.delivery.spool.records,
                        s.delivery.exporter.connected ? "connected" : "disconnected");
        agent_healthz_discovery(&s, &b);
        resp->status = alive ? 200 : 503;
    } else {
        resp->status = 404;
        return;
    }
    resp->body = b.data;
    resp->len = b.len;
}

/* --- the main loop's side: the snapshot -------------------------------------- */

/* The value of the sample NAME{probe="PROBE"} in the rendered source
 * metrics, or -1 when absent. */
static long long source_sample(const char *text, const char *name, const char *probe)
{
    char key[128];

    snprintf(key, sizeof(key), "%s{probe=\"%s\"} ", name, probe);
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key))
        if (p == text || p[-1] == '\n')
            return strtoll(p + strlen(key), NULL, 10);
    return -1;
}

/* A uprobe source is up only when its uprobes attach: one whose every
 * attach failed so far (argus_probe_uprobe_failures_total > 0 and
 * argus_probe_uprobes_attached 0, e.g. without CAP_SYS_ADMIN) is down. */
static bool source_attach_failed(const char *text, const char *probe)
{
    return source_sample(text, "argus_probe_uprobe_failures_total", probe) > 0 &&
           source_sample(text, "argus_probe_uprobes_attached", probe) == 0;
}

void agent_http_init(struct agent_http *h)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->lock, NULL);
}

void agent_http_destroy(struct agent_http *h)
{
    free(h->member_metrics);
    pthread_mutex_destroy(&h->lock);
}

void agent_http_publish(struct agent_http *h, const struct agent_snapshot *snap,
                        const struct agent_sources *sources, const struct agent_delivery *delivery,
                        uint64_t now)
{
    struct http_buf members = {0};
    bool due = now >= h->next_source_metrics_ns;

    if (due && delivery) /* rendered outside the lock: /metrics need not wait for it */
        agent_delivery_member_metrics(delivery, &members);
    pthread_mutex_lock(&h->lock);
    if (due && !members.failed) {
        free(h->member_metrics);
        h->member_metrics = members.data;
        members.data = NULL;
    }
    h->snap = *snap;
    h->snap.nsources = agent_sources_status(sources, h->snap.sources, AGENT_SOURCES_MAX);
    if (now >= h->next_source_metrics_ns) { /* the attach flags change with the text only */
        agent_sources_metrics(sources, h->source_metrics, sizeof(h->source_metrics));
        h->next_source_metrics_ns = now + AGENT_HTTP_SOURCE_METRICS_NS;
        for (size_t i = 0; i < h->snap.nsources; i++)
            h->attach_failed[i] = source_attach_failed(h->source_metrics, h->snap.sources[i].name);
    }
    for (size_t i = 0; i < h->snap.nsources; i++)
        if (h->attach_failed[i])
            h->snap.sources[i].running = false;
    pthread_mutex_unlock(&h->lock);
    free(members.data);
}
