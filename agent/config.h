/* argus-agent configuration: the struct and its table (common/config.h). */
#ifndef ARGUS_AGENT_CONFIG_H
#define ARGUS_AGENT_CONFIG_H

#include <stdint.h>

#include "common/config.h"

struct agent_config {
    char *log_level;
    char *node_name; /* "" = hostname */
    char *agent_id;  /* "" = node name */
    char *collector_address;
    char *spool_dir;
    uint64_t spool_cap;
    char *http_listen;
};

extern const struct config_table agent_config_table;

#endif
