#include "collector/transport/transport_tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"

/* What identifies one version of a file: a replaced file differs in one. */
struct transport_tls_stamp {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct transport_tls {
    struct tls_files files;
    pthread_mutex_t lock;
    struct transport_tls_stamp loaded[3]; /* of the set in use */
    struct transport_tls_stamp failed[3]; /* of the last set that failed to load */
    struct tls_pem pem;                   /* the set in use, for the first fetch */
    atomic_bool reload;
    bool served; /* the first fetch happened */
    int64_t cert_not_after, ca_not_after;
};

static void transport_tls_stamps(const struct tls_files *f, struct transport_tls_stamp out[3])
{
    const char *paths[3] = {f->ca, f->cert, f->key};

    memset(out, 0, 3 * sizeof(*out));
    for (int i = 0; i < 3; i++) {
        struct stat st;
        if (stat(paths[i], &st) == 0)
            out[i] = (struct transport_tls_stamp){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    }
}

/* Load the files into tt->pem (lock held). */
static int transport_tls_load(struct transport_tls *tt, char *err, size_t errlen)
{
    struct tls_pem pem;
    int64_t cert_end = 0, ca_end = 0;
    int r = tls_pem_load(&tt->files, &pem, err, errlen);

    if (r < 0)
        return r;
    tls_cert_not_after(pem.cert, &cert_end);
    tls_cert_not_after(pem.ca, &ca_end);
    tls_pem_free(&tt->pem);
    tt->pem = pem;
    tt->cert_not_after = cert_end;
    tt->ca_not_after = ca_end;
    return 0;
}

struct transport_tls *transport_tls_new(const struct tls_files *files, char *err, size_t errlen)
{
    struct transport_tls *tt = calloc(1, sizeof(*tt));

    if (!tt) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    tt->files = *files;
    pthread_mutex_init(&tt->lock, NULL);
    transport_tls_stamps(files, tt->loaded);
    if (transport_tls_load(tt, err, errlen) < 0) {
        transport_tls_free(tt);
        return NULL;
    }
    return tt;
}

void transport_tls_free(struct transport_tls *tt)
{
    if (!tt)
        return;
    tls_pem_free(&tt->pem);
    pthread_mutex_destroy(&tt->lock);
    free(tt);
}

static grpc_ssl_server_certificate_config *transport_tls_config(const struct tls_pem *pem)
{
    grpc_ssl_pem_key_cert_pair pair = {pem->key, pem->cert};

    return grpc_ssl_server_certificate_config_create(pem->ca, &pair, 1);
}

/* gRPC calls this at every new connection's handshake (and once when the
 * credentials are created): a new config when the files changed (or a
 * reload was asked for) and load, else UNCHANGED. A set that fails is logged
 * once per version of the files; gRPC keeps the previous one. */
static grpc_ssl_certificate_config_reload_status
transport_tls_fetch(void *user, grpc_ssl_server_certificate_config **config)
{
    struct transport_tls *tt = user;
    struct transport_tls_stamp now[3];
    grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
    bool forced = atomic_exchange(&tt->reload, false);
    char err[512];

    pthread_mutex_lock(&tt->lock);
    transport_tls_stamps(&tt->files, now);
    if (!tt->served) { /* the first fetch: the set transport_tls_new loaded */
        tt->served = true;
        *config = transport_tls_config(&tt->pem);
        st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
    } else if (forced || memcmp(now, tt->loaded, sizeof(now)) != 0) {
        if (!forced && memcmp(now, tt->failed, sizeof(now)) == 0) {
            st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL; /* logged already */
        } else if (transport_tls_load(tt, err, sizeof(err)) < 0) {
            log_error("transport", "TLS files not reloaded, the previous ones stay in use: %s",
                      err);
            memcpy(tt->failed, now, sizeof(now));
            st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
        } else {
            memcpy(tt->loaded, now, sizeof(now));
            *config = transport_tls_config(&tt->pem);
            st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
            log_info("transport", "TLS files reloaded (%s, %s, %s)", tt->files.ca, tt->files.cert,
                     tt->files.key);
        }
    }
    pthread_mutex_unlock(&tt->lock);
    return st;
}

grpc_server_credentials *transport_tls_credentials(struct transport_tls *tt)
{
    grpc_ssl_server_credentials_options *o =
        grpc_ssl_server_credentials_create_options_using_config_fetcher(
            GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY, transport_tls_fetch, tt);

    return o ? grpc_ssl_server_credentials_create_with_options(o) : NULL;
}

void transport_tls_request_reload(struct transport_tls *tt)
{
    atomic_store(&tt->reload, true);
}

void transport_tls_expiry(struct transport_tls *tt, int64_t *cert_not_after, int64_t *ca_not_after)
{
    pthread_mutex_lock(&tt->lock);
    *cert_not_after = tt->cert_not_after;
    *ca_not_after = tt->ca_not_after;
    pthread_mutex_unlock(&tt->lock);
}

void transport_tls_peer(grpc_call *call, char *identity, size_t len, unsigned *roles)
{
    grpc_auth_context *ctx = grpc_call_auth_context(call);
    grpc_auth_property_iterator it;
    const grpc_auth_property *p;
    char *pem;

    identity[0] = '\0';
    *roles = 0;
    if (!ctx)
        return;
    it = grpc_auth_context_find_properties_by_name(ctx, GRPC_X509_PEM_CERT_PROPERTY_NAME);
    p = grpc_auth_property_iterator_next(&it);
    pem = p ? strndup(p->value, p->value_length) : NULL;
    if (pem && tls_cert_identity(pem, identity, len, roles) < 0)
        identity[0] = '\0';
    free(pem);
    grpc_auth_context_release(ctx);
}
