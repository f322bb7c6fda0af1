/* Why a TLS connection fails: see tls_why.h. */
#include "common/tls_why.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/tls.h"

/* What the handshake saw: the first failed check of the collector's
 * certificate, and the fatal alert the collector sent. */
struct why_seen {
    int verify_error; /* X509_V_ERR_*, 0: none */
    int depth;        /* of the certificate that failed (0: the collector's own) */
    X509 *failed;     /* that certificate (owned) */
    int alert;        /* the collector's fatal alert, -1: none */
    bool asked;       /* the collector asked for a client certificate */
};

/* How the handshake and the first read went. */
enum why_outcome {
    WHY_ANSWERED, /* the collector sent data: it accepted us */
    WHY_CLOSED,   /* our handshake done, the collector closed (or alerted) */
    WHY_SILENT,   /* our handshake done, nothing within the timeout */
    WHY_FAILED,   /* our side of the handshake failed */
};

static const char *why_name(const char *file)
{
    return file && *file ? file : "(unnamed)";
}

/* "2026-12-05 10:08:03 UTC" */
static void why_date(const ASN1_TIME *t, char *buf, size_t len)
{
    struct tm tm;

    if (!t || ASN1_TIME_to_tm(t, &tm) != 1 || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, len, "(unreadable date)");
}

/* Every certificate in pem (a bundle or a chain), NULL when none. */
static STACK_OF(X509) * why_certs(const char *pem)
{
    BIO *bio = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    STACK_OF(X509) *certs = bio ? sk_X509_new_null() : NULL;
    X509 *x;

    while (certs && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)))
        if (!sk_X509_push(certs, x))
            X509_free(x);
    ERR_clear_error(); /* the end of the text reads as an error */
    BIO_free(bio);
    if (certs && !sk_X509_num(certs)) {
        sk_X509_free(certs);
        certs = NULL;
    }
    return certs;
}

/* X509_V_OK when the first certificate of chain is signed through the CA
 * bundle ca (dates not checked), else the X509_V_ERR_* of the first fault. */
static int why_chain_error(STACK_OF(X509) * chain, const char *ca)
{
    STACK_OF(X509) *cas = why_certs(ca);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int err = X509_V_ERR_UNSPECIFIED;

    for (int i = 0; store && cas && i < sk_X509_num(cas); i++)
        X509_STORE_add_cert(store, sk_X509_value(cas, i));
    if (store && ctx && X509_STORE_CTX_init(ctx, store, sk_X509_value(chain, 0), chain) == 1) {
        X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_NO_CHECK_TIME);
        err = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    }
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    sk_X509_pop_free(cas, X509_free);
    return err;
}

/* Our certificate x's dates at now_s: TLS_WHY_FOUND with the sentence. */
static int why_dates(const X509 *x, const char *file, int64_t now_s, char *why, size_t whylen)
{
    time_t now = (time_t)now_s;
    char date[64];

    if (X509_cmp_time(X509_get0_notAfter(x), &now) < 0) {
        why_date(X509_get0_notAfter(x), date, sizeof(date));
        snprintf(why, whylen, "our certificate (tls.cert %s) expired on %s: renew it",
                 why_name(file), date);
        return TLS_WHY_FOUND;
    }
    if (X509_cmp_time(X509_get0_notBefore(x), &now) > 0) {
        why_date(X509_get0_notBefore(x), date, sizeof(date));
        snprintf(why, whylen,
                 "our certificate (tls.cert %s) is not valid before %s (a clock behind, or a "
                 "certificate issued ahead of time)",
                 why_name(file), date);
        return TLS_WHY_FOUND;
    }
    return TLS_WHY_NOTHING;
}

int tls_why_local(const struct tls_pem *pem, int64_t now_s, char *why, size_t whylen)
{
    STACK_OF(X509) *chain = why_certs(pem->cert);
    int r = TLS_WHY_NOTHING;

    if (chain)
        r = why_dates(sk_X509_value(chain, 0), pem->cert_file, now_s, why, whylen);
    if (chain && r == TLS_WHY_NOTHING && why_chain_error(chain, pem->ca) != X509_V_OK) {
        snprintf(why, whylen, "our certificate (tls.cert %s) is not signed by the CA in tls.ca %s",
                 why_name(pem->cert_file), why_name(pem->ca_file));
        r = TLS_WHY_FOUND;
    }
    sk_X509_pop_free(chain, X509_free);
    return r;
}

/* --- the collector's side ------------------------------------------------- */

/* The DNS and IP subjectAltNames of x, comma-separated ("none" when none). */
static void why_san_list(X509 *x, char *buf, size_t len)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    size_t n = 0;

    buf[0] = '\0';
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names) && n < len; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        char ip[INET6_ADDRSTRLEN] = "";
        if (g->type == GEN_IPADD && (g->d.iPAddress->length == 4 || g->d.iPAddress->length == 16))
            inet_ntop(g->d.iPAddress->length == 4 ? AF_INET : AF_INET6, g->d.iPAddress->data, ip,
                      sizeof(ip));
        if (g->type == GEN_DNS)
            n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? ", " : "",
                                  ASN1_STRING_length(g->d.dNSName),
                                  (const char *)ASN1_STRING_get0_data(g->d.dNSName));
        else if (ip[0])
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", ip);
    }
    GENERAL_NAMES_free(names);
    if (!buf[0])
        snprintf(buf, len, "no DNS or IP name");
}

/* The sentence for a failed check of the collector's certificate. */
static void why_server_cert(const struct why_seen *s, const struct tls_pem *pem, const char *host,
                            char *why, size_t whylen)
{
    const char *whose =
        s->depth ? "a CA certificate of the collector's chain" : "the collector's certificate";
    char text[512];

    switch (s->verify_error) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
        why_date(X509_get0_notAfter(s->failed), text, sizeof(text));
        snprintf(why, whylen, "%s expired on %s", whose, text);
        break;
    case X509_V_ERR_CERT_NOT_YET_VALID:
        why_date(X509_get0_notBefore(s->failed), text, sizeof(text));
        snprintf(why, whylen, "%s is not valid before %s", whose, text);
        break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        /* at depth 0 the issuer, above it the chain's root: the CA's name either way */
        X509_NAME_oneline(X509_get_issuer_name(s->failed), text, sizeof(text));
        snprintf(why, whylen,
                 "the collector's certificate (issued by %s) is not signed by the CA in tls.ca %s",
                 text, why_name(pem->ca_file));
        break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        why_san_list(s->failed, text, sizeof(text));
        snprintf(why, whylen, "the collector's certificate is for %s, not %s", text, host);
        break;
    default:
        snprintf(why, whylen, "%s does not verify against tls.ca %s: %s", whose,
                 why_name(pem->ca_file), X509_verify_cert_error_string(s->verify_error));
    }
}

/* What the collector's alert says about our certificate. */
static const char *why_alert_text(int alert)
{
    switch (alert) {
    case SSL3_AD_BAD_CERTIFICATE:
        return "bad certificate";
    case SSL3_AD_UNSUPPORTED_CERTIFICATE:
        return "unsupported certificate (a client certificate needs extendedKeyUsage clientAuth)";
    case SSL3_AD_CERTIFICATE_REVOKED:
        return "the certificate is revoked";
    case SSL3_AD_CERTIFICATE_EXPIRED:
        return "the collector finds it expired or not yet valid (compare the clocks)";
    case SSL3_AD_CERTIFICATE_UNKNOWN:
        return "certificate unknown";
    case TLS1_AD_UNKNOWN_CA:
        return "it is not signed by a CA in the collector's tls.ca";
    case TLS13_AD_CERTIFICATE_REQUIRED:
        return "no certificate arrived";
    default:
        return SSL_alert_desc_string_long(alert);
    }
}

/* The sentence for the collector's fatal alert. */
static void why_client_cert(const struct why_seen *s, const struct tls_pem *pem, char *why,
                            size_t whylen)
{
    STACK_OF(X509) *chain = why_certs(pem->cert);
    bool ours = chain && why_chain_error(chain, pem->ca) == X509_V_OK;

    if (!chain &&
        (s->alert == TLS13_AD_CERTIFICATE_REQUIRED || s->alert == SSL3_AD_HANDSHAKE_FAILURE))
        snprintf(why, whylen,
                 "the collector asked for a client certificate and none is set (tls.cert, "
                 "tls.key)");
    else if (chain && !ours) /* said as when it closes without an alert: which one
                              * gRPC's server sends, if any, is a race of its shutdown */
        snprintf(why, whylen,
                 "the collector refused our client certificate (tls.cert %s): it is not signed by "
                 "the CA in tls.ca %s, which signed the collector's",
                 why_name(pem->cert_file), why_name(pem->ca_file));
    else if (chain)
        snprintf(why, whylen, "the collector refused our client certificate (tls.cert %s): %s",
                 why_name(pem->cert_file), why_alert_text(s->alert));
    else
        snprintf(why, whylen, "the collector ended the handshake: %s",
                 SSL_alert_desc_string_long(s->alert));
    sk_X509_pop_free(chain, X509_free);
}

/* --- the handshake -------------------------------------------------------- */

/* HOST and PORT of target (see tls_why.h). 0 or -EINVAL. */
static int why_split(const char *target, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon;
    size_t n;

    if (strncmp(target, "dns:///", 7) == 0)
        target += 7;
    else if (strncmp(target, "ipv4:", 5) == 0 || strncmp(target, "ipv6:", 5) == 0)
        target += 5;
    colon = strrchr(target, ':');
    if (!colon || !colon[1])
        return -EINVAL;
    n = (size_t)(colon - target);
    if (n >= 2 && target[0] == '[' && target[n - 1] == ']')
        target++, n -= 2;
    if (!n || n >= hostlen || strlen(colon + 1) >= portlen)
        return -EINVAL;
    memcpy(host, target, n);
    host[n] = '\0';
    snprintf(port, portlen, "%s", colon + 1);
    return 0;
}

/* A connected TCP socket to one address within timeout_ms, or -errno. */
static int why_connect_one(const struct addrinfo *a, int timeout_ms)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof(err);

    if (fd < 0)
        return -errno;
    if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS)
        err = errno;
    else if (poll(&p, 1, timeout_ms) != 1)
        err = ETIMEDOUT;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err) {
        close(fd);
        return -err;
    }
    return fd;
}

/* A TCP connection to host:port (blocking, with timeout_ms on each read
 * and write), or -errno with the reason in why. */
static int why_connect(const char *host, const char *port, int timeout_ms, char *why, size_t whylen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int fd = -ENOENT, g = getaddrinfo(host, port, &hints, &res);

    if (g != 0) {
        snprintf(why, whylen, "%s does not resolve: %s", host, gai_strerror(g));
        return -ENOENT;
    }
    for (const struct addrinfo *a = res; a && fd < 0; a = a->ai_next)
        fd = why_connect_one(a, timeout_ms);
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(why, whylen, "no TCP connection to %s:%s: %s", host, port, strerror(-fd));
        return fd;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

static int why_verify_cb(int ok, X509_STORE_CTX *ctx)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct why_seen *s = SSL_get_app_data(ssl);

    if (!ok && !s->verify_error) {
        s->verify_error = X509_STORE_CTX_get_error(ctx);
        s->depth = X509_STORE_CTX_get_error_depth(ctx);
        s->failed = X509_STORE_CTX_get_current_cert(ctx);
        if (s->failed)
            X509_up_ref(s->failed);
        else
            s->verify_error = 0;
    }
    return 1; /* go on: the collector's verdict on our certificate counts too */
}

static void why_info_cb(const SSL *ssl, int where, int ret)
{
    struct why_seen *s = SSL_get_app_data(ssl);

    if ((where & SSL_CB_READ_ALERT) && (ret >> 8) == SSL3_AL_FATAL && s->alert < 0)
        s->alert = ret & 0xff;
}

/* A client context as gRPC's: tls.ca to verify, our certificate chain and
 * key when set, ALPN h2. NULL on failure. */
static SSL_CTX *why_ctx(const struct tls_pem *pem)
{
    static const unsigned char alpn[] = {2, 'h', '2'};
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    STACK_OF(X509) *cas = ctx ? why_certs(pem->ca) : NULL;
    STACK_OF(X509) *chain = ctx ? why_certs(pem->cert) : NULL;
    BIO *bio = chain && pem->key ? BIO_new_mem_buf(pem->key, -1) : NULL;
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    bool ok = ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
              SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn)) == 0;

    for (int i = 0; ok && cas && i < sk_X509_num(cas); i++)
        ok = X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), sk_X509_value(cas, i)) == 1;
    if (ok && chain && key)
        ok = SSL_CTX_use_certificate(ctx, sk_X509_value(chain, 0)) == 1 &&
             SSL_CTX_use_PrivateKey(ctx, key) == 1;
    for (int i = 1; ok && chain && key && i < sk_X509_num(chain); i++)
        ok = SSL_CTX_add1_chain_cert(ctx, sk_X509_value(chain, i)) == 1;
    if (ok)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, why_verify_cb);
    EVP_PKEY_free(key);
    BIO_free(bio);
    sk_X509_pop_free(chain, X509_free);
    sk_X509_pop_free(cas, X509_free);
    if (!ok)
        SSL_CTX_free(ctx);
    return ok ? ctx : NULL;
}

/* Note a CertificateRequest from the collector. */
static void why_msg_cb(int write_p, int version, int content_type, const void *buf, size_t len,
                       SSL *ssl, void *arg)
{
    struct why_seen *s = SSL_get_app_data(ssl);

    if (!write_p && content_type == SSL3_RT_HANDSHAKE && len &&
        ((const unsigned char *)buf)[0] == SSL3_MT_CERTIFICATE_REQUEST)
        s->asked = true;
}

/* The first read after the handshake, as an outcome. */
static enum why_outcome why_first_read(SSL *ssl)
{
    char byte;
    int n = SSL_read(ssl, &byte, 1), err = SSL_get_error(ssl, n);

    if (n == 1)
        return WHY_ANSWERED;
    if (err == SSL_ERROR_WANT_READ ||
        (err == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK)))
        return WHY_SILENT;
    return WHY_CLOSED;
}

/* The handshake on fd, then the HTTP/2 preface and the collector's first
 * bytes: a refusal of our certificate comes after our side of the
 * handshake in TLS 1.3 (an alert, or gRPC's server just closes). */
static enum why_outcome why_handshake(int fd, SSL_CTX *ctx, const char *host, struct why_seen *s)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                  "\0\0\0\4\0\0\0\0\0"; /* an empty SETTINGS frame */
    unsigned char ip[16];
    SSL *ssl = SSL_new(ctx);
    enum why_outcome o = WHY_FAILED;

    if (!ssl)
        return WHY_FAILED;
    SSL_set_app_data(ssl, s);
    SSL_set_info_callback(ssl, why_info_cb);
    SSL_set_msg_callback(ssl, why_msg_cb);
    SSL_set_fd(ssl, fd);
    if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
    } else {
        SSL_set_tlsext_host_name(ssl, host);
        X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl), host, 0);
    }
    if (SSL_connect(ssl) == 1) {
        SSL_write(ssl, preface, sizeof(preface) - 1); /* a refusal may precede it: read anyway */
        o = why_first_read(ssl);
    }
    SSL_free(ssl);
    return o;
}

/* The collector closed the connection after our certificate, without an
 * alert (gRPC's server does so): what is wrong with ours, as far as we can
 * tell (its CA signed the collector's, which we verified). */
static void why_closed(const struct tls_pem *pem, char *why, size_t whylen)
{
    STACK_OF(X509) *chain = why_certs(pem->cert);

    if (!chain)
        snprintf(why, whylen,
                 "the collector asked for a client certificate and none is set (tls.cert, "
                 "tls.key)");
    else if (why_chain_error(chain, pem->ca) != X509_V_OK)
        snprintf(why, whylen,
                 "the collector refused our client certificate (tls.cert %s): it is not signed by "
                 "the CA in tls.ca %s, which signed the collector's",
                 why_name(pem->cert_file), why_name(pem->ca_file));
    else
        snprintf(why, whylen,
                 "the collector closed the connection after our client certificate (tls.cert %s) "
                 "without a reason; its log says why (does its tls.ca hold the CA that signed "
                 "ours?)",
                 why_name(pem->cert_file));
    sk_X509_pop_free(chain, X509_free);
}

/* Steps 2 and 3 (tls_why.h) on a connected socket. */
static int why_remote(int fd, const struct tls_pem *pem, const char *host, const char *port,
                      char *why, size_t whylen)
{
    struct why_seen s = {.alert = -1};
    SSL_CTX *ctx = why_ctx(pem);
    enum why_outcome o;
    unsigned long err;
    int r = TLS_WHY_FOUND;

    if (!ctx) {
        snprintf(why, whylen, "cannot set up OpenSSL with tls.ca %s and tls.cert %s",
                 why_name(pem->ca_file), why_name(pem->cert_file));
        return TLS_WHY_FOUND;
    }
    ERR_clear_error();
    o = why_handshake(fd, ctx, host, &s);
    if (s.verify_error)
        why_server_cert(&s, pem, host, why, whylen);
    else if (o == WHY_ANSWERED)
        r = TLS_WHY_NOTHING;
    else if (s.alert >= 0)
        why_client_cert(&s, pem, why, whylen);
    else if (o == WHY_CLOSED && s.asked)
        why_closed(pem, why, whylen);
    else if (o == WHY_FAILED && (err = ERR_peek_error()) &&
             ERR_GET_REASON(err) == SSL_R_WRONG_VERSION_NUMBER)
        snprintf(why, whylen, "%s:%s does not speak TLS (a collector with grpc.plaintext = true?)",
                 host, port);
    else
        r = TLS_WHY_NOTHING; /* no verdict: gRPC's own reason stands */
    ERR_clear_error();
    X509_free(s.failed);
    SSL_CTX_free(ctx);
    return r;
}

/* why_remote with SIGPIPE held back in this thread (a collector that
 * closes first must not kill the caller), a pending one consumed. */
static int why_remote_nosigpipe(int fd, const struct tls_pem *pem, const char *host,
                                const char *port, char *why, size_t whylen)
{
    struct timespec zero = {0, 0};
    sigset_t pipe, old;
    int r;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    r = why_remote(fd, pem, host, port, why, whylen);
    while (sigtimedwait(&pipe, NULL, &zero) == SIGPIPE)
        ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

int tls_why_diagnose(const char *target, const struct tls_pem *pem, int timeout_ms, char *why,
                     size_t whylen)
{
    STACK_OF(X509) *chain = why_certs(pem->cert);
    char host[256], port[32];
    int fd, r = TLS_WHY_NOTHING;

    if (why_split(target, host, sizeof(host), port, sizeof(port)) < 0) {
        snprintf(why, whylen, "'%s' is not HOST:PORT", target);
        sk_X509_pop_free(chain, X509_free);
        return -EINVAL;
    }
    fd = why_connect(host, port, timeout_ms, why, whylen);
    if (fd >= 0 && chain)
        r = why_dates(sk_X509_value(chain, 0), pem->cert_file, (int64_t)time(NULL), why, whylen);
    if (fd >= 0 && r == TLS_WHY_NOTHING)
        r = why_remote_nosigpipe(fd, pem, host, port, why, whylen);
    if (fd >= 0)
        close(fd);
    sk_X509_pop_free(chain, X509_free);
    return fd < 0 ? fd : r;
}
