/* common/tls_why: the sentences for certificates made here (OpenSSL's API:
 * dates in the past and the future, two CAs, a wrong host name), offline and
 * against a real OpenSSL server on loopback that verifies client
 * certificates as the collector does. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/tls.h"
#include "common/tls_why.h"

#define DAY (24 * 3600L)

struct cred {
    X509 *x;
    EVP_PKEY *key;
};

static struct cred ca, other_ca;

static EVP_PKEY *new_key(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");

    assert_non_null(k);
    return k;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    assert_non_null(e);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
}

/* A certificate for subject "/OU=ou/CN=cn" valid from now + from_s to now +
 * to_s, signed by issuer (NULL: a self-signed CA). */
static struct cred make(const struct cred *issuer, const char *ou, const char *cn, const char *san,
                        const char *eku, long from_s, long to_s)
{
    static long serial = 1;
    struct cred c = {X509_new(), new_key()};
    X509_NAME *name = X509_NAME_new();

    X509_set_version(c.x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c.x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(c.x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(c.x), to_s);
    if (ou)
        X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_ASC, (const unsigned char *)ou, -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_subject_name(c.x, name);
    X509_set_issuer_name(c.x, issuer ? X509_get_subject_name(issuer->x) : name);
    X509_set_pubkey(c.x, c.key);
    add_ext(c.x, issuer ? issuer->x : c.x, NID_basic_constraints,
            issuer ? "critical,CA:FALSE" : "critical,CA:TRUE");
    if (san)
        add_ext(c.x, issuer->x, NID_subject_alt_name, san);
    if (eku)
        add_ext(c.x, issuer->x, NID_ext_key_usage, eku);
    assert_true(X509_sign(c.x, issuer ? issuer->key : c.key, EVP_sha256()) > 0);
    X509_NAME_free(name);
    return c;
}

static void cred_free(struct cred *c)
{
    X509_free(c->x);
    EVP_PKEY_free(c->key);
}

static char *pem_of_cert(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data, *out;
    long n;

    PEM_write_bio_X509(b, x);
    n = BIO_get_mem_data(b, &data);
    out = strndup(data, (size_t)n);
    BIO_free(b);
    return out;
}

static char *pem_of_key(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data, *out;
    long n;

    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    n = BIO_get_mem_data(b, &data);
    out = strndup(data, (size_t)n);
    BIO_free(b);
    return out;
}

/* The client's credentials: trusting trust, presenting c (NULL: none). */
static struct tls_pem client(const struct cred *trust, const struct cred *c)
{
    struct tls_pem p = {.ca = pem_of_cert(trust->x)};

    snprintf(p.ca_file, sizeof(p.ca_file), "/etc/argus/%s.crt", trust == &ca ? "ca" : "other-ca");
    if (c) {
        p.cert = pem_of_cert(c->x);
        p.key = pem_of_key(c->key);
        snprintf(p.cert_file, sizeof(p.cert_file), "/etc/argus/ctl.crt");
        snprintf(p.key_file, sizeof(p.key_file), "/etc/argus/ctl.key");
    }
    return p;
}

/* --- a server that verifies client certificates, as the collector -------- */

struct server {
    bool silent; /* as gRPC's server: close without an alert on a bad client */
    int listen_fd;
    SSL_CTX *ctx;
    pthread_t thread;
    char target[64];
};

static void *server_run(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    SSL *ssl = fd >= 0 ? SSL_new(s->ctx) : NULL;
    char buf[64];

    if (ssl && s->silent) {
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) == 1 && SSL_get_verify_result(ssl) == X509_V_OK &&
            SSL_get0_peer_certificate(ssl) && SSL_read(ssl, buf, sizeof(buf)) > 0)
            SSL_write(ssl, "ok", 2);
        SSL_free(ssl); /* no shutdown, no alert: the socket just closes */
    } else if (ssl) {
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) == 1 && SSL_read(ssl, buf, sizeof(buf)) > 0)
            SSL_write(ssl, "ok", 2);
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Listen on 127.0.0.1 with c, requiring a client certificate from ca. */
static int accept_any(int ok, X509_STORE_CTX *ctx)
{
    return 1; /* the silent server judges after the handshake */
}

static void server_start(struct server *s, const struct cred *c)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    s->ctx = SSL_CTX_new(TLS_server_method());
    assert_int_equal(SSL_CTX_use_certificate(s->ctx, c->x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(s->ctx, c->key), 1);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(s->ctx), ca.x);
    if (s->silent)
        SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER, accept_any);
    else
        SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s->listen_fd, 4), 0);
    getsockname(s->listen_fd, (struct sockaddr *)&a, &len);
    snprintf(s->target, sizeof(s->target), "127.0.0.1:%u", ntohs(a.sin_port));
    assert_int_equal(pthread_create(&s->thread, NULL, server_run, s), 0);
}

static void server_stop(struct server *s)
{
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    SSL_CTX_free(s->ctx);
}

/* Diagnose target with a client trusting trust and presenting c against a
 * server with server_cert; expect want and needle in the sentence. */
static bool silent;

static void expect(const struct cred *server_cert, const struct cred *trust, const struct cred *c,
                   int want, const char *needle)
{
    struct tls_pem p = client(trust, c);
    struct server s = {.silent = silent};
    char why[512] = "";
    int r;

    server_start(&s, server_cert);
    r = tls_why_diagnose(s.target, &p, 2000, why, sizeof(why));
    print_message("%s -> %d: %s\n", s.target, r, why);
    assert_int_equal(r, want);
    if (needle)
        assert_non_null(strstr(why, needle));
    server_stop(&s);
    tls_pem_free(&p);
}

static struct cred collector, good, expired, early, foreign;

static int setup(void **state)
{
    ca = make(NULL, NULL, "argus test CA", NULL, NULL, -DAY, 30 * DAY);
    other_ca = make(NULL, NULL, "another CA", NULL, NULL, -DAY, 30 * DAY);
    collector = make(&ca, "collector", "collector", "DNS:localhost,IP:127.0.0.1", "serverAuth",
                     -DAY, 10 * DAY);
    good = make(&ca, "query", "ops", "DNS:ops", "clientAuth", -DAY, 10 * DAY);
    expired = make(&ca, "query", "ops", "DNS:ops", "clientAuth", -10 * DAY, -DAY);
    early = make(&ca, "query", "ops", "DNS:ops", "clientAuth", DAY, 10 * DAY);
    foreign = make(&other_ca, "query", "ops", "DNS:ops", "clientAuth", -DAY, 10 * DAY);
    return 0;
}

static int teardown(void **state)
{
    struct cred *all[] = {&ca, &other_ca, &collector, &good, &expired, &early, &foreign};

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        cred_free(all[i]);
    return 0;
}

static void local_sentences(void **state)
{
    struct tls_pem p;
    char why[512] = "";

    p = client(&ca, &expired);
    assert_int_equal(tls_why_local(&p, time(NULL), why, sizeof(why)), TLS_WHY_FOUND);
    assert_non_null(strstr(why, "our certificate (tls.cert /etc/argus/ctl.crt) expired on 20"));
    assert_non_null(strstr(why, " UTC"));
    tls_pem_free(&p);
    p = client(&ca, &early);
    assert_int_equal(tls_why_local(&p, time(NULL), why, sizeof(why)), TLS_WHY_FOUND);
    assert_non_null(strstr(why, "is not valid before 20"));
    /* the same certificate two days on is fine */
    assert_int_equal(tls_why_local(&p, time(NULL) + 2 * DAY, why, sizeof(why)), TLS_WHY_NOTHING);
    tls_pem_free(&p);
    p = client(&ca, &foreign);
    assert_int_equal(tls_why_local(&p, time(NULL), why, sizeof(why)), TLS_WHY_FOUND);
    assert_non_null(strstr(why, "is not signed by the CA in tls.ca /etc/argus/ca.crt"));
    tls_pem_free(&p);
    p = client(&ca, &good);
    assert_int_equal(tls_why_local(&p, time(NULL), why, sizeof(why)), TLS_WHY_NOTHING);
    tls_pem_free(&p);
}

static void handshake_ok(void **state)
{
    expect(&collector, &ca, &good, TLS_WHY_NOTHING, NULL);
}

static void our_certificate_expired(void **state)
{
    expect(&collector, &ca, &expired, TLS_WHY_FOUND, "(tls.cert /etc/argus/ctl.crt) expired on");
}

static void collector_certificate_expired(void **state)
{
    struct cred old =
        make(&ca, "collector", "collector", "IP:127.0.0.1", "serverAuth", -9 * DAY, -2 * DAY);

    expect(&old, &ca, &good, TLS_WHY_FOUND, "the collector's certificate expired on 20");
    cred_free(&old);
}

static void collector_from_another_ca(void **state)
{
    expect(&collector, &other_ca, &good, TLS_WHY_FOUND,
           "the collector's certificate (issued by /CN=argus test CA) is not signed by the CA in "
           "tls.ca /etc/argus/other-ca.crt");
}

static void collector_for_another_host(void **state)
{
    struct cred elsewhere =
        make(&ca, "collector", "c", "DNS:collector.example,IP:10.0.0.7", "serverAuth", -DAY, DAY);

    expect(&elsewhere, &ca, &good, TLS_WHY_FOUND,
           "the collector's certificate is for collector.example, 10.0.0.7, not 127.0.0.1");
    cred_free(&elsewhere);
}

static void our_certificate_refused(void **state)
{
    expect(&collector, &ca, &foreign, TLS_WHY_FOUND,
           "the collector refused our client certificate (tls.cert /etc/argus/ctl.crt): it is not "
           "signed by the CA in tls.ca /etc/argus/ca.crt, which signed the collector's");
}

static void no_client_certificate(void **state)
{
    expect(&collector, &ca, NULL, TLS_WHY_FOUND, "the collector asked for a client certificate");
}

/* gRPC's server closes without an alert: the same two cases */
static void refused_silently(void **state)
{
    silent = true;
    expect(&collector, &ca, &good, TLS_WHY_NOTHING, NULL);
    expect(&collector, &ca, &foreign, TLS_WHY_FOUND,
           "the collector refused our client certificate (tls.cert /etc/argus/ctl.crt): it is not "
           "signed by the CA in tls.ca /etc/argus/ca.crt, which signed the collector's");
    expect(&collector, &ca, NULL, TLS_WHY_FOUND,
           "the collector asked for a client certificate and none is set");
    silent = false;
}

static void nothing_listens(void **state)
{
    struct tls_pem p = client(&ca, &good);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char target[64], why[512];

    bind(fd, (struct sockaddr *)&a, sizeof(a)); /* a free port, then nothing on it */
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    snprintf(target, sizeof(target), "127.0.0.1:%u", ntohs(a.sin_port));
    assert_int_equal(tls_why_diagnose(target, &p, 1000, why, sizeof(why)), -ECONNREFUSED);
    assert_non_null(strstr(why, "no TCP connection to 127.0.0.1:"));
    assert_int_equal(tls_why_diagnose("no-port", &p, 1000, why, sizeof(why)), -EINVAL);
    tls_pem_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(local_sentences),
        cmocka_unit_test(handshake_ok),
        cmocka_unit_test(our_certificate_expired),
        cmocka_unit_test(collector_certificate_expired),
        cmocka_unit_test(collector_from_another_ca),
        cmocka_unit_test(collector_for_another_host),
        cmocka_unit_test(our_certificate_refused),
        cmocka_unit_test(no_client_certificate),
        cmocka_unit_test(refused_silently),
        cmocka_unit_test(nothing_listens),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
