/* argus-collector configuration: the struct and its table (common/config.h). */
#ifndef ARGUS_COLLECTOR_CONFIG_H
#define ARGUS_COLLECTOR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"

struct collector_config {
    int log_level; /* enum log_level */
    char *grpc_listen;
    uint64_t grpc_workers;
    uint64_t grpc_keepalive; /* ns */
    uint64_t grpc_max_calls_per_peer;
    bool grpc_plaintext;
    char *tls_ca, *tls_cert, *tls_key;
    uint64_t max_seq_jump;
    char *http_listen;
    char *http_public_url; /* the web pages as people reach them ("": unknown) */
    char *store_dir;
    bool store_sync;
    bool store_wal_compression;
    uint64_t steps_retention; /* ns, 0 = forever */
    uint64_t reports_retention;
    uint64_t retention_interval;
    uint64_t store_memtable;   /* bytes: the steps family's write buffer */
    uint64_t store_reserve;    /* bytes of headroom kept in store.dir, 0 = none */
    uint64_t store_high_water; /* percent of the disk used that runs retention early, 0 = off */
    uint64_t max_frame;        /* bytes */
    uint64_t max_raw;
    uint64_t max_names_per_batch;
    uint64_t limits_max_jobs, limits_max_ranks_per_job;
    uint64_t limits_max_names_per_job, limits_max_names_total;
    uint64_t limits_max_step, limits_max_step_jump;
    uint64_t limits_max_jobs_per_batch;
    uint64_t limits_job_memory; /* bytes */
    uint64_t diag_step_timeout;
    uint64_t diag_job_idle;    /* ns */
    uint64_t diag_stream_hold; /* ns */
    uint64_t diag_silence;     /* ns */
    uint64_t diag_hang_after;  /* ns */
    uint64_t diag_max_open_bytes;
    uint64_t diag_max_bytes;
    uint64_t diag_late_horizon;
    uint64_t diag_window, diag_min_hits;
    uint64_t diag_queue_bytes;
    uint64_t diag_lag_warn;         /* ns */
    uint64_t clock_skew_warn;       /* ns */
    uint64_t clock_window;          /* ns */
    char *remote_write_url;         /* "": remote write off */
    uint64_t remote_write_interval; /* ns */
    uint64_t remote_write_timeout;  /* ns */
    uint64_t remote_write_queue_bytes;
    char *remote_write_bearer_token_file;
    char *remote_write_replica; /* "": no replica label */
    /* The collector set this collector is a member of (collector/membership.h). */
    char *cluster_set, *cluster_dns, *cluster_self;
    uint64_t cluster_dns_interval; /* ns */
    /* One key alerts.NAME per alert sink (collector/alerts/sinks/sinks.h):
     * its comma-separated targets. */
    char *alerts_alertmanager, *alerts_webhook, *alerts_exec;
    char *alerts_webhook_token_file;
    char *alerts_report_url;
    uint64_t alerts_exec_timeout, alerts_http_timeout, alerts_resend, alerts_backoff_max; /* ns */
    uint64_t alerts_resolve_after, alerts_rate_limit;
    /* Fleet memory (collector/fleet/fleet.h). */
    uint64_t fleet_window, fleet_refresh; /* ns */
    uint64_t fleet_suspect_jobs;
    /* What the collector does to blamed nodes (collector/actions/actions.h). */
    char *actions_rules;
    bool actions_dry_run;
    uint64_t actions_max;
    uint64_t actions_window, actions_timeout; /* ns */
};

extern const struct config_table collector_config_table;

/* The value of the string key (an option of the table) in c, or NULL when
 * the table has no such string key. Valid while c is. */
const char *collector_config_string(const struct collector_config *c, const char *key);

/* The alerts' report link template: alerts.report_url, else
 * http.public_url + "/report/{id}", else "" (malloc'd: the caller frees;
 * NULL when out of memory). */
char *collector_report_url(const struct collector_config *c);

#endif
