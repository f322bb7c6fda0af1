/* argus-collector: the server, and collector/'s composition root:
 *   transport.c  gRPC frames in, acks and query answers out
 *   ingest.c     frames -> validated, deduplicated batches -> store/ (durable)
 *                -> ack; the agents' clock offsets (stream_clock.c); and the
 *                diagnosis queue (diagq.c), whose one worker feeds
 *                diagnosis.c, the adapter that feeds diag/ (the pure engine)
 *                and stores its reports: acks never wait on diagnosis
 *   query.c      argusctl's requests -> store/ reads
 *   metrics.c    /metrics and /healthz
 * main() is a sequence of named setup steps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/config.h"
#include "collector/diagnosis.h"
#include "collector/diagq.h"
#include "collector/ingest.h"
#include "collector/metrics.h"
#include "collector/query.h"
#include "collector/store/store.h"
#include "collector/stream_clock.h"
#include "collector/transport.h"
#include "common/clock.h"
#include "common/daemon.h"
#include "common/http.h"
#include "common/log.h"
#include "common/rpc_paths.h"

struct collector {
    struct collector_config cfg;
    struct store *store;
    struct ingest *ingest;
    struct diagnosis *diagnosis;
    struct diagq *diagq;
    struct stream_clock *clock;
    struct transport_server *transport;
    struct http_server *http;
    struct collector_metrics_ctx metrics;
    int sigfd;
    int port;
};

static int collector_open_store(struct collector *c)
{
    struct store_options so = {
        .dir = c->cfg.store_dir,
        .sync = c->cfg.store_sync,
        .steps_retention_ns = c->cfg.steps_retention,
        .reports_retention_ns = c->cfg.reports_retention,
    };
    char err[512];
    int r = daemon_mkdir_p(c->cfg.store_dir, 0750);

    if (r < 0) {
        log_error("main", "cannot create store.dir %s: %s (set store.dir to a writable path)",
                  c->cfg.store_dir, strerror(-r));
        return r;
    }
    r = store_open(&so, &c->store, err, sizeof(err));
    if (r < 0)
        log_error("main", "cannot open the store in %s: %s", c->cfg.store_dir, err);
    return r;
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
        .max_open_bytes = c->cfg.diag_max_open_bytes,
        .max_bytes = c->cfg.diag_max_bytes,
        .late_horizon = (uint32_t)c->cfg.diag_late_horizon,
        .job_idle_ns = c->cfg.diag_job_idle,
        .window = (uint32_t)c->cfg.diag_window,
        .min_hits = (uint32_t)c->cfg.diag_min_hits,
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
    c->diagnosis = diagnosis_new(c->store, &dopt);
    c->diagq = c->diagnosis ? diagq_new(&qopt, collector_feed_diagnosis, c->diagnosis) : NULL;
    if (c->diagq)
        diagnosis_set_clock(c->diagnosis, collector_diagnosis_clock, c->diagq);
    c->clock = stream_clock_new(&copt);
    return c->diagnosis && c->diagq && c->clock ? 0 : -ENOMEM;
}

static int collector_start_grpc(struct collector *c)
{
    struct ingest_limits limits;
    struct transport_options to = {
        .listen = c->cfg.grpc_listen,
        .workers = (unsigned)c->cfg.grpc_workers,
        .max_message = c->cfg.max_frame * 2 + (1u << 20),
        .keepalive_ms = c->cfg.grpc_keepalive / NSEC_PER_MSEC,
    };

    ingest_default_limits(&limits);
    limits.max_frame = c->cfg.max_frame;
    limits.max_raw = c->cfg.max_raw;
    limits.max_names_per_batch = c->cfg.max_names_per_batch;
    limits.max_names_per_job = c->cfg.max_names_per_job;
    limits.max_ranks = (uint32_t)c->cfg.max_ranks;
    c->ingest = ingest_new(c->store, &limits, c->diagq, c->clock);
    c->transport = transport_new(&to);
    if (!c->ingest || !c->transport)
        return -ENOMEM;
    if (transport_add_stream(c->transport, RPC_INGEST_PUSH, &ingest_stream_ops, c->ingest) < 0 ||
        query_register(c->transport, c->store) < 0)
        return -EINVAL;
    c->port = transport_start(c->transport);
    if (c->port < 0) {
        log_error("main", "cannot listen on grpc.listen %s", c->cfg.grpc_listen);
        return c->port;
    }
    log_info("main", "gRPC listening on %s (port %d)", c->cfg.grpc_listen, c->port);
    return 0;
}

static int collector_start_http(struct collector *c)
{
    char err[256];

    if (!*c->cfg.http_listen)
        return 0;
    c->metrics = (struct collector_metrics_ctx){c->ingest,    c->store, c->transport,
                                                c->diagnosis, c->diagq, c->clock};
    c->http = http_start(c->cfg.http_listen, collector_http_handler, &c->metrics, err, sizeof(err));
    if (!c->http) {
        log_error("main", "http.listen: %s", err);
        return -EADDRINUSE;
    }
    log_info("main", "HTTP /metrics and /healthz on %s (port %d)", c->cfg.http_listen,
             http_port(c->http));
    return 0;
}

/* SIGHUP: load and validate the config again; only log.level applies live. */
static void collector_reload(struct collector *c, int argc, char **argv)
{
    struct collector_config fresh = {0};
    struct config_result res;

    daemon_notify("RELOADING=1");
    if (config_load(&collector_config_table, &fresh, argc, argv, &res) < 0) {
        log_error("main", "reload rejected, keeping the running config: %s", res.error);
    } else {
        log_set_level((enum log_level)fresh.log_level);
        log_info("main", "reloaded: log.level=%s (other keys apply at restart)",
                 log_level_name((enum log_level)fresh.log_level));
    }
    config_free(&collector_config_table, &fresh);
    daemon_notify("READY=1");
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
        diagq_tick(c->diagq, now);
        if (now >= next_clock) {
            stream_clock_tick(c->clock, clock_real_ns());
            next_clock = now + 60 * NSEC_PER_SEC;
        }
        if (now >= next_retention) {
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
    transport_free(c->transport);
    ingest_free(c->ingest);
    diagq_free(c->diagq); /* the worker stops before diagnosis goes */
    diagnosis_free(c->diagnosis);
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
        r = collector_start_diagnosis(&c);
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
