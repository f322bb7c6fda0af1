/* argusctl: query an argus collector. */
#include <stdio.h>
#include <string.h>

#include "common/config.h"

struct ctl_config {
    char *collector;
    bool json;
};

static const struct config_option ctl_options[] = {
    {"collector", CONFIG_STRING, offsetof(struct ctl_config, collector), "127.0.0.1:7700", 0, 0,
     "collector gRPC address HOST:PORT"},
    {"json", CONFIG_BOOL, offsetof(struct ctl_config, json), "false", 0, 0,
     "print JSON instead of tables"},
};

static const struct config_table ctl_table = {
    .program = "argusctl",
    .summary = "query an argus collector",
    .usage = "Usage: argusctl [OPTIONS] COMMAND [ARGS]\n"
             "Commands: jobs, steps, ranks, stragglers, report\n"
             "Exit codes: 0 ok, 1 not found, 2 usage, 3 collector unreachable\n",
    .options = ctl_options,
    .count = sizeof(ctl_options) / sizeof(ctl_options[0]),
    .positional = true,
};

int main(int argc, char **argv)
{
    struct ctl_config cfg = {0};
    struct config_result res;

    if (config_load(&ctl_table, &cfg, argc, argv, &res) < 0) {
        fprintf(stderr, "argusctl: %s\n", res.error);
        config_free(&ctl_table, &cfg);
        return 2;
    }
    if (res.help || res.npositional == 0) {
        config_usage(&ctl_table, res.help ? stdout : stderr);
        config_free(&ctl_table, &cfg);
        return res.help ? 0 : 2;
    }
    fprintf(stderr, "argusctl: unknown command '%s' (see --help)\n", res.positional[0]);
    config_free(&ctl_table, &cfg);
    return 2;
}
