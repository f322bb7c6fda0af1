/* One value of the config table (see config_value.h). */
#include "common/config_value.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/clock.h"

int config_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};

    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

/* A non-negative decimal number with an optional fraction, then a unit from
 * units[] (NULL-terminated pairs of suffix and multiplier). */
struct config_unit {
    const char *suffix;
    double multiplier;
};

static int config_parse_scaled(const char *text, const struct config_unit *units, bool bare_ok,
                               uint64_t *out)
{
    char *end;
    double value;

    if (!*text || *text == '-' || isspace((unsigned char)*text))
        return -EINVAL;
    errno = 0;
    value = strtod(text, &end);
    if (errno || end == text || !isfinite(value) || value < 0)
        return -EINVAL;
    while (*end == ' ')
        end++;
    if (!*end) {
        if ((!bare_ok && value != 0) || value > 1.8e19) /* beyond uint64_t */
            return -EINVAL;
        *out = (uint64_t)value;
        return 0;
    }
    for (const struct config_unit *u = units; u->suffix; u++) {
        if (strcmp(end, u->suffix) == 0) {
            double scaled = value * u->multiplier;
            if (scaled > 1.8e19)
                return -EINVAL;
            *out = (uint64_t)llround(scaled);
            return 0;
        }
    }
    return -EINVAL;
}

int config_parse_duration(const char *text, uint64_t *ns)
{
    static const struct config_unit units[] = {
        {"ns", 1},     {"us", 1e3},   {"ms", 1e6},    {"s", 1e9}, {"m", 60e9},
        {"min", 60e9}, {"h", 3600e9}, {"d", 86400e9}, {NULL, 0},
    };
    /* A bare number is ambiguous (seconds? ms?): only "0" is accepted. */
    return config_parse_scaled(text, units, false, ns);
}

int config_parse_size(const char *text, uint64_t *bytes)
{
    static const struct config_unit units[] = {
        {"B", 1},
        {"K", 1024.0},
        {"KiB", 1024.0},
        {"KB", 1e3},
        {"M", 1048576.0},
        {"MiB", 1048576.0},
        {"MB", 1e6},
        {"G", 1073741824.0},
        {"GiB", 1073741824.0},
        {"GB", 1e9},
        {"T", 1099511627776.0},
        {"TiB", 1099511627776.0},
        {"TB", 1e12},
        {NULL, 0},
    };
    return config_parse_scaled(text, units, true, bytes);
}

const struct config_name *config_name_of(const struct config_name *names, int value)
{
    for (const struct config_name *n = names; n && n->name; n++)
        if (n->value == value)
            return n;
    return NULL;
}

void config_names_join(const struct config_name *names, const char *sep, const char *last,
                       char *buf, size_t len)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; names && names[i].name; i++) {
        const char *glue = i == 0 ? "" : names[i + 1].name ? sep : last;
        int n = snprintf(buf + off, len - off, "%s%s", glue, names[i].name);
        if (n < 0 || (size_t)n >= len - off) {
            buf[off] = '\0'; /* whole names only */
            break;
        }
        off += (size_t)n;
    }
}

static int config_parse_enum(const struct config_option *o, const char *value, int *field,
                             char *err, size_t errlen)
{
    char allowed[256];

    for (const struct config_name *n = o->names; n && n->name; n++) {
        if (strcmp(value, n->name) == 0) {
            *field = n->value;
            return 0;
        }
    }
    config_names_join(o->names, ", ", " or ", allowed, sizeof(allowed));
    snprintf(err, errlen, "%s: '%s' is not %s", o->key, value, allowed);
    return -EINVAL;
}

static int config_check_bounds(const struct config_option *o, double value, char *err,
                               size_t errlen)
{
    if (o->min == o->max || (value >= o->min && value <= o->max))
        return 0;
    if (o->type == CONFIG_SIZE)
        snprintf(err, errlen, "%s: %.0f bytes is out of range [%.0f, %.0f]", o->key, value, o->min,
                 o->max);
    else if (o->type == CONFIG_DURATION)
        snprintf(err, errlen, "%s: %gs is out of range [%gs, %gs]", o->key, value, o->min, o->max);
    else
        snprintf(err, errlen, "%s: %g is out of range [%g, %g]", o->key, value, o->min, o->max);
    return -EINVAL;
}

static int config_parse_number(const struct config_option *o, const char *value, void *field,
                               char *err, size_t errlen)
{
    char *end;
    double checked;

    errno = 0;
    switch (o->type) {
    case CONFIG_INT: {
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end)
            goto bad;
        *(int64_t *)field = v;
        checked = (double)v;
        break;
    }
    case CONFIG_UINT: {
        if (*value == '-')
            goto bad;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end)
            goto bad;
        *(uint64_t *)field = v;
        checked = (double)v;
        break;
    }
    case CONFIG_DOUBLE: {
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v))
            goto bad;
        *(double *)field = v;
        checked = v;
        break;
    }
    case CONFIG_DURATION:
        if (config_parse_duration(value, field) < 0)
            goto bad;
        checked = (double)*(uint64_t *)field / 1e9; /* bounds are in seconds */
        break;
    case CONFIG_SIZE:
        if (config_parse_size(value, field) < 0)
            goto bad;
        checked = (double)*(uint64_t *)field;
        break;
    default:
        goto bad;
    }
    return config_check_bounds(o, checked, err, errlen);
bad:;
    static const char *const expect[] = {
        [CONFIG_INT] = "an integer",
        [CONFIG_UINT] = "a non-negative integer",
        [CONFIG_DOUBLE] = "a number",
        [CONFIG_DURATION] = "a duration with a unit (e.g. 250ms, 5s, 10m, 2h)",
        [CONFIG_SIZE] = "a size (e.g. 4096, 64KiB, 4MiB, 1GiB)",
    };
    snprintf(err, errlen, "%s: '%s' is not %s", o->key, value,
             o->type < sizeof(expect) / sizeof(expect[0]) && expect[o->type] ? expect[o->type]
                                                                             : "valid");
    return -EINVAL;
}

int config_value_parse(const struct config_option *o, const char *value, void *field, char *err,
                       size_t errlen)
{
    switch (o->type) {
    case CONFIG_BOOL:
        if (config_parse_bool(value, field) < 0) {
            snprintf(err, errlen, "%s: '%s' is not a boolean (true/false)", o->key, value);
            return -EINVAL;
        }
        return 0;
    case CONFIG_ENUM:
        return config_parse_enum(o, value, field, err, errlen);
    case CONFIG_STRING: {
        char *copy = strdup(value);
        if (!copy) {
            snprintf(err, errlen, "%s: out of memory", o->key);
            return -ENOMEM;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return 0;
    }
    default:
        return config_parse_number(o, value, field, err, errlen);
    }
}

char *config_format_value(const struct config_option *o, const void *cfg, char *buf, size_t len)
{
    const void *field = (const char *)cfg + o->offset;

    switch (o->type) {
    case CONFIG_BOOL:
        snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false");
        break;
    case CONFIG_INT:
        snprintf(buf, len, "%" PRId64, *(const int64_t *)field);
        break;
    case CONFIG_UINT:
        snprintf(buf, len, "%" PRIu64, *(const uint64_t *)field);
        break;
    case CONFIG_DOUBLE:
        snprintf(buf, len, "%g", *(const double *)field);
        break;
    case CONFIG_STRING: {
        const char *s = *(char *const *)field;
        snprintf(buf, len, "%s", s ? s : "");
        break;
    }
    case CONFIG_DURATION: {
        uint64_t ns = *(const uint64_t *)field;
        if (ns == 0)
            snprintf(buf, len, "0");
        else if (ns % (3600 * NSEC_PER_SEC) == 0)
            snprintf(buf, len, "%" PRIu64 "h", ns / (3600 * NSEC_PER_SEC));
        else if (ns % (60 * NSEC_PER_SEC) == 0)
            snprintf(buf, len, "%" PRIu64 "m", ns / (60 * NSEC_PER_SEC));
        else if (ns % NSEC_PER_SEC == 0)
            snprintf(buf, len, "%" PRIu64 "s", ns / NSEC_PER_SEC);
        else if (ns % NSEC_PER_MSEC == 0)
            snprintf(buf, len, "%" PRIu64 "ms", ns / NSEC_PER_MSEC);
        else
            snprintf(buf, len, "%" PRIu64 "ns", ns);
        break;
    }
    case CONFIG_SIZE: {
        static const char *const unit[] = {"", "KiB", "MiB", "GiB", "TiB"};
        uint64_t b = *(const uint64_t *)field;
        int u = 0;
        while (u < 4 && b && b % 1024 == 0) {
            b /= 1024;
            u++;
        }
        snprintf(buf, len, "%" PRIu64 "%s", b, unit[u]);
        break;
    }
    case CONFIG_ENUM: {
        const struct config_name *n = config_name_of(o->names, *(const int *)field);
        if (n)
            snprintf(buf, len, "%s", n->name);
        else
            snprintf(buf, len, "%d", *(const int *)field);
        break;
    }
    }
    return buf;
}

/* "HOST:PORT" with PORT 0-65535 and a HOST of letters, digits, '.', '-',
 * '_' (a name or an IPv4 address) or [IPv6]; host_may_be_empty for ":PORT". */
static bool config_host_port(const char *s, bool host_may_be_empty)
{
    const char *colon = strrchr(s, ':'), *h = s;
    char *end;
    long port;

    if (!colon)
        return false;
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || port < 0 || port > 65535 || colon[1] == '-' ||
        colon[1] == '+')
        return false;
    if (*h == '[') {
        char v6[64];
        size_t n = (size_t)(colon - h);
        if (n < 3 || h[n - 1] != ']' || n - 2 >= sizeof(v6))
            return false;
        memcpy(v6, h + 1, n - 2);
        v6[n - 2] = '\0';
        return inet_pton(AF_INET6, v6, &(struct in6_addr){0}) == 1;
    }
    if (h == colon)
        return host_may_be_empty;
    for (; h < colon; h++)
        if (!isalnum((unsigned char)*h) && *h != '.' && *h != '-' && *h != '_')
            return false;
    return true;
}

bool config_is_host_port(const char *s)
{
    return s && config_host_port(s, false);
}

static const char *config_string_field(const void *field)
{
    const char *s = *(char *const *)field;
    return s ? s : "";
}

int config_check_grpc_listen(const struct config_option *o, const void *field, char *err,
                             size_t errlen)
{
    const char *s = config_string_field(field);

    if ((strncmp(s, "unix:", 5) == 0 && s[5]) || (strncmp(s, "unix-abstract:", 14) == 0 && s[14]) ||
        config_host_port(s, false))
        return 0;
    snprintf(err, errlen,
             "%s: '%s' is not an address to listen on (HOST:PORT, [IPv6]:PORT, unix:PATH or "
             "unix-abstract:NAME; PORT 0-65535)",
             o->key, s);
    return -EINVAL;
}

int config_check_grpc_target(const struct config_option *o, const void *field, char *err,
                             size_t errlen)
{
    const char *s = config_string_field(field), *rest = s;

    if (strncmp(s, "dns:", 4) == 0) {
        rest = s + 4;
        if (strncmp(rest, "//", 2) == 0) { /* dns://AUTHORITY/HOST:PORT */
            const char *slash = strchr(rest + 2, '/');
            rest = slash ? slash + 1 : "";
        }
    }
    if ((rest == s && strncmp(s, "unix:", 5) == 0 && s[5]) ||
        (rest == s && strncmp(s, "unix-abstract:", 14) == 0 && s[14]) ||
        config_host_port(rest, false))
        return 0;
    snprintf(err, errlen,
             "%s: '%s' is not an address to connect to (HOST:PORT, [IPv6]:PORT, "
             "dns:///HOST:PORT, unix:PATH or unix-abstract:NAME; PORT 0-65535)",
             o->key, s);
    return -EINVAL;
}

int config_check_http_listen(const struct config_option *o, const void *field, char *err,
                             size_t errlen)
{
    const char *s = config_string_field(field), *colon = strrchr(s, ':');
    char host[64];

    if (!*s)
        return 0;
    if (colon && (size_t)(colon - s) < sizeof(host) && config_host_port(s, true)) {
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        if (!*host || strcmp(host, "localhost") == 0 ||
            inet_pton(AF_INET, host, &(struct in_addr){0}) == 1)
            return 0;
    }
    snprintf(err, errlen,
             "%s: '%s' is not an IPv4 HOST:PORT to listen on (e.g. 127.0.0.1:7702, "
             "0.0.0.0:7702, localhost:0; empty: off)",
             o->key, s);
    return -EINVAL;
}

int config_check_list(const struct config_option *o, const char *list, const char *const *names,
                      char *err, size_t errlen)
{
    for (const char *p = list ? list : ""; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        size_t i = 0;
        while (names[i] && !(strlen(names[i]) == len && strncmp(names[i], p, len) == 0))
            i++;
        bool again = false;
        for (const char *q = list; q < p && !again; q = strchr(q, ',') + 1)
            again = strncmp(q, p, len) == 0 && (q[len] == ',' || !q[len]);
        if (!names[i] || again) {
            char allowed[256] = "";
            for (size_t k = 0; names[k]; k++)
                snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed), "%s%s",
                         k ? ", " : "", names[k]);
            snprintf(err, errlen, "%s: %s '%.*s' (one of: %s; comma-separated, each once)", o->key,
                     again ? "repeated" : "unknown", (int)len, p, allowed);
            return -EINVAL;
        }
        p = comma ? comma + 1 : p + len;
    }
    return 0;
}
