#include "collector/query/query_nodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/fleet/fleet.h"
#include "common/clock.h"
#include "common/rpc_paths.h"
#include "common/tls.h"
#include "proto/argus.pb-c.h"

/* Pack msg into reply (INTERNAL when out of memory). */
static void query_nodes_pack(struct transport_reply *reply, const ProtobufCMessage *msg)
{
    reply->len = protobuf_c_message_get_packed_size(msg);
    reply->data = malloc(reply->len ? reply->len : 1);
    if (!reply->data) {
        reply->status = TRANSPORT_INTERNAL;
        snprintf(reply->message, sizeof(reply->message), "%s", "out of memory");
        return;
    }
    protobuf_c_message_pack(msg, reply->data);
}

static void query_nodes(void *ctx, const struct transport_peer *peer, const void *data, size_t len,
                        struct transport_reply *reply)
{
    Argus__V1__NodesRequest *req;
    Argus__V1__NodesResponse resp = ARGUS__V1__NODES_RESPONSE__INIT;
    int r;

    if (!transport_peer_may(peer, TLS_ROLE_QUERY, RPC_QUERY_NODES, reply))
        return;
    req = argus__v1__nodes_request__unpack(NULL, len, data);
    if (!req) {
        reply->status = TRANSPORT_INVALID_ARGUMENT;
        snprintf(reply->message, sizeof(reply->message), "%s", "not a NodesRequest");
        return;
    }
    r = fleet_answer(ctx, req->since_unix_ns, clock_real_ns(), &resp);
    if (r < 0) {
        reply->status = r == -ENOMEM ? TRANSPORT_INTERNAL : TRANSPORT_UNAVAILABLE;
        snprintf(reply->message, sizeof(reply->message), "%s",
                 r == -ENOMEM ? "out of memory" : "store read failed");
    } else {
        query_nodes_pack(reply, &resp.base);
    }
    fleet_rows_free(&resp);
    argus__v1__nodes_request__free_unpacked(req, NULL);
}

int query_register_nodes(struct transport_server *t, struct fleet *f)
{
    return transport_add_unary(t, RPC_QUERY_NODES, query_nodes, f) ? -EINVAL : 0;
}
