/* argusctl's collector address: see collector_address.h. */
#include "tools/argusctl/collector_address.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/collector_set.h"
#include "common/config.h"
#include "common/config_value.h"

struct address_file {
    char *collector, *collectors, *collectors_dns;
};

static const struct config_option address_file_options[] = {
    CONFIG_OPTION(struct address_file, "collector", CONFIG_STRING, collector, "", 0, 0,
                  "collector gRPC address HOST:PORT", NULL, config_check_grpc_target, false),
    CONFIG_OPTION(struct address_file, "collectors", CONFIG_STRING, collectors, "", 0, 0,
                  "collector set HOST:PORT,HOST:PORT,...", NULL, collector_set_check_list_option,
                  false),
    CONFIG_OPTION(struct address_file, "collectors_dns", CONFIG_STRING, collectors_dns, "", 0, 0,
                  "collector set from DNS NAME:PORT", NULL, collector_set_check_dns_option, false),
};

static const struct config_table address_file_table = {
    .program = "argusctl",
    .summary = "argusctl.conf",
    .options = address_file_options,
    .count = sizeof(address_file_options) / sizeof(address_file_options[0]),
};

/* Check text as the file key row would (0 collector, 1 collectors, 2
 * collectors_dns) and keep it in a; err names source. */
static int address_take(int row, const char *text, const char *source, struct collector_address *a,
                        char *err, size_t errlen)
{
    const struct config_option *o = &address_file_options[row];
    char *copy = (char *)text, msg[400];
    char *dst[] = {a->address, a->list, a->dns};
    size_t len[] = {sizeof(a->address), sizeof(a->list), sizeof(a->dns)};

    snprintf(a->source, sizeof(a->source), "%s", source);
    if (strlen(text) >= len[row]) {
        snprintf(err, errlen, "%s: %s: longer than %zu bytes", source, o->key, len[row] - 1);
        return -EINVAL;
    }
    if (o->check(o, &copy, msg, sizeof(msg)) < 0) {
        snprintf(err, errlen, "%s: %s", source, msg);
        return -EINVAL;
    }
    snprintf(dst[row], len[row], "%s", text);
    return 0;
}

/* The keys of the file at path into a. Returns 1 when one is set, 0 when
 * the file is missing or sets none, -EINVAL on a bad file. */
static int address_from_file(const char *path, struct collector_address *a, char *err,
                             size_t errlen)
{
    struct address_file f = {0};
    struct config_result res = {0};
    const char *v[3];
    int r, given = 0, row = 0;

    if (!path || !*path || access(path, F_OK) != 0)
        return 0;
    r = config_read_file(&address_file_table, &f, path, &res);
    v[0] = f.collector, v[1] = f.collectors, v[2] = f.collectors_dns;
    for (int i = 0; r >= 0 && i < 3; i++)
        if (v[i] && *v[i])
            given++, row = i;
    if (r < 0) {
        snprintf(err, errlen, "%s", config_errors_oneline(&res));
        r = -EINVAL;
    } else if (given > 1) {
        snprintf(err, errlen, "%s: set one of collector, collectors and collectors_dns", path);
        r = -EINVAL;
    } else if (given == 1) {
        r = address_take(row, v[row], path, a, err, errlen) < 0 ? -EINVAL : 1;
    }
    free(f.collector);
    free(f.collectors);
    free(f.collectors_dns);
    return r;
}

/* The flags: 1 when one applies, 0 when none, -EINVAL. */
static int address_from_flags(const struct collector_address_sources *in,
                              struct collector_address *a, char *err, size_t errlen)
{
    bool list = in->flag_list && *in->flag_list, dns = in->flag_dns && *in->flag_dns;

    if (in->flag && *in->flag)
        return address_take(0, in->flag, "--collector", a, err, errlen) < 0 ? -EINVAL : 1;
    if (list && dns) {
        snprintf(err, errlen, "give --collectors or --collectors-dns, not both");
        return -EINVAL;
    }
    if (list || dns)
        return address_take(list ? 1 : 2, list ? in->flag_list : in->flag_dns,
                            list ? "--collectors" : "--collectors-dns", a, err, errlen) < 0
                   ? -EINVAL
                   : 1;
    return 0;
}

/* The environment: 1 when a variable applies, 0 when none, -EINVAL. */
static int address_from_env(const struct collector_address_sources *in, struct collector_address *a,
                            char *err, size_t errlen)
{
    const char *set = in->env_set;

    if (in->env && *in->env)
        return address_take(0, in->env, COLLECTOR_ADDRESS_ENV, a, err, errlen) < 0 ? -EINVAL : 1;
    if (!set || !*set)
        return 0;
    if (strncmp(set, "dns:", 4) == 0)
        return address_take(2, set + 4, COLLECTOR_ADDRESS_SET_ENV, a, err, errlen) < 0 ? -EINVAL
                                                                                       : 1;
    return address_take(1, set, COLLECTOR_ADDRESS_SET_ENV, a, err, errlen) < 0 ? -EINVAL : 1;
}

int collector_address_find(const struct collector_address_sources *in, struct collector_address *a,
                           char *err, size_t errlen)
{
    int r;

    memset(a, 0, sizeof(*a));
    r = address_from_flags(in, a, err, errlen);
    if (r == 0)
        r = address_from_env(in, a, err, errlen);
    if (r == 0)
        r = address_from_file(in->user_file, a, err, errlen);
    if (r == 0)
        r = address_from_file(in->system_file, a, err, errlen);
    if (r != 0)
        return r < 0 ? r : 0;
    snprintf(a->address, sizeof(a->address), "%s", COLLECTOR_ADDRESS_DEFAULT);
    snprintf(a->source, sizeof(a->source), "default");
    a->fallback = true;
    return 0;
}

int collector_address_resolve(const char *flag, const char *env, const char *user_file,
                              const char *system_file, struct collector_address *a, char *err,
                              size_t errlen)
{
    struct collector_address_sources in = {
        .flag = flag, .env = env, .user_file = user_file, .system_file = system_file};

    return collector_address_find(&in, a, err, errlen);
}

bool collector_address_is_set(const struct collector_address *a)
{
    return a->list[0] || a->dns[0];
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
    return "no collector address is set: give --collector HOST:PORT or --collectors "
           "HOST:PORT,..., set " COLLECTOR_ADDRESS_ENV "=HOST:PORT or " COLLECTOR_ADDRESS_SET_ENV
           "=HOST:PORT,..., or write 'collector = HOST:PORT' or 'collectors = HOST:PORT,...' in "
           "~/.config/argus/argusctl.conf or " COLLECTOR_ADDRESS_SYSTEM_FILE;
}
