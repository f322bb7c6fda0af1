/* Why a TLS connection to the collector fails, in one sentence for an
 * operator. gRPC core reports every failed handshake as "failed to connect
 * to all addresses"; the collector's log has the reason, the client's does
 * not. This module looks again, with OpenSSL, when a call failed UNAVAILABLE
 * under TLS (argusctl, the agent's exporter):
 *
 *   1. our own certificate, offline: expired or not yet valid (with the
 *      date), and whether it is signed by the CA in tls.ca;
 *   2. TCP to the collector: when that fails, the collector is not there
 *      (the caller's "unreachable", not a TLS problem);
 *   3. a handshake of its own, as gRPC makes it (our certificate and key,
 *      ALPN h2, the collector's certificate verified against tls.ca and the
 *      target's host name or IP), then the first bytes the collector sends:
 *      a failed verification of the collector's certificate, or the alert
 *      the collector sends about ours (TLS 1.3 sends it after the client's
 *      handshake is done, hence the read), becomes the sentence.
 *
 * Sentences name the file that holds the certificate concerned ("tls.cert
 * /etc/argus/ctl.crt", "tls.ca ...": struct tls_pem carries the names). */
#ifndef ARGUS_COMMON_TLS_WHY_H
#define ARGUS_COMMON_TLS_WHY_H

#include <stddef.h>
#include <stdint.h>

struct tls_pem;

/* What tls_why_diagnose found (besides a negative errno). */
enum tls_why_result {
    TLS_WHY_NOTHING = 0, /* the files are fine and the handshake succeeds */
    TLS_WHY_FOUND = 1,   /* a certificate problem: the sentence is in why */
};

/* Step 1 alone: our certificate (pem->cert; "" or NULL: none) at now_s
 * (Unix seconds): expired, not yet valid, or not signed by the CA in
 * pem->ca. Returns TLS_WHY_FOUND with the sentence in why, else
 * TLS_WHY_NOTHING. */
int tls_why_local(const struct tls_pem *pem, int64_t now_s, char *why, size_t whylen);

/* Steps 1 to 3 against target ("HOST:PORT", "[V6]:PORT", gRPC's "dns:///"
 * and "ipv4:" prefixes accepted), each network step bounded by timeout_ms.
 * Returns TLS_WHY_FOUND or TLS_WHY_NOTHING, or when no TCP connection could
 * be made a negative errno (-ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH,
 * -ENOENT: the name does not resolve, -EINVAL: target unparsable) with the
 * reason in why. Blocks up to about 3 * timeout_ms. */
int tls_why_diagnose(const char *target, const struct tls_pem *pem, int timeout_ms, char *why,
                     size_t whylen);

#endif
