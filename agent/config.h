/* argus-agent configuration: the struct and its table (common/config.h). */
#ifndef ARGUS_AGENT_CONFIG_H
#define ARGUS_AGENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"

/* discovery.netns: which network namespaces' processes discovery looks at. */
enum agent_netns { AGENT_NETNS_ANY, AGENT_NETNS_OWN };

struct agent_config {
    int log_level;   /* enum log_level */
    char *node_name; /* "" = hostname */
    char *agent_id;  /* "" = node name */
    char *collector_address;
    char *collector_set, *collector_dns; /* a collector set (common/collector_set.h), or "" */
    uint64_t collector_dns_interval, collector_standby_wait;
    uint64_t collector_keepalive;
    bool grpc_plaintext;
    char *tls_ca, *tls_cert, *tls_key;
    uint64_t collector_backoff_min, collector_backoff_max;
    char *spool_dir;
    uint64_t spool_cap, spool_segment;
    int spool_fsync; /* enum spool_fsync */
    uint64_t spool_fsync_interval;
    uint64_t batch_max_steps, batch_max_bytes, batch_max_age;
    uint64_t spans_ring_bytes, spans_keep, spans_capture_max;
    uint64_t status_after, status_interval; /* agent/liveness/ */
    char *http_listen;
    char *discovery_job_vars, *discovery_deny, *discovery_watch;
    uint64_t discovery_scan_interval;
    int discovery_netns; /* enum agent_netns */
    char *replay_trace, *replay_job, *replay_records;
    uint64_t replay_ranks, replay_rank_base, replay_world, replay_steps;
    double replay_rate, replay_stretch;
    char *probes;
    uint64_t stacks_hz, stacks_cache;
    bool cupti_enable;
    char *cupti_socket;
    char *cupti_socket_group;
    int cupti_sample_mode; /* enum cupti_sample_mode */
    uint64_t cupti_sample_k, cupti_sample_n;
    bool hw_nvml, hw_nics; /* agent/hw/ */
    char *hw_nvml_lib, *hw_nic_list;
    uint64_t hw_interval;
};

extern const struct config_table agent_config_table;

#endif
