/* The collector's TLS side of transport.c: server credentials that gRPC
 * fetches again at each new connection's handshake (so replaced files take
 * effect without a restart), and the client identity of a call. Every
 * grpc_ssl_* object of the server lives here. */
#ifndef ARGUS_COLLECTOR_TRANSPORT_TLS_H
#define ARGUS_COLLECTOR_TRANSPORT_TLS_H

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tls.h"

struct transport_tls;

/* Load files (which must stay valid while the result lives) and check them.
 * Returns NULL with a sentence in err (a file that cannot be read or does
 * not hold what it should, or no memory). */
struct transport_tls *transport_tls_new(const struct tls_files *files, char *err, size_t errlen);

/* Free; NULL is fine. The server using the credentials must be destroyed
 * first (its fetcher callback points here). */
void transport_tls_free(struct transport_tls *tt);

/* Server credentials requiring and verifying a client certificate, with a
 * fetcher over tt. The caller releases them after grpc_server_add_http2_port. */
grpc_server_credentials *transport_tls_credentials(struct transport_tls *tt);

/* Read the files again at the next handshake even if they look unchanged. */
void transport_tls_request_reload(struct transport_tls *tt);

/* notAfter of the loaded certificate and CA (Unix seconds). */
void transport_tls_expiry(struct transport_tls *tt, int64_t *cert_not_after, int64_t *ca_not_after);

/* The identity (certificate name; "" when none) and roles of call's client
 * certificate. */
void transport_tls_peer(grpc_call *call, char *identity, size_t len, unsigned *roles);

#endif
