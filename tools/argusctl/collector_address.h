/* Where argusctl finds its collector, first that is set wins:
 *   1. --collector HOST:PORT
 *   2. the environment variable ARGUSCTL_COLLECTOR
 *   3. the user's file, $XDG_CONFIG_HOME/argus/argusctl.conf (else
 *      ~/.config/argus/argusctl.conf), then the system's,
 *      /etc/argus/argusctl.conf: one line "collector = HOST:PORT" ('#'
 *      comments; any other key is an error with the file and line)
 *   4. 127.0.0.1:7700, the collector's default, as a fallback: when it does
 *      not answer, the error names the three ways to set the address.
 * Each address is checked like the agent's collector.address. */
#ifndef ARGUS_ARGUSCTL_COLLECTOR_ADDRESS_H
#define ARGUS_ARGUSCTL_COLLECTOR_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#define COLLECTOR_ADDRESS_ENV "ARGUSCTL_COLLECTOR"
#define COLLECTOR_ADDRESS_SYSTEM_FILE "/etc/argus/argusctl.conf"
#define COLLECTOR_ADDRESS_DEFAULT "127.0.0.1:7700"

struct collector_address {
    char address[256];
    char source[320]; /* "--collector", "ARGUSCTL_COLLECTOR", a file path, "default" */
    bool fallback;    /* nothing was set: address is the default */
};

/* Resolve the address from flag (NULL or "": not given), env (the value of
 * ARGUSCTL_COLLECTOR, NULL: unset) and the files user_file and system_file
 * (NULL or missing: skipped). Returns 0, or -EINVAL with a message in err
 * (errlen bytes) naming where the bad value came from. */
int collector_address_resolve(const char *flag, const char *env, const char *user_file,
                              const char *system_file, struct collector_address *a, char *err,
                              size_t errlen);

/* The user's file path from $XDG_CONFIG_HOME or $HOME into buf; "" when
 * neither is set. Returns buf. */
char *collector_address_user_file(char *buf, size_t len);

/* One sentence on how to set the address, for errors after the fallback
 * did not answer. Static storage. */
const char *collector_address_hint(void);

#endif
