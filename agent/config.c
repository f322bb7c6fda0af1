#include "agent/config.h"

#include <stddef.h>

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    {                                                                                              \
        key, type, offsetof(struct agent_config, field), def, lo, hi, help                         \
    }

static const struct config_option agent_options[] = {
    OPT("log.level", CONFIG_STRING, log_level, "info", 0, 0, "error, warn, info or debug"),
    OPT("node.name", CONFIG_STRING, node_name, "", 0, 0, "node name in reports (empty: hostname)"),
    OPT("node.agent_id", CONFIG_STRING, agent_id, "", 0, 0,
        "stable agent identity for delivery (empty: node name)"),
    OPT("collector.address", CONFIG_STRING, collector_address, "127.0.0.1:7700", 0, 0,
        "collector gRPC address HOST:PORT"),
    OPT("spool.dir", CONFIG_STRING, spool_dir, "/var/lib/argus/spool", 0, 0,
        "directory of the on-disk spool of unacked batches"),
    OPT("spool.cap", CONFIG_SIZE, spool_cap, "1GiB", 1 << 20, 1e13,
        "hard cap on spool bytes; over it the oldest batches are dropped and counted"),
    OPT("http.listen", CONFIG_STRING, http_listen, "127.0.0.1:7701", 0, 0,
        "/metrics and /healthz address HOST:PORT (empty: off)"),
};

const struct config_table agent_config_table = {
    .program = "argus-agent",
    .summary = "per-node tracing agent: eBPF host probes + CUPTI, per-step summaries to the "
               "collector",
    .default_path = "/etc/argus/agent.conf",
    .options = agent_options,
    .count = sizeof(agent_options) / sizeof(agent_options[0]),
};
