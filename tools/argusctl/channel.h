/* argusctl's channel to its collector, shared by every command (the query
 * commands, import-kineto, compare): the address resolved as
 * collector_address.h says, and mTLS from tls.* flags or ARGUS_TLS_CA /
 * ARGUS_TLS_CERT / ARGUS_TLS_KEY, plaintext only when --grpc.plaintext or
 * ARGUS_GRPC_PLAINTEXT=true asks for it (common/tls.h's tls_choose). */
#ifndef ARGUS_ARGUSCTL_CHANNEL_H
#define ARGUS_ARGUSCTL_CHANNEL_H

#include <stdbool.h>

#include "common/config.h"

#include "tools/argusctl/collector_address.h"

struct rpc_channel;

/* The connection options every argusctl command takes, as config table
 * entries of struct st (members collector, collectors, collectors_dns,
 * plaintext, tls_ca, tls_cert, tls_key; common/config.h's CONFIG_OPTION). */
#define CTL_CONNECT_OPTIONS(st)                                                                    \
    CONFIG_OPTION(st, "collector", CONFIG_STRING, collector, "", 0, 0,                             \
                  "collector gRPC address HOST:PORT (else $ARGUSCTL_COLLECTOR, else 'collector = " \
                  "HOST:PORT' in ~/.config/argus/argusctl.conf or /etc/argus/argusctl.conf, "      \
                  "else 127.0.0.1:7700)",                                                          \
                  NULL, NULL, false),                                                              \
        CONFIG_OPTION(st, "collectors", CONFIG_STRING, collectors, "", 0, 0,                       \
                      "collector set HOST:PORT,HOST:PORT,...: a job's queries go to every member " \
                      "and their answers are merged (else $ARGUSCTL_COLLECTORS, else "             \
                      "'collectors = LIST' in argusctl.conf)",                                     \
                      NULL, NULL, false),                                                          \
        CONFIG_OPTION(st, "collectors-dns", CONFIG_STRING, collectors_dns, "", 0, 0,               \
                      "collector set from DNS NAME:PORT (a headless Service; else "                \
                      "ARGUSCTL_COLLECTORS=dns:NAME:PORT, else 'collectors_dns = NAME:PORT')",     \
                      NULL, NULL, false),                                                          \
        CONFIG_OPTION(st, "grpc.plaintext", CONFIG_BOOL, plaintext, "false", 0, 0,                 \
                      "no TLS (else tls.*; env ARGUS_GRPC_PLAINTEXT=true does the same)", NULL,    \
                      NULL, false),                                                                \
        CONFIG_OPTION(st, "tls.ca", CONFIG_STRING, tls_ca, "", 0, 0,                               \
                      "CA of the collector's certificate (PEM; env ARGUS_TLS_CA)", NULL, NULL,     \
                      false),                                                                      \
        CONFIG_OPTION(st, "tls.cert", CONFIG_STRING, tls_cert, "", 0, 0,                           \
                      "our certificate, OU=query (PEM; env ARGUS_TLS_CERT)", NULL, NULL, false),   \
        CONFIG_OPTION(st, "tls.key", CONFIG_STRING, tls_key, "", 0, 0,                             \
                      "its private key (PEM; env ARGUS_TLS_KEY)", NULL, NULL, false)

/* The TLS choice of a command: plaintext flag and the three files (NULL or
 * "": unset, the environment variable then counts). */
struct ctl_tls {
    bool plaintext;
    const char *ca, *cert, *key;
};

struct tls_pem;

/* The credentials tls asks for: 1 with *pem loaded (tls_pem_free), 0 for
 * plaintext, -1 with the reason printed on stderr (prefixed "argusctl: "). */
int ctl_tls_load(const struct ctl_tls *tls, struct tls_pem *pem);

/* Open a channel to address, over TLS with pem (NULL: plaintext; gRPC
 * copies it). NULL with the reason printed. */
struct rpc_channel *ctl_channel_open(const char *address, const struct tls_pem *pem);

/* Resolve the collector address or set from the flags --collector,
 * --collectors and --collectors-dns (NULL/"": not given), the environment
 * and the files into a (collector_address.h). Returns 0, or -1 with the
 * reason printed. */
int ctl_address(const char *flag, const char *list, const char *dns, struct collector_address *a);

#endif
