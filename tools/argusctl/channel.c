#include "tools/argusctl/channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rpc.h"
#include "common/tls.h"

/* The option's value, else the environment variable's, else "". */
static const char *or_env(const char *opt, const char *var)
{
    const char *v = getenv(var);

    return opt && *opt ? opt : v ? v : "";
}

int ctl_tls_load(const struct ctl_tls *tls, struct tls_pem *pem)
{
    const char *env = getenv("ARGUS_GRPC_PLAINTEXT");
    struct tls_files f = {or_env(tls->ca, "ARGUS_TLS_CA"), or_env(tls->cert, "ARGUS_TLS_CERT"),
                          or_env(tls->key, "ARGUS_TLS_KEY")};
    bool plaintext = tls->plaintext;
    char err[512];
    int r;

    *pem = (struct tls_pem){0};
    if (!plaintext && !tls_files_set(&f) && env && strcmp(env, "true") == 0)
        plaintext = true;
    r = tls_choose(plaintext, &f, "--grpc.plaintext", "--tls.ca, --tls.cert and --tls.key", err,
                   sizeof(err));
    if (r == 1 && tls_pem_load(&f, pem, err, sizeof(err)) < 0)
        r = -1;
    if (r < 0)
        fprintf(stderr, "argusctl: %s\n", err);
    return r < 0 ? -1 : r;
}

struct rpc_channel *ctl_channel_open(const char *address, const struct tls_pem *pem)
{
    struct rpc_channel_options o = {.tls = pem};
    struct rpc_channel *ch = rpc_channel_new(address, &o);

    if (!ch)
        fprintf(stderr, "argusctl: cannot open a channel to %s (out of memory?)\n", address);
    return ch;
}

int ctl_address(const char *flag, const char *list, const char *dns, struct collector_address *a)
{
    char err[512], user[512];
    struct collector_address_sources in = {
        .flag = flag,
        .flag_list = list,
        .flag_dns = dns,
        .env = getenv(COLLECTOR_ADDRESS_ENV),
        .env_set = getenv(COLLECTOR_ADDRESS_SET_ENV),
        .user_file = collector_address_user_file(user, sizeof(user)),
        .system_file = COLLECTOR_ADDRESS_SYSTEM_FILE,
    };

    if (collector_address_find(&in, a, err, sizeof(err)) < 0) {
        fprintf(stderr, "argusctl: %s\n", err);
        return -1;
    }
    return 0;
}
