#include "collector/config.h"

#include <stddef.h>

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    {                                                                                              \
        key, type, offsetof(struct collector_config, field), def, lo, hi, help, NULL               \
    }
#define OPT_ENUM(key, field, def, names, help)                                                     \
    {                                                                                              \
        key, CONFIG_ENUM, offsetof(struct collector_config, field), def, 0, 0, help, names         \
    }

static const struct config_option collector_options[] = {
    OPT_ENUM("log.level", log_level, "info", config_log_levels, "error, warn, info or debug"),
    OPT("grpc.listen", CONFIG_STRING, grpc_listen, "0.0.0.0:7700", 0, 0,
        "gRPC address for agents and argusctl HOST:PORT"),
    OPT("grpc.workers", CONFIG_UINT, grpc_workers, "2", 1, 64,
        "gRPC worker threads (one completion queue each)"),
    OPT("grpc.keepalive", CONFIG_DURATION, grpc_keepalive, "30s", 1, 3600,
        "keepalive ping interval; agents use the same"),
    OPT("http.listen", CONFIG_STRING, http_listen, "127.0.0.1:7702", 0, 0,
        "/metrics and /healthz address HOST:PORT (empty: off)"),
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
    OPT("ingest.max_frame", CONFIG_SIZE, max_frame, "4MiB", 4096, 256.0 * 1048576,
        "largest frame accepted from an agent"),
    OPT("ingest.max_raw", CONFIG_SIZE, max_raw, "32MiB", 4096, 1024.0 * 1048576,
        "largest decoded batch accepted"),
    OPT("ingest.max_names_per_batch", CONFIG_UINT, max_names_per_batch, "65536", 1, 1e7,
        "dictionary entries one batch may carry"),
    OPT("ingest.max_names_per_job", CONFIG_UINT, max_names_per_job, "1000000", 1, 1e8,
        "distinct names one job may define"),
    OPT("ingest.max_ranks", CONFIG_UINT, max_ranks, "1048576", 1, 1e8,
        "ranks and world size must be below this"),
    OPT("ingest.clock_skew_warn", CONFIG_DURATION, clock_skew_warn, "2s", 0.001, 86400 * 365.0,
        "flag (log once, count) an agent whose clock is off the collector's by more than this"),
    OPT("ingest.clock_window", CONFIG_DURATION, clock_window, "2m", 1, 3600,
        "window of the per-agent clock offset estimate (least-delayed batch in it)"),
    OPT("diag.step_timeout", CONFIG_DURATION, diag_step_timeout, "10s", 0.01, 3600,
        "a step closes this long after its first record even if live ranks are missing"),
    OPT("diag.stream_hold", CONFIG_DURATION, diag_stream_hold, "10s", 0.01, 3600,
        "a rank whose stream made no progress for this long stops holding the job's watermark"),
    OPT("diag.silence", CONFIG_DURATION, diag_silence, "30s", 0.01, 86400,
        "a rank (or a whole agent: one node finding) is silent after this long without records "
        "while the job goes on"),
    OPT("diag.max_open_bytes", CONFIG_SIZE, diag_max_open_bytes, "256MiB", 1048576,
        1024.0 * 1073741824, "memory of one job's open and kept steps; over it the oldest closes"),
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
        "a suspect pages after being flagged in M of the last N steps"),
    OPT("diag.queue_bytes", CONFIG_SIZE, diag_queue_bytes, "256MiB", 1048576, 64.0 * 1073741824,
        "memory of stored batches waiting for diagnosis; over it they are stored, acked and "
        "not diagnosed (counted)"),
    OPT("diag.lag_warn", CONFIG_DURATION, diag_lag_warn, "30s", 0.1, 86400,
        "log once when diagnosis of a job falls this far behind what was received"),
};

const struct config_table collector_config_table = {
    .program = "argus-collector",
    .summary = "stores per-step summaries from argus agents, finds stragglers, serves queries",
    .default_path = "/etc/argus/collector.conf",
    .options = collector_options,
    .count = sizeof(collector_options) / sizeof(collector_options[0]),
};
