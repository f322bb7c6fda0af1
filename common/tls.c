#include "common/tls.h"

#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"

#define TLS_MAX_FILE (1u << 20) /* a PEM file larger than this is not one of ours */

bool tls_files_set(const struct tls_files *f)
{
    return (f->ca && *f->ca) || (f->cert && *f->cert) || (f->key && *f->key);
}

/* Read path into a malloc'd NUL-terminated string. */
static int tls_read_file(const char *what, const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = path && *path ? fopen(path, "re") : NULL;
    char *buf = NULL;
    size_t n = 0;
    int r = 0;

    *out = NULL;
    if (!path || !*path) {
        snprintf(err, errlen, "%s is not set (tls.ca, tls.cert and tls.key go together)", what);
        return -EINVAL;
    }
    if (!f) {
        r = -errno;
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return r;
    }
    buf = malloc(TLS_MAX_FILE + 1);
    if (buf)
        n = fread(buf, 1, TLS_MAX_FILE + 1, f);
    if (!buf || ferror(f) || n > TLS_MAX_FILE) {
        r = !buf ? -ENOMEM : ferror(f) ? -EIO : -EFBIG;
        snprintf(err, errlen, "%s %s: %s", what, path,
                 r == -EFBIG ? "larger than 1 MiB, not a PEM file" : strerror(-r));
        free(buf);
        buf = NULL;
    } else {
        buf[n] = '\0';
    }
    fclose(f);
    *out = buf;
    return r;
}

int tls_choose(bool plaintext, const struct tls_files *f, const char *plaintext_key,
               const char *files_keys, char *err, size_t errlen)
{
    if (plaintext && tls_files_set(f)) {
        snprintf(err, errlen, "%s and %s are both set: choose one", plaintext_key, files_keys);
        return -EINVAL;
    }
    if (!plaintext && !tls_files_set(f)) {
        snprintf(err, errlen,
                 "no TLS configured: set %s (deploy/pki makes a test PKI), or %s on a trusted "
                 "network",
                 files_keys, plaintext_key);
        return -EINVAL;
    }
    return plaintext ? 0 : 1;
}

static X509 *tls_first_cert(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;

    BIO_free(bio);
    return x;
}

/* cert must hold a certificate whose public key matches the key in key. */
static int tls_check_pair(const struct tls_files *f, const struct tls_pem *p, char *err,
                          size_t errlen)
{
    X509 *x = tls_first_cert(p->cert), *ca = tls_first_cert(p->ca);
    BIO *bio = BIO_new_mem_buf(p->key, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    int r = -EINVAL;

    if (!ca)
        snprintf(err, errlen, "tls.ca %s holds no PEM certificate", f->ca);
    else if (!x)
        snprintf(err, errlen, "tls.cert %s holds no PEM certificate", f->cert);
    else if (!key)
        snprintf(err, errlen, "tls.key %s holds no PEM private key (or it is encrypted)", f->key);
    else if (X509_check_private_key(x, key) != 1)
        snprintf(err, errlen, "tls.key %s is not the key of the certificate in tls.cert %s", f->key,
                 f->cert);
    else
        r = 0;
    EVP_PKEY_free(key);
    BIO_free(bio);
    X509_free(ca);
    X509_free(x);
    return r;
}

int tls_pem_load(const struct tls_files *f, struct tls_pem *out, char *err, size_t errlen)
{
    struct tls_pem p = {0};
    int r = tls_read_file("tls.ca", f->ca, &p.ca, err, errlen);

    if (r == 0)
        r = tls_read_file("tls.cert", f->cert, &p.cert, err, errlen);
    if (r == 0)
        r = tls_read_file("tls.key", f->key, &p.key, err, errlen);
    if (r == 0)
        r = tls_check_pair(f, &p, err, errlen);
    if (r == 0) {
        snprintf(p.ca_file, sizeof(p.ca_file), "%s", f->ca);
        snprintf(p.cert_file, sizeof(p.cert_file), "%s", f->cert);
        snprintf(p.key_file, sizeof(p.key_file), "%s", f->key);
    }
    if (r < 0)
        tls_pem_free(&p);
    *out = r < 0 ? (struct tls_pem){0} : p;
    return r;
}

void tls_pem_free(struct tls_pem *p)
{
    free(p->ca);
    free(p->cert);
    if (p->key) /* the private key does not linger in freed memory */
        OPENSSL_cleanse(p->key, strlen(p->key));
    free(p->key);
    *p = (struct tls_pem){0};
}

int tls_cert_not_after(const char *pem, int64_t *unix_s)
{
    X509 *x = tls_first_cert(pem);
    struct tm tm;
    int r = -EINVAL;

    if (x && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1) {
        *unix_s = (int64_t)timegm(&tm);
        r = 0;
    }
    X509_free(x);
    return r;
}

/* Copy an ASN.1 string that is a valid id (printable, no spaces). */
static bool tls_copy_name(const ASN1_STRING *s, char *name, size_t namelen)
{
    const unsigned char *d = ASN1_STRING_get0_data(s);
    int n = ASN1_STRING_length(s);

    if (n <= 0 || (size_t)n >= namelen)
        return false;
    for (int i = 0; i < n; i++)
        if (d[i] <= 0x20 || d[i] >= 0x7f)
            return false;
    memcpy(name, d, (size_t)n);
    name[n] = '\0';
    return true;
}

/* The first SAN of type (GEN_DNS, GEN_URI). */
static bool tls_san(X509 *x, int type, char *name, size_t namelen)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    bool found = false;

    for (int i = 0; names && i < sk_GENERAL_NAME_num(names) && !found; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        if (g->type == type)
            found = tls_copy_name(type == GEN_DNS ? g->d.dNSName : g->d.uniformResourceIdentifier,
                                  name, namelen);
    }
    GENERAL_NAMES_free(names);
    return found;
}

static unsigned tls_roles(const X509_NAME *subject)
{
    unsigned roles = 0;
    int i = -1;

    while ((i = X509_NAME_get_index_by_NID(subject, NID_organizationalUnitName, i)) >= 0) {
        const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
        const char *d = (const char *)ASN1_STRING_get0_data(s);
        int n = ASN1_STRING_length(s);
        if (n == 5 && memcmp(d, "agent", 5) == 0)
            roles |= TLS_ROLE_AGENT;
        else if (n == 5 && memcmp(d, "query", 5) == 0)
            roles |= TLS_ROLE_QUERY;
        else if (n == 5 && memcmp(d, "admin", 5) == 0)
            roles |= TLS_ROLE_ADMIN;
    }
    return roles;
}

int tls_cert_identity(const char *pem, char *name, size_t namelen, unsigned *roles)
{
    X509 *x = tls_first_cert(pem);
    const X509_NAME *subject = x ? X509_get_subject_name(x) : NULL;
    int cn = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
    bool found = false;

    *roles = 0;
    if (x)
        found = tls_san(x, GEN_DNS, name, namelen) || tls_san(x, GEN_URI, name, namelen);
    if (!found && cn >= 0)
        found = tls_copy_name(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn)), name,
                              namelen);
    if (found)
        *roles = tls_roles(subject);
    X509_free(x);
    return found ? 0 : -EINVAL;
}

const char *tls_role_name(unsigned roles)
{
    static const char *const names[] = {"none",  "agent",       "query",       "agent+query",
                                        "admin", "agent+admin", "query+admin", "agent+query+admin"};

    return names[roles & TLS_ROLE_ALL];
}

int tls_config_check(bool plaintext, const char *ca, const char *cert, const char *key,
                     struct config_result *res)
{
    struct tls_files f = {ca, cert, key};
    struct tls_pem pem;
    char err[512];
    int chosen;

    if (res->print)
        return 0;
    chosen = tls_choose(plaintext, &f, "grpc.plaintext = true", "tls.ca, tls.cert and tls.key", err,
                        sizeof(err));
    /* TLS: the files as a start reads them (one unset, missing, not PEM, a
     * key that is not the certificate's), not just named */
    if (chosen == 1 && tls_pem_load(&f, &pem, err, sizeof(err)) == 0)
        tls_pem_free(&pem);
    else if (chosen == 0)
        return 0;
    else {
        config_error(res, "%s", err);
        return 1;
    }
    return 0;
}
