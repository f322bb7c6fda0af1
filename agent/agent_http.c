/* The agent's /metrics and /healthz, served from the snapshot the main loop
 * publishes each tick (the HTTP thread never touches live state), and
 * agent_publish, which takes that snapshot on the main loop. */
#include "agent/agent_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_impl.h"
#include "agent/discovery/discovery.h"
#include "agent/delivery/batcher.h"
#include "agent/delivery/exporter.h"
#include "agent/delivery/spool.h"
#include "agent/spans/spans.h"
#include "agent/steps/assembler.h"
#include "agent/steps/stepframes.h"
#include "common/clock.h"
#include "common/procstat.h"

static void agent_metrics(const struct agent_snapshot *s, struct http_buf *b)
{
    char labels[96];

    http_buf_metric(b, "argus_agent_ranks", "gauge", "ranks tracked", "", s->ranks);
    http_buf_metric(b, "argus_agent_steps_total", "counter", "step records assembled", "",
                    s->steps);
    http_buf_metric(b, "argus_agent_events_total", "counter", "events from sources", "", s->events);
    http_buf_metric(b, "argus_agent_untracked_events_total", "counter",
                    "events of processes that are not ranks", "", s->untracked_events);
    http_buf_metric(b, "argus_agent_batches_total", "counter", "batches sealed", "", s->batches);
    http_buf_metric(b, "argus_agent_batch_bytes_total", "counter", "batch bytes before LZ4", "",
                    s->batch_raw_bytes);
    http_buf_metric(b, "argus_agent_frame_bytes_total", "counter", "frame bytes after LZ4", "",
                    s->batch_frame_bytes);
    http_buf_metric(b, "argus_agent_batch_errors_total", "counter",
                    "batches lost before the spool (encode or spool write failed)", "",
                    s->batch_errors);
    http_buf_metric(b, "argus_agent_spool_bytes", "gauge", "bytes in spool segments", "",
                    s->spool_bytes);
    http_buf_metric(b, "argus_agent_spool_records", "gauge", "unacked batches in the spool", "",
                    s->spool_records);
    http_buf_metric(b, "argus_agent_spool_dropped_total", "counter",
                    "unacked batches dropped by the spool cap", "", s->spool_dropped);
    http_buf_metric(b, "argus_agent_spool_corrupt_total", "counter",
                    "spool records lost to corruption", "", s->spool_corrupt);
    http_buf_metric(b, "argus_agent_spool_fsync_errors_total", "counter", "failed fsyncs", "",
                    s->spool_fsync_errors);
    http_buf_metric(b, "argus_agent_collector_connected", "gauge", "stream to the collector up", "",
                    s->connected);
    http_buf_metric(b, "argus_agent_sent_total", "counter", "batches sent (with resends)", "",
                    s->sent);
    http_buf_metric(b, "argus_agent_acked_seq", "gauge", "highest acked batch seq", "", s->acked);
    http_buf_metric(b, "argus_agent_reconnects_total", "counter", "stream reconnects", "",
                    s->reconnects);
    http_buf_metric(b, "argus_agent_rejected_total", "counter",
                    "batches the collector refused as invalid (dropped)", "", s->rejected);
    http_buf_metric(b, "argus_agent_discovery_scans_total", "counter", "/proc scans", "",
                    s->discovery_scans);
    http_buf_metric(b, "argus_agent_discovery_watched", "gauge",
                    "processes watched for the communicator that will say their rank", "",
                    s->discovery_watched);
    for (int r = 0; r < DISCOVERY_SKIP_COUNT; r++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", discovery_skip_name(r));
        if (r == 0)
            http_buf_metric(b, "argus_agent_discovery_skipped_total", "counter",
                            "processes that look like ranks but are not tracked, by reason", labels,
                            s->discovery_skipped[r]);
        else
            http_buf_sample(b, "argus_agent_discovery_skipped_total", labels,
                            s->discovery_skipped[r]);
    }
    http_buf_metric(b, "argus_agent_step_frames_waited_total", "counter",
                    "step records that waited for their stack samples to be symbolized", "",
                    s->frames_waited);
    http_buf_metric(b, "argus_agent_step_frames_expired_total", "counter",
                    "step records sent on with stack samples still unresolved", "",
                    s->frames_expired);
    http_buf_metric(b, "argus_agent_step_frames_waiting", "gauge",
                    "step records waiting for their stack samples now", "", s->frames_waiting);
    http_buf_metric(b, "argus_agent_loop_wakeups_total", "counter", "turns of the main loop", "",
                    s->loop_turns);
    http_buf_metric(b, "argus_agent_span_ring_bytes", "gauge",
                    "bytes of raw spans kept for drill-down (spans.ring_bytes)", "",
                    s->spans_bytes);
    http_buf_metric(b, "argus_agent_spans_dropped_total", "counter",
                    "raw spans dropped from the rings, by reason", "reason=\"age\"",
                    s->spans_dropped_age);
    http_buf_sample(b, "argus_agent_spans_dropped_total", "reason=\"cap\"", s->spans_dropped_cap);
    http_buf_sample(b, "argus_agent_spans_dropped_total", "reason=\"corrupt_chunk\"",
                    s->spans_corrupt);
    http_buf_metric(b, "argus_agent_span_captures_total", "counter",
                    "capture requests of the collector answered", "", s->spans_captures);
    http_buf_metric(b, "argus_agent_clock_steps_total", "counter",
                    "times the realtime clock was set (timestamps from then on use the new time)",
                    "", s->clock_steps);
    http_buf_metric(b, "argus_agent_loop_busy_max_seconds", "gauge",
                    "longest single turn of the main loop since start (events and periodic work)",
                    "", s->loop_busy_max_ns / 1e9);
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
                    (unsigned long long)s->ranks, (unsigned long long)s->discovery_watched);
    uint64_t total = 0;
    for (int r = 0; r < DISCOVERY_SKIP_COUNT; r++) {
        total += s->discovery_skipped[r];
        if (s->discovery_skipped[r])
            http_buf_printf(b, " %s %llu", discovery_skip_name(r),
                            (unsigned long long)s->discovery_skipped[r]);
    }
    http_buf_printf(b, "%s\n", total ? "" : " none");
}

void agent_http_handler(void *ctx, const char *path, struct http_response *resp)
{
    struct agent_http *h = ctx;
    struct agent_snapshot s;
    struct http_buf b = {0};
    char text[AGENT_SOURCE_METRICS_BYTES];

    pthread_mutex_lock(&h->lock);
    s = h->snap;
    memcpy(text, h->source_metrics, sizeof(text));
    pthread_mutex_unlock(&h->lock);
    if (strcmp(path, "/metrics") == 0) {
        agent_metrics(&s, &b);
        source_metrics(text, &b);
        procstat_metrics(&b, "argus-agent");
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        resp->status = 200;
    } else if (strcmp(path, "/healthz") == 0) {
        bool alive = clock_mono_ns() - s.tick_ns < 5 * NSEC_PER_SEC;
        http_buf_printf(&b, "%s\nranks %llu, spool %llu batches, collector %s\n",
                        alive ? "ok" : "main loop stalled", (unsigned long long)s.ranks,
                        (unsigned long long)s.spool_records,
                        s.connected ? "connected" : "disconnected");
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

/* The running sources' own metrics into buf (NUL-terminated). */
static void agent_render_source_metrics(struct agent *a, char *buf, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < a->nsources; i++) {
        const struct agent_source *src = &a->sources[i];

        if (src->running && src->ops->metrics && n + 1 < len)
            n += src->ops->metrics(src->state, buf + n, len - n);
    }
    buf[n < len ? n : len - 1] = 0;
}

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

void agent_publish(struct agent *a, uint64_t now)
{
    struct agent_snapshot s = {.tick_ns = now};
    struct assembler_stats as;
    struct batcher_stats bs;
    struct spool_stats ss;
    struct exporter_stats es;
    struct discovery_stats ds;
    struct stepframes_stats fs;
    struct spans_stats sps;

    assembler_get_stats(a->assembler, &as);
    batcher_get_stats(a->batcher, &bs);
    spool_stats(a->spool, &ss);
    exporter_get_stats(a->exporter, &es);
    discovery_get_stats(a->discovery, &ds);
    stepframes_get_stats(a->frames, &fs);
    s.ranks = as.ranks;
    s.steps = bs.steps; /* step records batched: assembled, inferred and replayed */
    s.events = as.events;
    s.untracked_events = as.untracked;
    s.batches = bs.batches;
    s.batch_raw_bytes = bs.raw_bytes;
    s.batch_frame_bytes = bs.frame_bytes;
    s.batch_errors = a->batch_errors;
    s.spool_bytes = ss.bytes;
    s.spool_records = ss.records;
    s.spool_dropped = ss.dropped_records;
    s.spool_dropped_bytes = ss.dropped_bytes;
    s.spool_corrupt = ss.corrupt_records;
    s.spool_fsync_errors = ss.fsync_errors;
    s.spool_acked_seq = ss.acked_seq;
    s.spool_epoch = ss.epoch;
    s.connected = es.connected;
    s.sent = es.sent;
    s.acked = es.acked;
    s.reconnects = es.reconnects;
    s.rejected = es.rejected;
    s.resent = es.resent;
    s.discovery_scans = ds.scans;
    s.discovery_processes = ds.processes;
    s.discovery_watched = ds.watched;
    _Static_assert(DISCOVERY_SKIP_COUNT <= sizeof(s.discovery_skipped) / sizeof(uint64_t),
                   "agent_snapshot.discovery_skipped too small");
    for (int r = 0; r < DISCOVERY_SKIP_COUNT; r++)
        s.discovery_skipped[r] = ds.skipped[r];
    s.loop_turns = a->loop_turns;
    s.loop_busy_max_ns = a->loop_busy_max_ns;
    s.clock_steps = a->clock_steps;
    s.frames_waited = fs.waited;
    s.frames_expired = fs.expired + fs.overflowed;
    s.frames_waiting = fs.waiting;
    spans_get_stats(a->spans, &sps);
    s.spans_bytes = sps.bytes;
    s.spans_dropped_age = sps.dropped_age;
    s.spans_dropped_cap = sps.dropped_cap;
    s.spans_corrupt = sps.corrupt_chunks;
    s.spans_captures = sps.captures;
    s.nsources = a->nsources;
    for (size_t i = 0; i < a->nsources; i++) {
        s.sources[i].name = a->sources[i].ops->name;
        s.sources[i].running = a->sources[i].running;
    }
    pthread_mutex_lock(&a->http_state.lock);
    if (now >= a->next_source_metrics_ns) {
        agent_render_source_metrics(a, a->http_state.source_metrics,
                                    sizeof(a->http_state.source_metrics));
        a->next_source_metrics_ns = now + AGENT_MAX_SLEEP_NS;
    }
    for (size_t i = 0; i < s.nsources; i++)
        if (s.sources[i].running &&
            source_attach_failed(a->http_state.source_metrics, s.sources[i].name))
            s.sources[i].running = false;
    a->http_state.snap = s;
    pthread_mutex_unlock(&a->http_state.lock);
}
