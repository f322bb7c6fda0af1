/* TLS files and certificates: what the collector, the agent and argusctl
 * need around gRPC's SSL credentials. gRPC does the handshake and the chain
 * verification; this module reads the PEM files (with errors that name the
 * file), reads a certificate's expiry, and turns a verified peer certificate
 * into an argus identity.
 *
 * Identity: the node (or user) name is the certificate's first DNS
 * subjectAltName, else its first URI subjectAltName, else its subject CN.
 * Roles come from the subject's organizationalUnit (OU) values: "agent" may
 * push batches, "query" may call the query methods, "admin" may change what
 * the collector did (undo an action, reset the actions' breaker:
 * collector/actions/); a certificate may carry several, one, or none (then
 * it may call nothing). */
#ifndef ARGUS_COMMON_TLS_H
#define ARGUS_COMMON_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLS_ROLE_AGENT 1u /* OU=agent: Ingest/Push */
#define TLS_ROLE_QUERY 2u /* OU=query: the Query methods */
#define TLS_ROLE_ADMIN 4u /* OU=admin: ActionUndo, ActionsReset */
#define TLS_ROLE_ALL (TLS_ROLE_AGENT | TLS_ROLE_QUERY | TLS_ROLE_ADMIN)

#define TLS_MAX_IDENTITY 128
#define TLS_MAX_PATH 256 /* a file name kept for messages (longer ones are cut) */

/* The three files of one side: CA bundle (to verify the peer), own
 * certificate chain and its private key. */
struct tls_files {
    const char *ca, *cert, *key;
};

/* The files' contents, NUL-terminated PEM text (malloc'd; tls_pem_free),
 * and the names of the files they came from (for messages; "" when not
 * known), which a struct copy carries along. */
struct tls_pem {
    char *ca, *cert, *key;
    char ca_file[TLS_MAX_PATH], cert_file[TLS_MAX_PATH], key_file[TLS_MAX_PATH];
};

/* True when any of the three paths is set (non-NULL, non-empty). */
bool tls_files_set(const struct tls_files *f);

/* Read the three files (all must be set) and check that each holds what it
 * should (certificates in ca and cert, a private key matching cert in key).
 * Returns 0, or -errno / -EINVAL with a sentence naming the file in err.
 * On error *out is left empty. */
int tls_pem_load(const struct tls_files *f, struct tls_pem *out, char *err, size_t errlen);
void tls_pem_free(struct tls_pem *p);

/* The client side's choice: TLS when files are set, plaintext only when
 * asked for explicitly (plaintext true), never both. Returns 1 (TLS), 0
 * (plaintext), or -EINVAL with a sentence in err; plaintext_key and
 * files_keys name the settings in it (e.g. "grpc.plaintext", "tls.*"). */
int tls_choose(bool plaintext, const struct tls_files *f, const char *plaintext_key,
               const char *files_keys, char *err, size_t errlen);

struct config_result;

/* The same choice as a config table check (common/config.h), so that
 * --check-config, start and SIGHUP refuse a config that sets neither or both
 * with the reason (config_error), and under TLS the files as a start loads
 * them (tls_pem_load: one of the three unset, a file missing or unreadable,
 * no PEM in it, a key that is not the certificate's); --print-config prints
 * it anyway (a default config sets neither). Returns the number of errors
 * added (0 or 1). */
int tls_config_check(bool plaintext, const char *ca, const char *cert, const char *key,
                     struct config_result *res);

/* The notAfter time (Unix seconds) of the first certificate in pem.
 * Returns 0 or -EINVAL. */
int tls_cert_not_after(const char *pem, int64_t *unix_s);

/* The identity and roles of the first certificate in pem (see above).
 * name gets at most namelen - 1 bytes (longer names are refused). Returns 0,
 * or -EINVAL when the certificate cannot be read or carries no name. */
int tls_cert_identity(const char *pem, char *name, size_t namelen, unsigned *roles);

/* "agent", "query", "agent+query" or "none". */
const char *tls_role_name(unsigned roles);

#endif
