/* argus-collector: the server, and collector/'s composition root:
 *   transport.c  gRPC frames in, acks and query answers out
 *   ingest.c     frames -> validated, deduplicated batches -> store/ (durable)
 *                -> ack; the agents' clock offsets (stream_clock.c); and the
 *                diagnosis queue (diagq.c), whose one worker feeds
 *                diagnosis.c, the adapter that feeds diag/ (the pure engine)
 *                and stores its reports: acks never wait on diagnosis
 *   query.c      argusctl's requests -> store/ reads
 *   metrics.c    /metrics and /healthz; the report page (web/) on the same port;
 *                series.c the per-job series in /metrics, which
 *                remote_write.c also pushes (remote_write.url)
 *   membership.c the collector's place in the collector set (cluster.*): the
 *                jobs it owns as primary and standby, for /metrics
 *   actions/     the hooks run on the nodes of paging reports (actions.*),
 *                for the jobs this collector is the primary of
 * main() is a sequence of named setup steps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/actions/actions.h"
#include "collector/alerts/alerts.h"
#include "collector/alerts/sinks/sinks.h"
#include "collector/config.h"
#include "collector/diag/diagnosis.h"
#include "collector/diag/diagq.h"
#include "collector/fleet/fleet.h"
#include "collector/ingest/ingest.h"
#include "collector/ingest/links.h"
#include "collector/membership.h"
#include "collector/metrics.h"
#include "collector/query/query.h"
#include "collector/query/query_nodes.h"
#include "collector/query/query_actions.h"
#include "collector/series/remote_write.h"
#include "collector/series/series.h"
#include "collector/store/store.h"
#include "collector/ingest/stream_clock.h"
#include "collector/transport/transport.h"
#include "common/clock.h"
#include "common/daemon.h"
#include "common/http.h"
#include "common/log.h"
#include "collector/trace/trace_capture.h"
#include "common/rpc_paths.h"
#include "common/tls.h"

struct collector {
    struct collector_config cfg;
    struct store *store;
    struct ingest *ingest;
    struct alerts *alerts;
    struct actions *actions; /* hooks on blamed nodes (actions.*) */
    struct diagnosis *diagnosis;
    struct diagq *diagq;
    struct stream_clock *clock;
    struct trace_capture *traces; /* drill-down captures (collector/trace/) */
    struct links *links;          /* agents heard now (ingest writes, diagnosis reads) */
    struct transport_server *transport;
    struct http_server *http;
    struct remote_write *remote_write;
    struct membership *membership; /* the collector set (cluster.*) */
    struct fleet *fleet;           /* fleet memory (fleet.*) */
    struct collector_metrics_ctx metrics;
    int sigfd;
    int port;
    uint64_t next_high_water; /* monotonic ns of the next store.high_water check */
};

static int collector_open_store(struct collector *c)
{
    struct store_options so = {
        .dir = c->cfg.store_dir,
        .sync = c->cfg.store_sync,
        .steps_retention_ns = c->cfg.steps_retention,
        .reports_retention_ns = c->cfg.reports_retention,
        .reserve_bytes = c->cfg.store_reserve,
        .memtable_bytes = c->cfg.store_memtable,
        .wal_zstd = c->cfg.store_wal_compression,
    };
    char err[512];
    int r = daemon_mkdir_p(c->cfg.store_dir, 0750);

    if (r < 0) {
        log_error("main", "cannot create store.dir %s: %s (set store.dir to a writable path)",
                  c->cfg.store_dir, strerror(-r));
        return r;
    }
    if (so.wal_zstd) /* a config file from before it was off by default sets it */
        log_warn("main",
                 "store.wal_compression = true: RocksDB 7.8's compressed WAL can lose acked "
                 "batches, or keep the store from opening, after a full disk; set it to false");
    r = store_open(&so, &c->store, err, sizeof(err));
    if (r < 0)
        log_error("main", "cannot open the store in %s: %s", c->cfg.store_dir, err);
    return r;
}

/* Fleet memory (fleet.*): its snapshot is made by the first tick. */
static int collector_start_fleet(struct collector *c)
{
    struct fleet_options o = {
        .window_ns = c->cfg.fleet_window,
        .suspect_jobs = (uint32_t)c->cfg.fleet_suspect_jobs,
        .refresh_ns = c->cfg.fleet_refresh,
    };

    c->fleet = fleet_new(c->store, &o);
    return c->fleet ? 0 : -ENOMEM;
}

/* Alerts and their sinks (alerts.*), the queue of the last run resumed. */
static int collector_start_alerts(struct collector *c)
{
    char *report_url = collector_report_url(&c->cfg);
    struct alerts_options o = {
        .webhook_token_file = c->cfg.alerts_webhook_token_file,
        .report_url = report_url,
        .exec_timeout_ns = c->cfg.alerts_exec_timeout,
        .http_timeout_ns = c->cfg.alerts_http_timeout,
        .resend_ns = c->cfg.alerts_resend,
        .backoff_max_ns = c->cfg.alerts_backoff_max,
        .window = c->cfg.diag_window,
        .resolve_after = c->cfg.alerts_resolve_after,
        .job_idle_ns = c->cfg.diag_job_idle,
        .rate_limit = (uint32_t)c->cfg.alerts_rate_limit,
    };
    char err[512], key[64];
    int r;

    for (size_t i = 0; i < alert_sinks_count; i++) { /* each sink's key alerts.NAME */
        snprintf(key, sizeof(key), "alerts.%s", alert_sinks[i]->name);
        o.targets[i] = collector_config_string(&c->cfg, key);
        if (!o.targets[i]) { /* a sink added without its key (test_config_check) */
            log_error("main", "alerts: the sink %s has no config key %s", alert_sinks[i]->name,
                      key);
            free(report_url);
            return -EINVAL;
        }
    }
    r = report_url ? alerts_new(c->store, &o, &c->alerts, err, sizeof(err)) : -ENOMEM;
    if (r < 0)
        log_error("main", "alerts: %s", report_url ? err : "out of memory");
    free(report_url); /* alerts keep their copy */
    return r;
}

/* actions_options.acts_for: only the job's primary acts (no set: every job). */
static bool collector_acts_for(void *ctx, const char *job)
{
    struct collector *c = ctx;

    return c->membership && membership_role(c->membership, job) == MEMBERSHIP_PRIMARY;
}

/* The actions (actions.*), their records and breaker of the last run resumed. */
static int collector_start_actions(struct collector *c)
{
    struct actions_options o = {
        .rules = c->cfg.actions_rules,
        .dry_run = c->cfg.actions_dry_run,
        .max = (uint32_t)c->cfg.actions_max,
        .window_ns = c->cfg.actions_window,
        .timeout_ns = c->cfg.actions_timeout,
        .acts_for = collector_acts_for,
        .acts_for_ctx = c,
    };
    char err[512];
    int r = actions_new(c->store, &o, &c->actions, err, sizeof(err));

    if (r < 0)
        log_error("main", "actions: %s", err);
    else if (*o.rules)
        log_info("main", "actions on (%s): %s, at most %u per %.0f s", o.rules,
                 o.dry_run ? "dry run: nothing runs" : "hooks run", o.max,
                 (double)o.window_ns / 1e9);
    return r;
}

/* diagnosis_options.on_report: a stored report that pages goes to the
 * drill-down captures and to the actions. */
static void collector_on_report(void *ctx, const Argus__V1__Report *r)
{
    struct collector *c = ctx;

    trace_capture_report(c->traces, r);
    actions_observe(c->actions, r);
}

/* diagq_feed_fn: diagnosis with the batch's receive time (its stream's
 * progress and silence go by the collector's clock). */
static void collector_feed_diagnosis(void *ctx, const Argus__V1__Batch *b, uint64_t recv_unix_ns)
{
    diagnosis_feed(ctx, b, recv_unix_ns);
}

/* diagnosis_clock_fn: a job's diagnosis is as far as its queued batches. */
static uint64_t collector_diagnosis_clock(void *ctx, const char *job, uint64_t now_unix_ns)
{
    return diagq_job_clock(ctx, job, now_unix_ns);
}

/* ARGUS_TEST_DIAG_DELAY_MS (tests only): how long the diagnosis worker
 * sleeps per batch, to make diagnosis slow. 0 when unset; -EINVAL when bad. */
static int collector_test_delay(uint64_t *ns)
{
    const char *v = getenv("ARGUS_TEST_DIAG_DELAY_MS");
    char *end;
    unsigned long ms;

    *ns = 0;
    if (!v || !*v)
        return 0;
    errno = 0;
    ms = strtoul(v, &end, 10);
    if (errno || *end || ms > 600000) {
        log_error("main", "ARGUS_TEST_DIAG_DELAY_MS=%s: want milliseconds 0-600000", v);
        return -EINVAL;
    }
    *ns = ms * NSEC_PER_MSEC;
    log_warn("main", "test knob: diagnosis sleeps %lu ms per batch", ms);
    return 0;
}

/* Diagnosis, its queue, and the agents' clock estimate. */
static int collector_start_diagnosis(struct collector *c)
{
    struct diagnosis_options dopt = {
        .step_timeout_ns = c->cfg.diag_step_timeout,
        .stream_hold_ns = c->cfg.diag_stream_hold,
        .silence_ns = c->cfg.diag_silence,
        .hang_after_ns = c->cfg.diag_hang_after,
        .max_open_bytes = c->cfg.diag_max_open_bytes,
        .max_bytes = c->cfg.diag_max_bytes,
        .late_horizon = (uint32_t)c->cfg.diag_late_horizon,
        .job_idle_ns = c->cfg.diag_job_idle,
        .window = (uint32_t)c->cfg.diag_window,
        .min_hits = (uint32_t)c->cfg.diag_min_hits,
        .alerts = c->alerts,
        .max_jobs = (uint32_t)c->cfg.limits_max_jobs,
        .max_ranks = (uint32_t)c->cfg.limits_max_ranks_per_job,
    };
    struct diagq_options qopt = {
        .max_bytes = c->cfg.diag_queue_bytes,
        .lag_warn_ns = c->cfg.diag_lag_warn,
        .progress = diagnosis_progress,
    };
    struct stream_clock_options copt = {
        .skew_warn_ns = c->cfg.clock_skew_warn,
        .window_ns = c->cfg.clock_window,
    };
    int r = collector_test_delay(&qopt.test_delay_ns);

    if (r < 0)
        return r;
    c->traces = trace_capture_new(c->store);
    c->links = links_new();
    dopt.link = c->links ? links_is_up : NULL;
    dopt.link_ctx = c->links;
    dopt.on_report = collector_on_report;
    dopt.on_report_ctx = c;
    c->diagnosis = c->traces ? diagnosis_new(c->store, &dopt) : NULL;
    c->diagq = c->diagnosis ? diagq_new(&qopt, collector_feed_diagnosis, c->diagnosis) : NULL;
    if (c->diagq)
        diagnosis_set_clock(c->diagnosis, collector_diagnosis_clock, c->diagq);
    c->clock = stream_clock_new(&copt);
    if (c->diagnosis && (r = diagnosis_restore(c->diagnosis)) < 0)
        log_warn("main", "taking running jobs back from the store: %s", strerror(-r));
    return c->diagnosis && c->diagq && c->clock ? 0 : -ENOMEM;
}

/* mTLS unless grpc.plaintext is set explicitly; both is a mistake. */
static int collector_check_tls(const struct collector_config *cfg, struct tls_files *tls)
{
    char err[512];
    int r;

    *tls = (struct tls_files){cfg->tls_ca, cfg->tls_cert, cfg->tls_key};
    r = tls_choose(cfg->grpc_plaintext, tls, "grpc.plaintext = true",
                   "tls.ca, tls.cert and tls.key", err, sizeof(err));
    if (r < 0)
        log_error("main", "%s", err);
    else if (r == 0)
        log_warn("main",
                 "grpc.plaintext = true: gRPC on %s has no TLS and no authentication; "
                 "anyone who reaches it can write any agent's data and read every job",
                 cfg->grpc_listen);
    return r < 0 ? r : 0;
}

/* The limits.* keys (collector/ingest/limits.h); jobs are forgotten when diagnosis
 * forgets them. */
static void collector_admission_limits(const struct collector *c, struct limits_options *o)
{
    o->max_jobs = (uint32_t)c->cfg.limits_max_jobs;
    o->max_ranks_per_job = (uint32_t)c->cfg.limits_max_ranks_per_job;
    o->max_names_per_job = c->cfg.limits_max_names_per_job;
    o->max_names_total = c->cfg.limits_max_names_total;
    o->max_step = c->cfg.limits_max_step;
    o->max_step_jump = c->cfg.limits_max_step_jump;
    o->max_jobs_per_batch = (uint32_t)c->cfg.limits_max_jobs_per_batch;
    o->job_memory = c->cfg.limits_job_memory;
    o->job_idle_ns = c->cfg.diag_job_idle;
}

static int collector_start_grpc(struct collector *c)
{
    struct ingest_limits limits;
    struct transport_options to = {
        .listen = c->cfg.grpc_listen,
        .workers = (unsigned)c->cfg.grpc_workers,
        .max_message = c->cfg.max_frame * 2 + (1u << 20),
        .keepalive_ms = c->cfg.grpc_keepalive / NSEC_PER_MSEC,
        .max_calls_per_peer = (uint32_t)c->cfg.grpc_max_calls_per_peer,
    };

    int r = collector_check_tls(&c->cfg, &to.tls);

    if (r < 0)
        return r;
    ingest_default_limits(&limits);
    limits.max_seq_jump = c->cfg.max_seq_jump;
    limits.max_frame = c->cfg.max_frame;
    limits.max_raw = c->cfg.max_raw;
    limits.max_names_per_batch = c->cfg.max_names_per_batch;
    collector_admission_limits(c, &limits.admit);
    c->ingest = ingest_new(c->store, &limits, c->diagq, c->clock);
    if (c->ingest) {
        ingest_set_traces(c->ingest, c->traces);
        ingest_set_links(c->ingest, c->links);
    }
    c->transport = transport_new(&to);
    if (!c->ingest || !c->transport)
        return -ENOMEM;
    if (transport_add_stream(c->transport, RPC_INGEST_PUSH, &ingest_stream_ops, c->ingest) < 0 ||
        query_register(c->transport, c->store) < 0 ||
        query_register_alerts(c->transport, c->alerts) < 0 ||
        query_register_nodes(c->transport, c->fleet) < 0 ||
        query_register_actions(c->transport, c->actions) < 0)
        return -EINVAL;
    c->port = transport_start(c->transport);
    if (c->port < 0) {
        log_error("main", "cannot listen on grpc.listen %s%s", c->cfg.grpc_listen,
                  c->port == -EINVAL ? " (TLS files not usable, see above)" : "");
        return c->port;
    }
    log_info("main", "gRPC listening on %s (port %d, %s)", c->cfg.grpc_listen, c->port,
             c->cfg.grpc_plaintext ? "plaintext" : "mTLS");
    return 0;
}

/* remote_write_collect_fn: the per-job series. */
static int collector_collect_series(void *ctx, struct series_set *out)
{
    int n = series_collect(ctx, out);

    return n < 0 ? n : 0;
}

static int collector_start_remote_write(struct collector *c)
{
    char host[256] = "";
    if (!*c->cfg.cluster_self && gethostname(host, sizeof(host) - 1) < 0)
        host[0] = '\0';
    struct remote_write_options o = {
        .collector = *c->cfg.cluster_self ? c->cfg.cluster_self : host,
        .url = c->cfg.remote_write_url,
        .interval_ns = c->cfg.remote_write_interval,
        .timeout_ns = c->cfg.remote_write_timeout,
        .queue_bytes = c->cfg.remote_write_queue_bytes,
        .bearer_token_file = c->cfg.remote_write_bearer_token_file,
        .replica = c->cfg.remote_write_replica,
    };
    char err[512];

    if (!*c->cfg.remote_write_url)
        return 0;
    c->remote_write =
        remote_write_new(&o, collector_collect_series, c->diagnosis, err, sizeof(err));
    if (!c->remote_write) {
        log_error("main", "remote write: %s", err);
        return -EINVAL;
    }
    log_info("main", "remote write of the per-job series to %s every %.0f s",
             c->cfg.remote_write_url, (double)c->cfg.remote_write_interval / 1e9);
    return 0;
}

/* cluster.*: the set this collector is a member of (a DNS one resolved
 * now and watched). It changes nothing of what is stored or diagnosed. */
static int collector_start_membership(struct collector *c)
{
    struct membership_options o = {
        .set = c->cfg.cluster_set,
        .dns = c->cfg.cluster_dns,
        .interval_ns = c->cfg.cluster_dns_interval,
        .self = c->cfg.cluster_self,
        .grpc_listen = c->cfg.grpc_listen,
    };
    struct membership_counts mc;
    char err[512];
    int r = membership_new(&o, &c->membership, err, sizeof(err));

    if (r < 0) {
        log_error("main", "cluster: %s", err);
        return r;
    }
    if (membership_count(c->membership, c->store, &mc) == 0 && (*o.set || *o.dns))
        log_info("main", "collector set of %zu members (%s), this collector %s", mc.members,
                 *o.set ? o.set : o.dns, mc.self_found ? "among them" : "NOT among them");
    return 0;
}

static int collector_start_http(struct collector *c)
{
    char err[256];

    if (!*c->cfg.http_listen)
        return 0;
    c->metrics = (struct collector_metrics_ctx){
        c->ingest, c->store,  c->transport,    c->diagnosis,  c->diagq, c->clock,
        c->alerts, c->traces, c->remote_write, c->membership, c->fleet, c->actions};
    c->http = http_start(c->cfg.http_listen, collector_http_handler, &c->metrics, err, sizeof(err));
    if (!c->http) {
        log_error("main", "http.listen: %s", err);
        return -EADDRINUSE;
    }
    log_info("main", "HTTP /metrics, /healthz and the report page / on %s (port %d)",
             c->cfg.http_listen, http_port(c->http));
    return 0;
}

/* SIGHUP: load and validate the config again; log each changed key and
 * whether it applied (only log.level applies live;
 * the TLS files are read again at the next connection). An invalid config is
 * refused whole and the running one kept. */
static void collector_reload(struct collector *c, int argc, char **argv)
{
    struct collector_config fresh = {0};
    struct config_result res;

    daemon_notify("RELOADING=1");
    transport_reload_certs(c->transport);
    if (config_load(&collector_config_table, &fresh, argc, argv, &res) < 0) {
        log_error("main", "reload rejected, keeping the running config: %s",
                  config_errors_oneline(&res));
    } else {
        config_apply_changes(&collector_config_table, &c->cfg, &fresh);
        log_set_level((enum log_level)c->cfg.log_level);
    }
    config_free(&collector_config_table, &fresh);
    daemon_notify("READY=1");
}

/* store.high_water: true (and a warning) when the store's disk is used
 * above it, at most once a minute, so retention runs early. */
static bool collector_above_high_water(struct collector *c, uint64_t now)
{
    struct store_stats st;
    double used;

    if (!c->cfg.store_high_water || now < c->next_high_water)
        return false;
    c->next_high_water = now + 60 * NSEC_PER_SEC;
    store_get_stats(c->store, &st);
    if (!st.disk_total_bytes)
        return false;
    used = 100.0 * (double)(st.disk_total_bytes - st.disk_free_bytes) / (double)st.disk_total_bytes;
    if (used < (double)c->cfg.store_high_water)
        return false;
    log_warn("main", "store disk %.0f%% used, above store.high_water %llu%%: retention runs now",
             used, (unsigned long long)c->cfg.store_high_water);
    return true;
}

static void collector_run(struct collector *c, int argc, char **argv)
{
    uint64_t watchdog = daemon_watchdog_ns(), next_retention = 0, next_clock = 0;

    for (;;) {
        enum daemon_signal s = daemon_wait_signal(c->sigfd, 1000);
        uint64_t now = clock_mono_ns();
        if (s == DAEMON_SIGNAL_STOP)
            break;
        if (s == DAEMON_SIGNAL_RELOAD)
            collector_reload(c, argc, argv);
        if (watchdog)
            daemon_notify("WATCHDOG=1");
        diagnosis_tick(c->diagnosis, clock_real_ns());
        alerts_tick(c->alerts, clock_real_ns());
        diagq_tick(c->diagq, now);
        if (fleet_tick(c->fleet, clock_real_ns()) < 0)
            log_warn("main", "fleet memory: the scores in /metrics could not be renewed");
        if (now >= next_clock) {
            stream_clock_tick(c->clock, clock_real_ns());
            next_clock = now + 60 * NSEC_PER_SEC;
        }
        store_tick(c->store, now);
        if (now >= next_retention || collector_above_high_water(c, now)) {
            int64_t n = store_apply_retention(c->store, clock_real_ns());
            if (n > 0)
                log_info("main", "retention removed %lld keys or ranges", (long long)n);
            next_retention = now + c->cfg.retention_interval;
        }
    }
}

static void collector_teardown(struct collector *c)
{
    daemon_notify("STOPPING=1");
    http_stop(c->http);
    membership_free(c->membership);     /* after http, which counts through it */
    fleet_free(c->fleet);               /* after http, which reads its snapshot */
    remote_write_free(c->remote_write); /* before diagnosis, which it reads */
    transport_free(c->transport);
    ingest_free(c->ingest);
    diagq_free(c->diagq); /* the worker stops before diagnosis goes */
    diagnosis_free(c->diagnosis);
    alerts_free(c->alerts);   /* after diagnosis, which feeds it */
    actions_free(c->actions); /* after diagnosis and transport, which use it */
    trace_capture_free(c->traces);
    links_free(c->links); /* after ingest and diagnosis, which use it */
    stream_clock_free(c->clock);
    store_close(c->store);
    if (c->sigfd >= 0)
        close(c->sigfd);
    config_free(&collector_config_table, &c->cfg);
}

int main(int argc, char **argv)
{
    struct collector c = {.sigfd = -1};
    struct config_result res;
    int r;

    r = daemon_config(&collector_config_table, &c.cfg, argc, argv, &c.cfg.log_level, &res);
    if (r != 0)
        return r > 0 ? 0 : 2;
    log_info("main", "starting (config %s)", res.path ? res.path : "built-in defaults");
    config_log(&collector_config_table, &c.cfg);
    c.sigfd = daemon_signalfd();
    r = c.sigfd < 0 ? c.sigfd : 0;
    if (r == 0)
        r = collector_open_store(&c);
    if (r == 0)
        r = collector_start_fleet(&c);
    if (r == 0)
        r = collector_start_alerts(&c);
    if (r == 0)
        r = collector_start_actions(&c);
    if (r == 0)
        r = collector_start_membership(&c); /* before diagnosis: the actions ask it */
    if (r == 0)
        r = collector_start_diagnosis(&c);
    if (r == 0)
        r = collector_start_remote_write(&c);
    if (r == 0)
        r = collector_start_grpc(&c);
    if (r == 0)
        r = collector_start_http(&c);
    if (r == 0) {
        daemon_notify("READY=1");
        collector_run(&c, argc, argv);
        log_info("main", "stopping");
    }
    collector_teardown(&c);
    return r == 0 ? 0 : 1;
}
