#include "agent/config.h"

#include <stddef.h>

#include "agent/cupti/ring.h"
#include "agent/discovery/discovery.h"
#include "agent/delivery/spool.h"

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    {                                                                                              \
        key, type, offsetof(struct agent_config, field), def, lo, hi, help, NULL                   \
    }
#define OPT_ENUM(key, field, def, names, help)                                                     \
    {                                                                                              \
        key, CONFIG_ENUM, offsetof(struct agent_config, field), def, 0, 0, help, names             \
    }

static const struct config_name spool_fsync_names[] = {
    {"interval", SPOOL_FSYNC_INTERVAL},
    {"segment", SPOOL_FSYNC_SEGMENT},
    {"always", SPOOL_FSYNC_ALWAYS},
    {NULL, 0},
};

static const struct config_name cupti_sample_names[] = {
    {"always", CUPTI_SAMPLE_ALWAYS},
    {"steps", CUPTI_SAMPLE_STEPS},
    {"time", CUPTI_SAMPLE_TIME},
    {NULL, 0},
};

static const struct config_option agent_options[] = {
    OPT_ENUM("log.level", log_level, "info", config_log_levels, "error, warn, info or debug"),
    OPT("node.name", CONFIG_STRING, node_name, "", 0, 0, "node name in reports (empty: hostname)"),
    OPT("node.agent_id", CONFIG_STRING, agent_id, "", 0, 0,
        "stable agent identity for delivery (empty: node name)"),
    OPT("collector.address", CONFIG_STRING, collector_address, "127.0.0.1:7700", 0, 0,
        "collector gRPC address HOST:PORT"),
    OPT("collector.keepalive", CONFIG_DURATION, collector_keepalive, "30s", 1, 3600,
        "keepalive ping interval; match the collector's grpc.keepalive"),
    OPT("grpc.plaintext", CONFIG_BOOL, grpc_plaintext, "false", 0, 0,
        "talk to the collector without TLS (warned at start); else tls.* must be set"),
    OPT("tls.ca", CONFIG_STRING, tls_ca, "", 0, 0,
        "CA bundle (PEM) the collector's certificate must chain to"),
    OPT("tls.cert", CONFIG_STRING, tls_cert, "", 0, 0,
        "this agent's certificate (PEM, OU=agent; its DNS name or CN must be node.name); read at "
        "start"),
    OPT("tls.key", CONFIG_STRING, tls_key, "", 0, 0, "private key (PEM) of tls.cert"),
    OPT("collector.backoff_min", CONFIG_DURATION, collector_backoff_min, "200ms", 0.001, 60,
        "first reconnect delay"),
    OPT("collector.backoff_max", CONFIG_DURATION, collector_backoff_max, "10s", 0.01, 600,
        "longest reconnect delay (exponential backoff with jitter)"),
    OPT("spool.dir", CONFIG_STRING, spool_dir, "/var/lib/argus/spool", 0, 0,
        "directory of the on-disk spool of unacked batches"),
    OPT("spool.cap", CONFIG_SIZE, spool_cap, "1GiB", 65536, 1e13,
        "hard cap on spool bytes; over it the oldest batches are dropped and counted"),
    OPT("spool.segment", CONFIG_SIZE, spool_segment, "16MiB", 4096, 1e10,
        "segment file size (at most cap / 4)"),
    OPT_ENUM("spool.fsync", spool_fsync, "interval", spool_fsync_names,
             "interval, segment or always"),
    OPT("spool.fsync_interval", CONFIG_DURATION, spool_fsync_interval, "1s", 0.001, 3600,
        "fsync period under spool.fsync = interval"),
    OPT("batch.max_steps", CONFIG_UINT, batch_max_steps, "512", 1, 65536, "step records per batch"),
    OPT("batch.max_bytes", CONFIG_SIZE, batch_max_bytes, "2MiB", 4096, 16.0 * 1048576,
        "packed step bytes per batch (keep under the collector's ingest.max_raw)"),
    OPT("batch.max_age", CONFIG_DURATION, batch_max_age, "1s", 0.001, 600,
        "seal a batch when its oldest step is this old"),
    OPT("http.listen", CONFIG_STRING, http_listen, "127.0.0.1:7701", 0, 0,
        "/metrics and /healthz address HOST:PORT (empty: off)"),
    OPT("discovery.job_vars", CONFIG_STRING, discovery_job_vars, DISCOVERY_DEFAULT_JOB_VARS, 0, 0,
        "environment variables naming the job; the first one set wins"),
    OPT("discovery.deny", CONFIG_STRING, discovery_deny, DISCOVERY_DEFAULT_DENY, 0, 0,
        "comm or exe names never counted as ranks"),
    OPT("discovery.watch", CONFIG_STRING, discovery_watch, DISCOVERY_DEFAULT_WATCH, 0, 0,
        "comm or exe name prefixes whose processes, without a rank variable at exec, get their "
        "rank from the communicator they create (collectives probe; processes in a job always "
        "do; empty: only those)"),
    OPT("discovery.scan_interval", CONFIG_DURATION, discovery_scan_interval, "5s", 0.01, 3600,
        "full /proc rescan period"),
    OPT("probes.enable", CONFIG_STRING, probes, "proc,sched,collectives,sync,marker,net,io,stacks",
        0, 0, "eBPF probes to run (comma-separated; empty: none); one that cannot run is skipped"),
    OPT("probes.stacks_hz", CONFIG_UINT, stacks_hz, "19", 1, 99, "CPU stack sampling rate"),
    OPT("probes.stacks_cache", CONFIG_SIZE, stacks_cache, "256MiB", 1048576, 1e12,
        "symbol tables the stacks probe keeps in memory (least recently used files go first)"),
    OPT("cupti.enable", CONFIG_BOOL, cupti_enable, "true", 0, 0,
        "accept CUPTI rings from libargus-cupti.so in training processes"),
    OPT("cupti.socket", CONFIG_STRING, cupti_socket, "/run/argus/cupti.sock", 0, 0,
        "unix socket the injection library says hello on (ARGUS_AGENT_SOCKET in the job)"),
    OPT("cupti.socket_group", CONFIG_STRING, cupti_socket_group, "", 0, 0,
        "group of the socket (mode 0660: the agent and this group; name or gid; empty: the "
        "agent's group); training users must be in it"),
    OPT_ENUM("cupti.sample_mode", cupti_sample_mode, "always", cupti_sample_names,
             "kernel tracing: always, steps (k of every n steps) or time (k ms of every n ms)"),
    OPT("cupti.sample_k", CONFIG_UINT, cupti_sample_k, "1", 1, 1e9, "k of the duty cycle"),
    OPT("cupti.sample_n", CONFIG_UINT, cupti_sample_n, "1", 1, 1e9, "n of the duty cycle"),
    OPT("replay.trace", CONFIG_STRING, replay_trace, "", 0, 0,
        "play this Kineto trace as local ranks (testing without a GPU; empty: off)"),
    OPT("replay.records", CONFIG_STRING, replay_records, "", 0, 0,
        "play this recorded step-records file (argus-sim --record) at replay.rate (empty: off)"),
    OPT("replay.job", CONFIG_STRING, replay_job, "replay", 0, 0, "job id of replayed ranks"),
    OPT("replay.ranks", CONFIG_UINT, replay_ranks, "1", 1, 4096, "replayed ranks"),
    OPT("replay.rank_base", CONFIG_UINT, replay_rank_base, "0", 0, 1e7,
        "global rank of the first replayed rank"),
    OPT("replay.world", CONFIG_UINT, replay_world, "0", 0, 1e7,
        "world size of the replayed job (0: rank_base + ranks)"),
    OPT("replay.rate", CONFIG_DOUBLE, replay_rate, "10", 0.001, 100000,
        "replayed steps per second per rank"),
    OPT("replay.steps", CONFIG_UINT, replay_steps, "0", 0, 0,
        "steps per replayed rank (0: forever)"),
};

const struct config_table agent_config_table = {
    .program = "argus-agent",
    .summary = "per-node tracing agent: eBPF host probes + CUPTI, per-step summaries to the "
               "collector",
    .default_path = "/etc/argus/agent.conf",
    .options = agent_options,
    .count = sizeof(agent_options) / sizeof(agent_options[0]),
};
