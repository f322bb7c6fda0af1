/* argus-collector configuration: the struct and its table (common/config.h). */
#ifndef ARGUS_COLLECTOR_CONFIG_H
#define ARGUS_COLLECTOR_CONFIG_H

#include <stdint.h>

#include "common/config.h"

struct collector_config {
    char *log_level;
    char *grpc_listen;
    char *http_listen;
    char *store_dir;
};

extern const struct config_table collector_config_table;

#endif
