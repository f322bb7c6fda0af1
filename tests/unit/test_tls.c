/* common/tls: identity and roles of certificates made here with openssl
 * (skipped without it), the errors of tls_pem_load naming the file, expiry,
 * and the plaintext-or-TLS choice. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/tls.h"

static char dir[64];
static bool have_openssl;

/* Make DIR/name.{key,crt}, self-signed, with subject and (optional) SAN. */
static void make_cert(const char *name, const char *subj, const char *san)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 "
             "-keyout %s/%s.key -out %s/%s.crt -subj '%s' %s%s >/dev/null 2>&1",
             dir, name, dir, name, subj, san ? "-addext subjectAltName=" : "", san ? san : "");
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    strcpy(dir, "/tmp/argus-test-tls-XXXXXX");
    assert_non_null(mkdtemp(dir));
    have_openssl = system("command -v openssl >/dev/null") == 0;
    if (!have_openssl)
        return 0;
    make_cert("dns", "/OU=agent/CN=cn-name", "DNS:dns-name,URI:argus://x");
    make_cert("uri", "/OU=query/CN=cn-name", "URI:spiffe://argus/node-7");
    make_cert("cn", "/OU=agent/OU=query/CN=only-cn", NULL);
    make_cert("none", "/OU=ops/CN=no-role", NULL);
    make_cert("admin", "/OU=query/OU=admin/CN=an-admin", NULL);
    make_cert("spaces", "/CN=two words", NULL);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static char *read_pem(const char *name)
{
    char path[128], err[256];
    struct tls_pem p;
    char *cert;

    snprintf(path, sizeof(path), "%s/%s.crt", dir, name);
    char key[128];
    snprintf(key, sizeof(key), "%s/%s.key", dir, name);
    assert_int_equal(tls_pem_load(&(struct tls_files){path, path, key}, &p, err, sizeof(err)), 0);
    cert = strdup(p.cert);
    tls_pem_free(&p);
    return cert;
}

static void expect_identity(const char *cert, const char *want, unsigned want_roles)
{
    char *pem = read_pem(cert), name[TLS_MAX_IDENTITY];
    unsigned roles;

    assert_int_equal(tls_cert_identity(pem, name, sizeof(name), &roles), 0);
    assert_string_equal(name, want);
    assert_int_equal(roles, want_roles);
    free(pem);
}

static void test_identity_and_roles(void **state)
{
    if (!have_openssl)
        skip();
    expect_identity("dns", "dns-name", TLS_ROLE_AGENT); /* DNS SAN before URI and CN */
    expect_identity("uri", "spiffe://argus/node-7", TLS_ROLE_QUERY);
    expect_identity("cn", "only-cn", TLS_ROLE_AGENT | TLS_ROLE_QUERY);
    expect_identity("none", "no-role", 0);
    expect_identity("admin", "an-admin", TLS_ROLE_QUERY | TLS_ROLE_ADMIN);
    assert_string_equal(tls_role_name(0), "none");
    assert_string_equal(tls_role_name(TLS_ROLE_AGENT | TLS_ROLE_QUERY), "agent+query");
    assert_string_equal(tls_role_name(TLS_ROLE_QUERY | TLS_ROLE_ADMIN), "query+admin");
    assert_string_equal(tls_role_name(TLS_ROLE_ALL), "agent+query+admin");
}

static void test_name_not_an_id_refused(void **state)
{
    char *pem, name[TLS_MAX_IDENTITY];
    unsigned roles = 99;

    if (!have_openssl)
        skip();
    pem = read_pem("spaces");
    assert_int_equal(tls_cert_identity(pem, name, sizeof(name), &roles), -EINVAL);
    assert_int_equal(roles, 0);
    free(pem);
    pem = read_pem("none"); /* "no-role" does not fit in 4 bytes: refused, not cut */
    assert_int_equal(tls_cert_identity(pem, name, 4, &roles), -EINVAL);
    free(pem);
    assert_int_equal(tls_cert_identity("not a pem", name, sizeof(name), &roles), -EINVAL);
}

static void expect_load_error(const char *ca, const char *cert, const char *key, const char *needle)
{
    struct tls_pem p = {0};
    char err[512] = "";

    assert_true(tls_pem_load(&(struct tls_files){ca, cert, key}, &p, err, sizeof(err)) < 0);
    assert_null(p.cert);
    if (!strstr(err, needle))
        fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_load_errors_name_the_file(void **state)
{
    char crt[128], key[128], other_key[128], missing[128];

    if (!have_openssl)
        skip();
    snprintf(crt, sizeof(crt), "%s/dns.crt", dir);
    snprintf(key, sizeof(key), "%s/dns.key", dir);
    snprintf(other_key, sizeof(other_key), "%s/uri.key", dir);
    snprintf(missing, sizeof(missing), "%s/missing.crt", dir);
    expect_load_error(crt, missing, key, "tls.cert");
    expect_load_error(crt, missing, key, "No such file");
    expect_load_error(crt, crt, other_key, "is not the key of the certificate");
    expect_load_error(key, crt, key, "tls.ca");
    expect_load_error(crt, key, key, "holds no PEM certificate");
    expect_load_error(crt, crt, crt, "holds no PEM private key");
    expect_load_error(crt, crt, "", "tls.key is not set");
}

static void test_expiry(void **state)
{
    int64_t end;
    char *pem;

    if (!have_openssl)
        skip();
    pem = read_pem("cn");
    assert_int_equal(tls_cert_not_after(pem, &end), 0);
    assert_true(end > time(NULL) + 29 * 86400 && end <= time(NULL) + 31 * 86400);
    assert_int_equal(tls_cert_not_after("junk", &end), -EINVAL);
    free(pem);
}

static void test_choose(void **state)
{
    struct tls_files none = {"", NULL, ""}, some = {"ca", "", ""};
    char err[256];

    assert_int_equal(tls_choose(true, &none, "P", "F", err, sizeof(err)), 0);
    assert_int_equal(tls_choose(false, &some, "P", "F", err, sizeof(err)), 1);
    assert_int_equal(tls_choose(false, &none, "P", "F", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no TLS configured"));
    assert_int_equal(tls_choose(true, &some, "P", "F", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "both set"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_and_roles),
        cmocka_unit_test(test_name_not_an_id_refused),
        cmocka_unit_test(test_load_errors_name_the_file),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_choose),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
