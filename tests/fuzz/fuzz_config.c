/* libFuzzer target: the config file parser (common/config.c) with both
 * daemons' tables: arbitrary file contents must load or fail with an error
 * sentence, never crash or leak. */
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "collector/config.h"
#include "common/config.h"
#include "fuzz_util.h"

static void load(const struct config_table *t, void *cfg, const char *path)
{
    char *argv[] = {"fuzz", "--config", (char *)path, NULL};
    struct config_result res;

    memset(&res, 0, sizeof(res));
    if (config_load(t, cfg, 3, argv, &res) < 0 && !res.error[0])
        abort(); /* a refusal always says why */
    config_free(t, cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct agent_config a;
    struct collector_config c;
    char path[512];

    fuzz_write("fuzz.conf", data, size, path, sizeof(path));
    memset(&a, 0, sizeof(a));
    load(&agent_config_table, &a, path);
    memset(&c, 0, sizeof(c));
    load(&collector_config_table, &c, path);
    return 0;
}
