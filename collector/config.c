#include "collector/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/actions/actions.h"
#include "collector/alerts/alerts.h"
#include "collector/alerts/sinks/sinks.h"
#include "common/collector_set.h"
#include "common/config_value.h"
#include "common/tls.h"

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    CONFIG_OPTION(struct collector_config, key, type, field, def, lo, hi, help, NULL, NULL, false)
#define OPT_ENUM(key, field, def, names, help)                                                     \
    CONFIG_OPTION(struct collector_config, key, CONFIG_ENUM, field, def, 0, 0, help, names, NULL,  \
                  false)

#define OPT_CHECK(key, type, field, def, help, fn)                                                 \
    CONFIG_OPTION(struct collector_config, key, type, field, def, 0, 0, help, NULL, fn, false)
#define OPT_ENUM_LIVE(key, field, def, names, help)                                                \
    CONFIG_OPTION(struct collector_config, key, CONFIG_ENUM, field, def, 0, 0, help, names, NULL,  \
                  true)

/* Whether url is http(s):// and a host. */
static bool collector_http_url(const char *url)
{
    const char *host = strncmp(url, "http://", 7) == 0    ? url + 7
                       : strncmp(url, "https://", 8) == 0 ? url + 8
                                                          : NULL;

    return host && *host && *host != '/' && *host != '{';
}

/* remote_write.url, http.public_url: empty, or http(s):// and a host. */
static int collector_check_http_url(const struct config_option *o, const void *field, char *err,
                                    size_t errlen)
{
    const char *url = *(char *const *)field;
    bool rw = strcmp(o->key, "remote_write.url") == 0;

    if (!url || !*url || collector_http_url(url))
        return 0;
    snprintf(err, errlen,
             "%s: '%s' is not an http:// or https:// URL with a host (e.g. %s; empty: off)", o->key,
             url, rw ? "http://prometheus:9090/api/v1/write" : "http://argus.example:7702");
    return -EINVAL;
}

/* alerts.report_url: empty, or an http(s) URL whose placeholders are
 * {id} and {job} only. */
static int collector_check_report_url(const struct config_option *o, const void *field, char *err,
                                      size_t errlen)
{
    const char *url = *(char *const *)field, *p;

    if (!url || !*url)
        return 0;
    if (!collector_http_url(url)) {
        snprintf(err, errlen,
                 "%s: '%s' is not an http:// or https:// URL with a host (e.g. "
                 "http://argus.example:7702/report/{id}; empty: http.public_url/report/{id})",
                 o->key, url);
        return -EINVAL;
    }
    for (p = strchr(url, '{'); p; p = strchr(p + 1, '{'))
        if (strncmp(p, "{id}", 4) != 0 && strncmp(p, "{job}", 5) != 0) {
            const char *end = strchr(p, '}');
            snprintf(err, errlen, "%s: unknown placeholder '%.*s' in '%s' (only {id} and {job})",
                     o->key, end ? (int)(end - p + 1) : (int)strlen(p), p, url);
            return -EINVAL;
        }
    return 0;
}

/* alerts.NAME (the targets of the sink NAME, collector/alerts/sinks/sinks.h)
 * and alerts.webhook_token_file: what the collector checks at start
 * (collector/alerts/alerts.h, alerts_check). */
static int collector_check_alerts_sink(const struct config_option *o, const void *field, char *err,
                                       size_t errlen)
{
    const char *v = *(char *const *)field;
    struct alerts_options a = {0};
    int row;

    if (!v || !*v)
        return 0;
    if (strcmp(o->key, "alerts.webhook_token_file") == 0) {
        a.webhook_token_file = v;
    } else {
        row = alert_sink_index(alert_sink_find(o->key + strlen("alerts.")));
        if (row < 0) {
            snprintf(err, errlen, "%s: no alert sink of that name", o->key);
            return -EINVAL;
        }
        a.targets[row] = v;
    }
    return alerts_check(&a, err, errlen) < 0 ? -EINVAL : 0;
}

/* actions.rules: CAUSE:/path entries whose hooks exist
 * (collector/actions/actions_rules.h). */
static int collector_check_actions_rules(const struct config_option *o, const void *field,
                                         char *err, size_t errlen)
{
    struct actions_options a = {.rules = *(char *const *)field};

    return actions_check(&a, err, errlen) < 0 ? -EINVAL : 0;
}

static const struct config_option collector_options[] = {
    OPT_ENUM_LIVE("log.level", log_level, "info", config_log_levels, "error, warn, info or debug"),
    OPT_CHECK("grpc.listen", CONFIG_STRING, grpc_listen, "0.0.0.0:7700",
              "gRPC address for agents and argusctl HOST:PORT (or unix:PATH)",
              config_check_grpc_listen),
    OPT("grpc.workers", CONFIG_UINT, grpc_workers, "2", 1, 64,
        "gRPC worker threads (one completion queue each)"),
    OPT("grpc.keepalive", CONFIG_DURATION, grpc_keepalive, "30s", 1, 3600,
        "keepalive ping interval; agents use the same"),
    OPT("grpc.max_calls_per_peer", CONFIG_UINT, grpc_max_calls_per_peer, "4096", 0, 1000000,
        "gRPC calls (agent streams, queries) one host may hold open at once; more are refused "
        "with RESOURCE_EXHAUSTED, counted in argus_grpc_calls_refused_total (0: no cap)"),
    OPT("grpc.plaintext", CONFIG_BOOL, grpc_plaintext, "false", 0, 0,
        "serve gRPC without TLS: anyone who reaches grpc.listen may write and read anything "
        "(warned at start); else tls.* must be set"),
    OPT("tls.ca", CONFIG_STRING, tls_ca, "", 0, 0,
        "CA bundle (PEM) that agent and argusctl certificates must chain to"),
    OPT("tls.cert", CONFIG_STRING, tls_cert, "", 0, 0,
        "the collector's certificate chain (PEM); reloaded on SIGHUP or when the file changes"),
    OPT("tls.key", CONFIG_STRING, tls_key, "", 0, 0, "private key (PEM) of tls.cert"),
    OPT_CHECK("http.listen", CONFIG_STRING, http_listen, "0.0.0.0:7702",
              "/metrics, /healthz and the report pages (plain HTTP, no login) address HOST:PORT: "
              "every interface, for Prometheus on another host to scrape (127.0.0.1:7702: this "
              "host only; empty: off)",
              config_check_http_listen),
    OPT_CHECK("http.public_url", CONFIG_STRING, http_public_url, "",
              "this collector's web pages as people reach them (e.g. http://argus.example:7702): "
              "alerts link to its /report/ID page (empty: no link unless alerts.report_url)",
              collector_check_http_url),
    OPT("store.dir", CONFIG_STRING, store_dir, "/var/lib/argus/collector", 0, 0,
        "RocksDB data directory (created when missing)"),
    OPT("store.sync", CONFIG_BOOL, store_sync, "false", 0, 0,
        "fsync the WAL before every ack (else the WAL survives a process crash, not power loss)"),
    OPT("store.steps_retention", CONFIG_DURATION, steps_retention, "7d", 0, 3650 * 86400.0,
        "keep step records this long (0: forever)"),
    OPT("store.reports_retention", CONFIG_DURATION, reports_retention, "90d", 0, 3650 * 86400.0,
        "keep reports this long (0: forever)"),
    OPT("store.retention_interval", CONFIG_DURATION, retention_interval, "1h", 1, 86400,
        "how often retention runs"),
    OPT("store.memtable", CONFIG_SIZE, store_memtable, "32MiB", 1048576, 1024.0 * 1048576,
        "RocksDB write buffer of the step records (memory per buffer, up to 3); each WAL is "
        "preallocated to 1.1 x this, which a full disk uses up before writes fail"),
    OPT("store.wal_compression", CONFIG_BOOL, store_wal_compression, "false", 0, 0,
        "compress the WAL with ZSTD (RocksDB 7.8's experimental WAL compression): a third of "
        "the WAL's bytes for about 12% more collector CPU; not safe on a disk that fills up: a "
        "write cut short there can leave a record that keeps the store from opening again "
        "(Corruption: bad WriteBatch Put)"),
    OPT("store.reserve", CONFIG_SIZE, store_reserve, "64MiB", 0, 64.0 * 1073741824,
        "headroom file kept in store.dir (store.dir/reserve), released when the disk fills so "
        "the store still opens and answers queries, taken back when space returns (0: none)"),
    OPT("store.high_water", CONFIG_UINT, store_high_water, "0", 0, 99,
        "percent of the store's disk used above which retention runs at once, not waiting for "
        "store.retention_interval (0: off)"),
    OPT("ingest.max_frame", CONFIG_SIZE, max_frame, "4MiB", 4096, 256.0 * 1048576,
        "largest frame accepted from an agent"),
    OPT("ingest.max_raw", CONFIG_SIZE, max_raw, "32MiB", 4096, 1024.0 * 1048576,
        "largest decoded batch accepted"),
    OPT("ingest.max_names_per_batch", CONFIG_UINT, max_names_per_batch, "65536", 1, 1e7,
        "dictionary entries one batch may carry"),
    OPT("ingest.max_seq_jump", CONFIG_UINT, max_seq_jump, "1000000", 0, 1e15,
        "plaintext only: refuse a batch whose seq is this far above its agent's last stored seq "
        "(0: no bound)"),
    OPT("ingest.clock_skew_warn", CONFIG_DURATION, clock_skew_warn, "2s", 0.001, 86400 * 365.0,
        "flag (log once, count) an agent whose clock is off the collector's by more than this"),
    OPT("ingest.clock_window", CONFIG_DURATION, clock_window, "2m", 1, 3600,
        "window of the per-agent clock offset estimate (least-delayed batch in it)"),
    OPT("limits.max_jobs", CONFIG_UINT, limits_max_jobs, "1024", 1, 1e6,
        "jobs active at once (a job idle for diag.job_idle is forgotten); a new job over it is "
        "refused"),
    OPT("limits.max_ranks_per_job", CONFIG_UINT, limits_max_ranks_per_job, "65536", 1, 1e7,
        "rank numbers of a job must be below this; a declared world size is a hint capped to it"),
    OPT("limits.max_names_per_job", CONFIG_UINT, limits_max_names_per_job, "1000000", 1, 1e8,
        "distinct names (kernels, phases, collectives) one job may define"),
    OPT("limits.max_names_total", CONFIG_UINT, limits_max_names_total, "4000000", 1, 1e9,
        "distinct names of all active jobs together"),
    OPT("limits.max_step", CONFIG_UINT, limits_max_step, "281474976710656", 1, 1e18,
        "step numbers must be below this (2^48)"),
    OPT("limits.max_step_jump", CONFIG_UINT, limits_max_step_jump, "1000000", 1, 1e15,
        "a step more than this above its job's highest step (a new job: the batch's lowest) is "
        "refused"),
    OPT("limits.max_jobs_per_batch", CONFIG_UINT, limits_max_jobs_per_batch, "16", 1, 256,
        "jobs one batch may carry (each admitted on its own terms; the batch whole or not at all)"),
    OPT("limits.job_memory", CONFIG_SIZE, limits_job_memory, "4GiB", 1048576, 1e15,
        "budget for per-job state (diagnosis, names), charged before it is taken; a batch that "
        "would go over it is refused"),
    OPT("diag.step_timeout", CONFIG_DURATION, diag_step_timeout, "10s", 0.01, 3600,
        "a step closes this long after its first record even if live ranks are missing"),
    OPT("diag.stream_hold", CONFIG_DURATION, diag_stream_hold, "10s", 0.01, 3600,
        "a rank whose stream made no progress for this long stops holding the job's watermark"),
    OPT("diag.silence", CONFIG_DURATION, diag_silence, "30s", 0.01, 86400,
        "a rank (or a whole agent: one node finding) is silent after this long without records "
        "while the job goes on"),
    OPT("diag.hang_after", CONFIG_DURATION, diag_hang_after, "30s", 1, 86400,
        "ranks waiting this long in a collective that another rank never entered: the job is "
        "hung (raised to 10 x the job's median step time; keep it under the backend's timeout)"),
    OPT("diag.max_open_bytes", CONFIG_SIZE, diag_max_open_bytes, "256MiB", 1048576,
        1024.0 * 1073741824,
        "memory of one job's open and kept steps, grown to 32 KiB per rank of the job (at most 4 "
        "times this); over it the oldest closes (ArgusBlind)"),
    OPT("diag.max_bytes", CONFIG_SIZE, diag_max_bytes, "1GiB", 16777216, 1024.0 * 1073741824,
        "memory of all jobs' open and kept steps; over it the least recently fed jobs' "
        "diagnosis state is freed (counted)"),
    OPT("diag.job_idle", CONFIG_DURATION, diag_job_idle, "5m", 1, 86400 * 7.0,
        "a job that sent nothing this long has its open steps closed and its diagnosis state "
        "freed (fed again, it starts anew)"),
    OPT("diag.late_horizon", CONFIG_UINT, diag_late_horizon, "40", 1, 64,
        "closed steps that late records can still amend (older ones are counted, not diagnosed)"),
    OPT("diag.window", CONFIG_UINT, diag_window, "40", 2, 64, "persistence window N, in steps"),
    OPT("diag.min_hits", CONFIG_UINT, diag_min_hits, "24", 1, 64,
        "a suspect pages after being flagged in M of the last N steps (M at most diag.window)"),
    OPT("diag.queue_bytes", CONFIG_SIZE, diag_queue_bytes, "256MiB", 1048576, 64.0 * 1073741824,
        "memory of stored batches waiting for diagnosis; over it they are stored, acked and "
        "not diagnosed (counted)"),
    OPT("diag.lag_warn", CONFIG_DURATION, diag_lag_warn, "30s", 0.1, 86400,
        "log once when diagnosis of a job falls this far behind what was received"),
    OPT_CHECK("alerts.alertmanager", CONFIG_STRING, alerts_alertmanager, "",
              "Alertmanager base URLs, comma-separated (POST /api/v2/alerts; empty: none)",
              collector_check_alerts_sink),
    OPT_CHECK("alerts.webhook", CONFIG_STRING, alerts_webhook, "",
              "webhook URLs, comma-separated: each gets every alert change as argus.alert.v1 JSON",
              collector_check_alerts_sink),
    OPT_CHECK("alerts.webhook_token_file", CONFIG_STRING, alerts_webhook_token_file, "",
              "file holding the webhooks' bearer token (empty: no Authorization header)",
              collector_check_alerts_sink),
    OPT_CHECK("alerts.exec", CONFIG_STRING, alerts_exec, "",
              "absolute paths of hooks, comma-separated: run per alert change, the JSON on stdin",
              collector_check_alerts_sink),
    OPT("alerts.exec_timeout", CONFIG_DURATION, alerts_exec_timeout, "10s", 0.01, 3600,
        "an exec hook still running after this is killed (and retried)"),
    OPT("alerts.http_timeout", CONFIG_DURATION, alerts_http_timeout, "10s", 0.01, 3600,
        "timeout of one POST to an Alertmanager or webhook"),
    OPT_CHECK("alerts.report_url", CONFIG_STRING, alerts_report_url, "",
              "link to a report in alerts, {id} and {job} filled in (empty: "
              "http.public_url/report/{id}, or none without it)",
              collector_check_report_url),
    OPT("alerts.resend", CONFIG_DURATION, alerts_resend, "1m", 1, 3600,
        "re-send firing alerts to Alertmanager this often (endsAt 4x this ahead)"),
    OPT("alerts.backoff_max", CONFIG_DURATION, alerts_backoff_max, "1m", 0.1, 3600,
        "longest wait between retries of a sink that fails (from 1 s, doubling, jittered)"),
    OPT("alerts.resolve_after", CONFIG_UINT, alerts_resolve_after, "20", 1, 1e6,
        "an alert resolves when its suspects were healthy for diag.window steps; one the "
        "engine cannot say that of (taken back after a restart) after the job closed "
        "diag.window + this many steps without it"),
    OPT("alerts.rate_limit", CONFIG_UINT, alerts_rate_limit, "20", 0, 1e6,
        "alerts one job may start firing per hour (more stay pending, counted; 0: no limit)"),
    OPT("fleet.window", CONFIG_DURATION, fleet_window, "7d", 60, 3650 * 86400.0,
        "fleet memory: a node's score is the distinct jobs whose reports in this window named it "
        "a hardware-class culprit (argus_node_culprit_jobs; argusctl nodes without --since)"),
    OPT("fleet.suspect_jobs", CONFIG_UINT, fleet_suspect_jobs, "3", 1, 1e6,
        "a node with this many culprit jobs in fleet.window is suspect (argusctl nodes "
        "--suspect, argus_fleet_suspect_nodes)"),
    OPT("fleet.refresh", CONFIG_DURATION, fleet_refresh, "1m", 1, 86400,
        "how often the fleet scores in /metrics are computed again from the stored reports"),
    OPT_CHECK("actions.rules", CONFIG_STRING, actions_rules, "",
              "per paging cause, a hook run once per blamed node: CAUSE:/abs/path,... (compute, "
              "link, host, silent, hang, exited, or * for all; empty: no actions)",
              collector_check_actions_rules),
    OPT("actions.dry_run", CONFIG_BOOL, actions_dry_run, "true", 0, 0,
        "record what the hooks would do and run none of them"),
    OPT("actions.max", CONFIG_UINT, actions_max, "3", 1, 1000,
        "hook runs per actions.window; the next trips the circuit breaker (argusctl actions "
        "reset closes it)"),
    OPT("actions.window", CONFIG_DURATION, actions_window, "1h", 1, 30 * 86400,
        "the circuit breaker's window"),
    OPT("actions.timeout", CONFIG_DURATION, actions_timeout, "30s", 0.01, 3600,
        "a hook still running after this is killed (the action failed)"),
    OPT_CHECK("remote_write.url", CONFIG_STRING, remote_write_url, "",
              "push the per-job series to this Prometheus remote write 1.0 endpoint "
              "(http[s]://HOST:PORT/api/v1/write; empty: off)",
              collector_check_http_url),
    OPT("remote_write.interval", CONFIG_DURATION, remote_write_interval, "15s", 0.1, 3600,
        "how often the per-job series are collected and sent"),
    OPT("remote_write.timeout", CONFIG_DURATION, remote_write_timeout, "10s", 0.1, 300,
        "give up on one POST after this long (it is retried)"),
    OPT("remote_write.queue_bytes", CONFIG_SIZE, remote_write_queue_bytes, "16MiB", 4096,
        4.0 * 1073741824,
        "compressed requests waiting while the endpoint is down; over it the oldest are dropped "
        "(counted)"),
    OPT("remote_write.bearer_token_file", CONFIG_STRING, remote_write_bearer_token_file, "", 0, 0,
        "send Authorization: Bearer with the token on this file's first line (empty: none)"),
    OPT("remote_write.replica", CONFIG_STRING, remote_write_replica, "", 0, 0,
        "this collector's name in an HA pair: every series sent carries replica=\"NAME\" for the "
        "TSDB to drop and keep one of the pair's identical series (empty: no label)"),
    OPT_CHECK("cluster.set", CONFIG_STRING, cluster_set, "",
              "the collector set, HOST:PORT,HOST:PORT,... as the agents get it: jobs placed on "
              "this collector as primary or standby are counted in /metrics (it stores and "
              "diagnoses whatever it receives; empty, and no cluster.dns: a collector on its own)",
              collector_set_check_list_option),
    OPT_CHECK("cluster.dns", CONFIG_STRING, cluster_dns, "",
              "the collector set from DNS NAME:PORT (a headless Service), re-resolved every "
              "cluster.dns_interval (empty: cluster.set)",
              collector_set_check_dns_option),
    OPT("cluster.dns_interval", CONFIG_DURATION, cluster_dns_interval, "30s", 1, 86400,
        "how often cluster.dns is resolved again"),
    OPT("cluster.self", CONFIG_STRING, cluster_self, "", 0, 0,
        "this collector's member name in the set (empty: grpc.listen when that is a member, "
        "else the host name)"),
};

/* The bearer token file is read at start: it must be readable, and it
 * means nothing without remote_write.url. */
static void collector_check_remote_write(const struct collector_config *c,
                                         struct config_result *res)
{
    const struct config_table *t = &collector_config_table;
    const char *file = c->remote_write_bearer_token_file;
    char a[300];

    if (!file || !*file)
        return;
    if (!c->remote_write_url || !*c->remote_write_url)
        config_error(res,
                     "%s: remote_write.bearer_token_file is set but remote_write.url is "
                     "empty (remote write is off)",
                     config_where(t, res, "remote_write.bearer_token_file", a, sizeof(a)));
    else if (access(file, R_OK) < 0)
        config_error(res, "%s: remote_write.bearer_token_file %s: %s",
                     config_where(t, res, "remote_write.bearer_token_file", a, sizeof(a)), file,
                     strerror(errno));
}

/* Rules between keys: what the collector would otherwise clamp or replace. */
static int collector_check(const void *cfg, struct config_result *res)
{
    const struct collector_config *c = cfg;
    const struct config_table *t = &collector_config_table;
    int n = res->nerrors;
    char a[300], b[300];

    if (c->diag_min_hits > c->diag_window)
        config_error(res,
                     "%s: diag.min_hits = %llu is above diag.window = %llu (%s): a suspect "
                     "cannot be flagged in more steps than the window holds (diagnosis would "
                     "use %llu)",
                     config_where(t, res, "diag.min_hits", a, sizeof(a)),
                     (unsigned long long)c->diag_min_hits, (unsigned long long)c->diag_window,
                     config_where(t, res, "diag.window", b, sizeof(b)),
                     (unsigned long long)(c->diag_window * 3 / 5));
    if (c->max_frame > c->max_raw)
        config_error(res,
                     "%s: ingest.max_frame = %llu bytes is above ingest.max_raw = %llu bytes "
                     "(%s): an uncompressed frame over max_raw is refused anyway",
                     config_where(t, res, "ingest.max_frame", a, sizeof(a)),
                     (unsigned long long)c->max_frame, (unsigned long long)c->max_raw,
                     config_where(t, res, "ingest.max_raw", b, sizeof(b)));
    if (*c->cluster_set && *c->cluster_dns)
        config_error(res, "%s: cluster.set and cluster.dns are both set (%s): give one",
                     config_where(t, res, "cluster.set", a, sizeof(a)),
                     config_where(t, res, "cluster.dns", b, sizeof(b)));
    collector_check_remote_write(c, res);
    tls_config_check(c->grpc_plaintext, c->tls_ca, c->tls_cert, c->tls_key, res);
    return res->nerrors - n;
}

const struct config_table collector_config_table = {
    .program = "argus-collector",
    .summary = "stores per-step summaries from argus agents, finds stragglers, serves queries",
    .default_path = "/etc/argus/collector.conf",
    .options = collector_options,
    .count = sizeof(collector_options) / sizeof(collector_options[0]),
    .check = collector_check,
    .man_section = "8",
};

const char *collector_config_string(const struct collector_config *c, const char *key)
{
    for (size_t i = 0; i < collector_config_table.count; i++) {
        const struct config_option *o = &collector_options[i];
        if (o->type == CONFIG_STRING && strcmp(o->key, key) == 0)
            return *(char *const *)((const char *)c + o->offset);
    }
    return NULL;
}

char *collector_report_url(const struct collector_config *c)
{
    const char *pub = c->http_public_url ? c->http_public_url : "";
    size_t n = strlen(pub);
    char *url;

    if (c->alerts_report_url && *c->alerts_report_url)
        return strdup(c->alerts_report_url);
    while (n && pub[n - 1] == '/')
        n--;
    if (!n)
        return strdup("");
    url = malloc(n + sizeof("/report/{id}"));
    if (url)
        snprintf(url, n + sizeof("/report/{id}"), "%.*s/report/{id}", (int)n, pub);
    return url;
}
