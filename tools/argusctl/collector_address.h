/* Where argusctl finds its collector, or its collector set (docs/design.md
 * section 10: a job lives on a primary and a standby of the set, and a job
 * that moved keeps its history on the members it was on before). First that
 * is set wins:
 *   1. --collector HOST:PORT (one collector, even when a set is also given),
 *      then --collectors LIST or --collectors-dns NAME:PORT (a set; not both)
 *   2. the environment: ARGUSCTL_COLLECTOR=HOST:PORT, then
 *      ARGUSCTL_COLLECTORS=LIST or ARGUSCTL_COLLECTORS=dns:NAME:PORT
 *   3. the user's file, $XDG_CONFIG_HOME/argus/argusctl.conf (else
 *      ~/.config/argus/argusctl.conf), then the system's,
 *      /etc/argus/argusctl.conf: one of the lines "collector = HOST:PORT",
 *      "collectors = LIST" or "collectors_dns = NAME:PORT" ('#' comments;
 *      two of them, or any other key, is an error with the file and line)
 *   4. 127.0.0.1:7700, the collector's default, as a fallback: when it does
 *      not answer, the error names the ways to set the address.
 * A single address is checked like the agent's collector.address; a LIST
 * and a NAME:PORT like common/collector_set.h parses them (a DNS name is
 * not resolved here). */
#ifndef ARGUS_ARGUSCTL_COLLECTOR_ADDRESS_H
#define ARGUS_ARGUSCTL_COLLECTOR_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#define COLLECTOR_ADDRESS_ENV "ARGUSCTL_COLLECTOR"
#define COLLECTOR_ADDRESS_SET_ENV "ARGUSCTL_COLLECTORS"
#define COLLECTOR_ADDRESS_SYSTEM_FILE "/etc/argus/argusctl.conf"
#define COLLECTOR_ADDRESS_DEFAULT "127.0.0.1:7700"

struct collector_address {
    char address[256]; /* one collector; "" when a set was given */
    char list[4096];   /* a static set; "" otherwise */
    char dns[256];     /* a DNS set NAME:PORT; "" otherwise */
    char source[320];  /* "--collector", "--collectors", "ARGUSCTL_COLLECTORS", a path, "default" */
    bool fallback;     /* nothing was set: address is the default */
};

/* What collector_address_find looks at; NULL or "" means not given. */
struct collector_address_sources {
    const char *flag;      /* --collector */
    const char *flag_list; /* --collectors */
    const char *flag_dns;  /* --collectors-dns */
    const char *env;       /* value of ARGUSCTL_COLLECTOR */
    const char *env_set;   /* value of ARGUSCTL_COLLECTORS */
    const char *user_file; /* missing: skipped */
    const char *system_file;
};

/* Resolve the address or set from in into a, by the order above. Returns
 * 0, or -EINVAL with a message in err (errlen bytes) naming where the bad
 * value came from. */
int collector_address_find(const struct collector_address_sources *in, struct collector_address *a,
                           char *err, size_t errlen);

/* collector_address_find with only --collector and ARGUSCTL_COLLECTOR
 * among the flags and the environment. */
int collector_address_resolve(const char *flag, const char *env, const char *user_file,
                              const char *system_file, struct collector_address *a, char *err,
                              size_t errlen);

/* True when a names a set rather than one collector. */
bool collector_address_is_set(const struct collector_address *a);

/* The user's file path from $XDG_CONFIG_HOME or $HOME into buf; "" when
 * neither is set. Returns buf. */
char *collector_address_user_file(char *buf, size_t len);

/* One sentence on how to set the address, for errors after the fallback
 * did not answer. Static storage. */
const char *collector_address_hint(void);

#endif
