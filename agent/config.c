#include "agent/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "common/collector_set.h"
#include "common/config_value.h"
#include "common/tls.h"

#include "agent/agent_sources.h"
#include "agent/cupti/ring.h"
#include "agent/discovery/discovery.h"
#include "agent/delivery/spool.h"

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    CONFIG_OPTION(struct agent_config, key, type, field, def, lo, hi, help, NULL, NULL, false)
#define OPT_ENUM(key, field, def, names, help)                                                     \
    CONFIG_OPTION(struct agent_config, key, CONFIG_ENUM, field, def, 0, 0, help, names, NULL, false)

/* An option with a check (config_check_fn); options a reload applies. */
#define OPT_CHECK(key, type, field, def, help, fn)                                                 \
    CONFIG_OPTION(struct agent_config, key, type, field, def, 0, 0, help, NULL, fn, false)
#define OPT_LIVE(key, type, field, def, lo, hi, help)                                              \
    CONFIG_OPTION(struct agent_config, key, type, field, def, lo, hi, help, NULL, NULL, true)
#define OPT_ENUM_LIVE(key, field, def, names, help)                                                \
    CONFIG_OPTION(struct agent_config, key, CONFIG_ENUM, field, def, 0, 0, help, names, NULL, true)

/* probes.enable: the names of agent_sources.c's probe table. */
static int agent_check_probes(const struct config_option *o, const void *field, char *err,
                              size_t errlen)
{
    return config_check_list(o, *(char *const *)field, agent_sources_probe_names(), err, errlen);
}

/* discovery.deny and discovery.watch: what discovery can hold. */
static int agent_check_comms(const struct config_option *o, const void *field, char *err,
                             size_t errlen)
{
    char slots[DISCOVERY_DENY_MAX][DISCOVERY_COMM_MAX];
    size_t n;

    if (environ_split_list(*(char *const *)field, &slots[0][0], DISCOVERY_COMM_MAX,
                           DISCOVERY_DENY_MAX, &n) == 0)
        return 0;
    snprintf(err, errlen, "%s: at most %d names of at most %d characters each", o->key,
             DISCOVERY_DENY_MAX, DISCOVERY_COMM_MAX - 1);
    return -EINVAL;
}

/* discovery.job_vars: what the environment parser can hold. */
static int agent_check_job_vars(const struct config_option *o, const void *field, char *err,
                                size_t errlen)
{
    struct discovery_options d = {.job_vars = *(char *const *)field};
    struct environ_config c;

    if (environ_config_init(&c, &d) == 0)
        return 0;
    snprintf(err, errlen, "%s: at most %d variable names of at most %d characters each", o->key,
             DISCOVERY_VARS_MAX, DISCOVERY_VAR_NAME_MAX - 1);
    return -EINVAL;
}

static const struct config_name discovery_netns_names[] = {
    {"any", AGENT_NETNS_ANY},
    {"own", AGENT_NETNS_OWN},
    {NULL, 0},
};

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
    OPT_ENUM_LIVE("log.level", log_level, "info", config_log_levels, "error, warn, info or debug"),
    OPT("node.name", CONFIG_STRING, node_name, "", 0, 0, "node name in reports (empty: hostname)"),
    OPT("node.agent_id", CONFIG_STRING, agent_id, "", 0, 0,
        "stable agent identity for delivery (empty: node name)"),
    OPT_CHECK("collector.address", CONFIG_STRING, collector_address, "127.0.0.1:7700",
              "collector gRPC address HOST:PORT", config_check_grpc_target),
    OPT_CHECK("collector.set", CONFIG_STRING, collector_set, "",
              "collector set HOST:PORT,HOST:PORT,...: each job's batches go to its primary and "
              "standby there (empty: collector.address alone)",
              collector_set_check_list_option),
    OPT_CHECK("collector.dns", CONFIG_STRING, collector_dns, "",
              "collector set as a DNS name NAME:PORT (a headless Service), resolved again every "
              "collector.dns_interval (empty: collector.set or collector.address)",
              collector_set_check_dns_option),
    OPT("collector.dns_interval", CONFIG_DURATION, collector_dns_interval, "30s", 1, 86400,
        "how often collector.dns is resolved again"),
    OPT("collector.standby_wait", CONFIG_DURATION, collector_standby_wait, "60s", 0.001, 86400,
        "a collector that acks nothing this long is behind: the agent no longer waits for it "
        "(its batches are kept for it up to spool.cap)"),
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
        "segment file size (at most spool.cap / 4)"),
    OPT_ENUM("spool.fsync", spool_fsync, "interval", spool_fsync_names,
             "interval, segment or always"),
    OPT("spool.fsync_interval", CONFIG_DURATION, spool_fsync_interval, "1s", 0.001, 3600,
        "fsync period under spool.fsync = interval"),
    OPT("batch.max_steps", CONFIG_UINT, batch_max_steps, "512", 1, 65536, "step records per batch"),
    OPT("batch.max_bytes", CONFIG_SIZE, batch_max_bytes, "2MiB", 4096, 16.0 * 1048576,
        "packed step bytes per batch (keep under the collector's ingest.max_raw)"),
    OPT("batch.max_age", CONFIG_DURATION, batch_max_age, "1s", 0.001, 600,
        "seal a batch when its oldest step is this old"),
    OPT("spans.ring_bytes", CONFIG_SIZE, spans_ring_bytes, "32MiB", 0, 1e11,
        "raw spans kept for drill-down captures, all ranks together (LZ4; 0: off)"),
    OPT("spans.keep", CONFIG_DURATION, spans_keep, "5m", 1, 86400,
        "age of the oldest raw span kept (the oldest chunks go first)"),
    OPT("spans.capture_max", CONFIG_UINT, spans_capture_max, "100000", 1, 1e6,
        "raw spans per captured window sent to the collector (the earliest first)"),
    OPT("status.after", CONFIG_DURATION, status_after, "5s", 1, 3600,
        "a rank with no collective entered or finished and no step this long gets a status "
        "(state, syscall, CPU, where it stands in each communicator) sent to the collector"),
    OPT("status.interval", CONFIG_DURATION, status_interval, "5s", 1, 3600,
        "then one every this long while it makes no progress"),
    OPT_CHECK("http.listen", CONFIG_STRING, http_listen, "0.0.0.0:7701",
              "/metrics and /healthz address HOST:PORT: every interface, for Prometheus on "
              "another host to scrape (127.0.0.1:7701: this host only; empty: off)",
              config_check_http_listen),
    OPT_CHECK("discovery.job_vars", CONFIG_STRING, discovery_job_vars, DISCOVERY_DEFAULT_JOB_VARS,
              "environment variables naming the job; the first one set wins", agent_check_job_vars),
    OPT_CHECK("discovery.deny", CONFIG_STRING, discovery_deny, DISCOVERY_DEFAULT_DENY,
              "comm or exe names never counted as ranks", agent_check_comms),
    OPT_CHECK("discovery.watch", CONFIG_STRING, discovery_watch, DISCOVERY_DEFAULT_WATCH,
              "comm or exe name prefixes whose processes, without a rank variable at exec, get "
              "their rank from the communicator they create (collectives probe; processes in a "
              "job always do; empty: only those)",
              agent_check_comms),
    OPT("discovery.scan_interval", CONFIG_DURATION, discovery_scan_interval, "5s", 0.01, 3600,
        "full /proc rescan period"),
    OPT_ENUM("discovery.netns", discovery_netns, "any", discovery_netns_names,
             "any: processes of every network namespace; own: only those in the agent's (a node "
             "that is one network namespace of a shared host)"),
    OPT_CHECK("probes.enable", CONFIG_STRING, probes,
              "proc,sched,collectives,sync,marker,net,io,stacks",
              "eBPF probes to run: proc, sched, collectives, sync, marker, net, io, stacks "
              "(comma-separated; empty: none); one the kernel cannot run is skipped and logged",
              agent_check_probes),
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
    OPT_ENUM_LIVE(
        "cupti.sample_mode", cupti_sample_mode, "always", cupti_sample_names,
        "kernel tracing: always, steps (k of every n steps) or time (k ms of every n ms)"),
    OPT_LIVE("cupti.sample_k", CONFIG_UINT, cupti_sample_k, "1", 1, 1e9,
             "k of the duty cycle (at most n; 1 under always)"),
    OPT_LIVE("cupti.sample_n", CONFIG_UINT, cupti_sample_n, "1", 1, 1e9,
             "n of the duty cycle (1 under always)"),
    OPT("hw.nvml", CONFIG_BOOL, hw_nvml, "true", 0, 0,
        "read each rank's GPU through NVML (throttle reasons, clocks, XID, ECC, PCIe, NVLink) "
        "into its step records; no driver: none"),
    OPT("hw.nvml_lib", CONFIG_STRING, hw_nvml_lib, "libnvidia-ml.so.1", 0, 0,
        "the NVML library dlopen'ed (a name or a path)"),
    OPT("hw.nics", CONFIG_BOOL, hw_nics, "true", 0, 0,
        "read the node's NIC error, drop and carrier counters (sysfs, root qdiscs, InfiniBand "
        "ports) into its ranks' step records"),
    OPT("hw.nic_list", CONFIG_STRING, hw_nic_list, "", 0, 0,
        "NICs read, comma-separated (an InfiniBand port as DEV/PORT; empty: every one but lo)"),
    OPT("hw.interval", CONFIG_DURATION, hw_interval, "1s", 0.01, 60,
        "between two hardware samples (a step's clocks and reasons are its samples')"),
    OPT("replay.trace", CONFIG_STRING, replay_trace, "", 0, 0,
        "play this Kineto trace as local ranks (testing without a GPU; empty: off)"),
    OPT("replay.records", CONFIG_STRING, replay_records, "", 0, 0,
        "play this recorded step-records file (argus-sim --record) at replay.rate, its ranks "
        "ending cleanly after their last record (empty: off)"),
    OPT("replay.job", CONFIG_STRING, replay_job, "replay", 0, 0, "job id of replayed ranks"),
    OPT("replay.ranks", CONFIG_UINT, replay_ranks, "1", 1, 4096, "replayed ranks"),
    OPT("replay.rank_base", CONFIG_UINT, replay_rank_base, "0", 0, 1e7,
        "global rank of the first replayed rank"),
    OPT("replay.world", CONFIG_UINT, replay_world, "0", 0, 1e7,
        "world size of the replayed job (0: rank_base + ranks)"),
    OPT("replay.rate", CONFIG_DOUBLE, replay_rate, "10", 0.001, 100000,
        "replayed steps per second per rank"),
    OPT("replay.stretch", CONFIG_DOUBLE, replay_stretch, "1", 0.01, 100,
        "factor on replayed kernel durations and offsets, at the same step rate (a slowed rank)"),
    OPT("replay.steps", CONFIG_UINT, replay_steps, "0", 0, 0,
        "steps per replayed rank, then they end cleanly (0: forever)"),
};

/* Rules between keys: what the agent would otherwise clamp or ignore. Each
 * message starts with where the first key was set. */
static int agent_check(const void *cfg, struct config_result *res)
{
    const struct agent_config *c = cfg;
    const struct config_table *t = &agent_config_table;
    int n = res->nerrors;
    char w[300];

#define WHERE(key) config_where(t, res, key, w, sizeof(w))
    if (c->cupti_sample_k > c->cupti_sample_n)
        config_error(res, "%s: cupti.sample_k = %llu is above cupti.sample_n = %llu: k of every n",
                     WHERE("cupti.sample_k"), (unsigned long long)c->cupti_sample_k,
                     (unsigned long long)c->cupti_sample_n);
    if (c->cupti_sample_mode == CUPTI_SAMPLE_ALWAYS &&
        (c->cupti_sample_k != 1 || c->cupti_sample_n != 1))
        config_error(res,
                     "%s: cupti.sample_k/sample_n = %llu/%llu would be ignored under "
                     "cupti.sample_mode = always (set sample_mode to steps or time, or k and n "
                     "to 1)",
                     WHERE(c->cupti_sample_k != 1 ? "cupti.sample_k" : "cupti.sample_n"),
                     (unsigned long long)c->cupti_sample_k, (unsigned long long)c->cupti_sample_n);
    if (c->spool_segment > c->spool_cap / 4)
        config_error(res,
                     "%s: spool.segment = %llu bytes is above spool.cap / 4 = %llu bytes (the "
                     "spool would shrink it): lower spool.segment or raise spool.cap",
                     WHERE("spool.segment"), (unsigned long long)c->spool_segment,
                     (unsigned long long)(c->spool_cap / 4));
    if (c->collector_backoff_min > c->collector_backoff_max)
        config_error(res,
                     "%s: collector.backoff_min = %llums is above collector.backoff_max = %llums "
                     "(the cap would never apply)",
                     WHERE("collector.backoff_min"),
                     (unsigned long long)(c->collector_backoff_min / 1000000),
                     (unsigned long long)(c->collector_backoff_max / 1000000));
    if (c->collector_set[0] && c->collector_dns[0])
        config_error(res,
                     "%s: collector.set and collector.dns are both set: give the collectors one "
                     "way",
                     WHERE("collector.set"));
    if (c->replay_world && c->replay_world < c->replay_rank_base + c->replay_ranks)
        config_error(res,
                     "%s: replay.world = %llu is below replay.rank_base + replay.ranks = %llu "
                     "(ranks outside the world; 0: computed)",
                     WHERE("replay.world"), (unsigned long long)c->replay_world,
                     (unsigned long long)(c->replay_rank_base + c->replay_ranks));
#undef WHERE
    tls_config_check(c->grpc_plaintext, c->tls_ca, c->tls_cert, c->tls_key, res);
    return res->nerrors - n;
}

const struct config_table agent_config_table = {
    .program = "argus-agent",
    .summary = "per-node tracing agent: eBPF host probes + CUPTI, per-step summaries to the "
               "collector",
    .default_path = "/etc/argus/agent.conf",
    .options = agent_options,
    .count = sizeof(agent_options) / sizeof(agent_options[0]),
    .check = agent_check,
    .man_section = "8",
};
