/* argusctl's channel to its collector, shared by every command (the query
 * commands, import-kineto, compare): the address resolved as
 * collector_address.h says, and mTLS from tls.* flags or ARGUS_TLS_CA /
 * ARGUS_TLS_CERT / ARGUS_TLS_KEY, plaintext only when --grpc.plaintext or
 * ARGUS_GRPC_PLAINTEXT=true asks for it (common/tls.h's tls_choose). */
#ifndef ARGUS_ARGUSCTL_CHANNEL_H
#define ARGUS_ARGUSCTL_CHANNEL_H

#include <stdbool.h>

#include "tools/argusctl/collector_address.h"

struct rpc_channel;

/* The TLS choice of a command: plaintext flag and the three files (NULL or
 * "": unset, the environment variable then counts). */
struct ctl_tls {
    bool plaintext;
    const char *ca, *cert, *key;
};

/* Open a channel to address. NULL with the reason printed on stderr
 * (prefixed "argusctl: "). */
struct rpc_channel *ctl_channel_open(const char *address, const struct ctl_tls *tls);

/* Resolve the collector address from flag (NULL/"": not given) into a.
 * Returns 0, or -1 with the reason printed. */
int ctl_address(const char *flag, struct collector_address *a);

#endif
