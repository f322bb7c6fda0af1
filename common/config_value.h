/* One value of the declarative config table (common/config.h): text into
 * the typed field of a program's config struct, and the field back into
 * text. The table's file parser and flags parse through here,
 * --print-config, --help and the start-up summary format through here; the
 * unit parsers are exported for programs and tests.
 *
 * Text forms by type: CONFIG_BOOL true/false, yes/no, on/off, 1/0;
 * CONFIG_DURATION a number with a unit (ns, us, ms, s, m, min, h, d; a bare
 * "0" only); CONFIG_SIZE a number with an optional unit (B, K/KiB/KB ...
 * T/TiB/TB); CONFIG_ENUM exactly one of the option's names. */
#ifndef ARGUS_COMMON_CONFIG_VALUE_H
#define ARGUS_COMMON_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* Parse value as o's type into field (o's member of the program's config
 * struct), checking o's bounds (numbers) or names (CONFIG_ENUM). A
 * CONFIG_STRING field gets a copy (its old string is freed). Returns 0,
 * -EINVAL with a message in err (errlen bytes; "key: 'x' is not a size",
 * "key: 'x' is not a, b or c"), or -ENOMEM. */
int config_value_parse(const struct config_option *o, const char *value, void *field, char *err,
                       size_t errlen);

/* Format o's current value in cfg into buf (len bytes) as a file would
 * give it: a CONFIG_ENUM as its name (a value without one as the number),
 * durations and sizes with the largest exact unit. Returns buf. */
char *config_format_value(const struct config_option *o, const void *cfg, char *buf, size_t len);

/* The entry of names (a list ended by {NULL}; may be NULL) that has value,
 * or NULL. */
const struct config_name *config_name_of(const struct config_name *names, int value);

/* Write names into buf (len > 0 bytes) with sep between them and last
 * before the last one: "a, b or c" (", ", " or ") or "a|b|c". Names that do
 * not fit are left out whole. */
void config_names_join(const struct config_name *names, const char *sep, const char *last,
                       char *buf, size_t len);

/* The unit parsers of CONFIG_DURATION, CONFIG_SIZE and CONFIG_BOOL. Return
 * 0 or -EINVAL. */
int config_parse_duration(const char *text, uint64_t *ns);
int config_parse_size(const char *text, uint64_t *bytes);
int config_parse_bool(const char *text, bool *out);

/* Option checks (config_check_fn) for addresses, shared by the programs:
 *   config_check_grpc_listen  what a gRPC server binds: HOST:PORT (HOST an
 *                             IPv4 address, [IPv6] or a name; PORT 0-65535),
 *                             unix:PATH or unix-abstract:NAME;
 *   config_check_grpc_target  what a gRPC client dials: the same, or
 *                             dns:[//AUTHORITY/]HOST:PORT;
 *   config_check_http_listen  what common/http.c binds: IPv4 HOST:PORT
 *                             (HOST may be empty or localhost), or "" (off).
 * They return 0 or -EINVAL with "key: 'x' is not ..." in err. */
int config_check_grpc_listen(const struct config_option *o, const void *field, char *err,
                             size_t errlen);
int config_check_grpc_target(const struct config_option *o, const void *field, char *err,
                             size_t errlen);
int config_check_http_listen(const struct config_option *o, const void *field, char *err,
                             size_t errlen);

/* True when s is HOST:PORT (HOST an IPv4 address, [IPv6] or a name; PORT
 * 0-65535), the form every collector address takes. */
bool config_is_host_port(const char *s);

/* Check a comma-separated list (field: a char *) against names (a NULL-ended
 * array of strings): each item must be one of them, once. "" is an empty
 * list. Returns 0 or -EINVAL naming the bad item and the allowed names. */
int config_check_list(const struct config_option *o, const char *list, const char *const *names,
                      char *err, size_t errlen);

#endif
