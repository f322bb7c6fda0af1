/* argusctl's collector address: see collector_address.h. */
#include "tools/argusctl/collector_address.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/config_value.h"

struct address_file {
    char *collector;
};

static const struct config_option address_file_options[] = {
    CONFIG_OPTION(struct address_file, "collector", CONFIG_STRING, collector, "", 0, 0,
                  "collector gRPC address HOST:PORT", NULL, config_check_grpc_target, false),
};

static const struct config_table address_file_table = {
    .program = "argusctl",
    .summary = "argusctl.conf",
    .options = address_file_options,
    .count = 1,
};

/* Check text as a gRPC target; err names source. */
static int address_check(const char *text, const char *source, char *err, size_t errlen)
{
    char msg[400];
    char *copy = (char *)text;

    if (config_check_grpc_target(&address_file_options[0], &copy, msg, sizeof(msg)) == 0)
        return 0;
    snprintf(err, errlen, "%s: %s", source, msg);
    return -EINVAL;
}

/* The collector key of the file at path into a. Returns 1 when set, 0 when
 * the file is missing or has no collector key, -EINVAL on a bad file. */
static int address_from_file(const char *path, struct collector_address *a, char *err,
                             size_t errlen)
{
    struct address_file f = {0};
    struct config_result res = {0};
    int r;

    if (!path || !*path || access(path, F_OK) != 0)
        return 0;
    r = config_read_file(&address_file_table, &f, path, &res);
    if (r < 0) {
        snprintf(err, errlen, "%s", config_errors_oneline(&res));
        r = -EINVAL;
    } else if (f.collector && *f.collector) {
        snprintf(a->address, sizeof(a->address), "%s", f.collector);
        snprintf(a->source, sizeof(a->source), "%s", path);
        r = 1; /* checked by the table, with the file and line */
    }
    free(f.collector);
    return r;
}

int collector_address_resolve(const char *flag, const char *env, const char *user_file,
                              const char *system_file, struct collector_address *a, char *err,
                              size_t errlen)
{
    int r;

    memset(a, 0, sizeof(*a));
    if (flag && *flag) {
        snprintf(a->address, sizeof(a->address), "%s", flag);
        snprintf(a->source, sizeof(a->source), "--collector");
        return address_check(flag, "--collector", err, errlen);
    }
    if (env && *env) {
        snprintf(a->address, sizeof(a->address), "%s", env);
        snprintf(a->source, sizeof(a->source), "%s", COLLECTOR_ADDRESS_ENV);
        return address_check(env, COLLECTOR_ADDRESS_ENV, err, errlen);
    }
    r = address_from_file(user_file, a, err, errlen);
    if (r == 0)
        r = address_from_file(system_file, a, err, errlen);
    if (r != 0)
        return r < 0 ? r : 0;
    snprintf(a->address, sizeof(a->address), "%s", COLLECTOR_ADDRESS_DEFAULT);
    snprintf(a->source, sizeof(a->source), "default");
    a->fallback = true;
    return 0;
}

char *collector_address_user_file(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

    if (xdg && *xdg)
        snprintf(buf, len, "%s/argus/argusctl.conf", xdg);
    else if (home && *home)
        snprintf(buf, len, "%s/.config/argus/argusctl.conf", home);
    else
        buf[0] = '\0';
    return buf;
}

const char *collector_address_hint(void)
{
    return "no collector address is set: give --collector HOST:PORT, set " COLLECTOR_ADDRESS_ENV
           "=HOST:PORT, or write 'collector = HOST:PORT' in ~/.config/argus/argusctl.conf or "
           "" COLLECTOR_ADDRESS_SYSTEM_FILE;
}
