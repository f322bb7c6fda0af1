#include "collector/config.h"

#include <stddef.h>

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    {                                                                                              \
        key, type, offsetof(struct collector_config, field), def, lo, hi, help                     \
    }

static const struct config_option collector_options[] = {
    OPT("log.level", CONFIG_STRING, log_level, "info", 0, 0, "error, warn, info or debug"),
    OPT("grpc.listen", CONFIG_STRING, grpc_listen, "0.0.0.0:7700", 0, 0,
        "gRPC address for agents and argusctl HOST:PORT"),
    OPT("http.listen", CONFIG_STRING, http_listen, "127.0.0.1:7702", 0, 0,
        "/metrics and /healthz address HOST:PORT (empty: off)"),
    OPT("store.dir", CONFIG_STRING, store_dir, "/var/lib/argus/collector", 0, 0,
        "RocksDB data directory"),
};

const struct config_table collector_config_table = {
    .program = "argus-collector",
    .summary = "stores per-step summaries from argus agents, finds stragglers, serves queries",
    .default_path = "/etc/argus/collector.conf",
    .options = collector_options,
    .count = sizeof(collector_options) / sizeof(collector_options[0]),
};
