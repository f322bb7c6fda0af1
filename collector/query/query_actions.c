/* The Query methods of the actions stage: see query_actions.h. */
#include "collector/query/query_actions.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/actions/actions.h"
#include "common/rpc_paths.h"
#include "common/tls.h"
#include "proto/argus.pb-c.h"

__attribute__((format(printf, 3, 4))) static void
query_actions_fail(struct transport_reply *reply, int status, const char *fmt, ...)
{
    va_list ap;

    reply->status = status;
    va_start(ap, fmt);
    vsnprintf(reply->message, sizeof(reply->message), fmt, ap);
    va_end(ap);
}

/* Pack msg into reply. */
static void query_actions_reply(struct transport_reply *reply, const ProtobufCMessage *msg)
{
    reply->len = protobuf_c_message_get_packed_size(msg);
    reply->data = malloc(reply->len ? reply->len : 1);
    if (!reply->data)
        query_actions_fail(reply, TRANSPORT_INTERNAL, "%s", "out of memory");
    else
        protobuf_c_message_pack(msg, reply->data);
}

/* Whether a exists and peer holds role; else reply says why. */
static bool query_actions_may(struct actions *a, const struct transport_peer *peer, unsigned role,
                              const char *method, struct transport_reply *reply)
{
    if (!transport_peer_may(peer, role, method, reply))
        return false;
    if (!a)
        query_actions_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "this collector has no actions");
    return a != NULL;
}

static void query_actions_list(void *ctx, const struct transport_peer *peer, const void *data,
                               size_t len, struct transport_reply *reply)
{
    Argus__V1__ActionsRequest *req;

    if (!query_actions_may(ctx, peer, TLS_ROLE_QUERY, RPC_QUERY_ACTIONS, reply))
        return;
    req = argus__v1__actions_request__unpack(NULL, len, data);
    if (!req) {
        query_actions_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not an ActionsRequest");
        return;
    }
    if (actions_list_packed(ctx, req->limit, &reply->data, &reply->len) < 0)
        query_actions_fail(reply, TRANSPORT_INTERNAL, "%s", "out of memory");
    argus__v1__actions_request__free_unpacked(req, NULL);
}

static void query_actions_undo(void *ctx, const struct transport_peer *peer, const void *data,
                               size_t len, struct transport_reply *reply)
{
    Argus__V1__ActionUndoRequest *req;
    Argus__V1__ActionUndoResponse resp = ARGUS__V1__ACTION_UNDO_RESPONSE__INIT;
    char err[240];
    int rc;

    if (!query_actions_may(ctx, peer, TLS_ROLE_ADMIN, RPC_QUERY_ACTION_UNDO, reply))
        return;
    req = argus__v1__action_undo_request__unpack(NULL, len, data);
    if (!req || !req->id[0]) {
        query_actions_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s",
                           "not an ActionUndoRequest with an id");
    } else {
        rc = actions_undo(ctx, req->id, peer->identity ? peer->identity : "", &resp.action, err,
                          sizeof(err));
        if (rc == 0)
            query_actions_reply(reply, &resp.base);
        else
            query_actions_fail(reply,
                               rc == -ENOENT  ? TRANSPORT_NOT_FOUND
                               : rc == -EPERM ? TRANSPORT_FAILED_PRECONDITION
                                              : TRANSPORT_INTERNAL,
                               "%s", err);
        if (resp.action)
            argus__v1__action__free_unpacked(resp.action, NULL);
    }
    if (req)
        argus__v1__action_undo_request__free_unpacked(req, NULL);
}

static void query_actions_reset(void *ctx, const struct transport_peer *peer, const void *data,
                                size_t len, struct transport_reply *reply)
{
    Argus__V1__ActionsResetRequest *req;
    Argus__V1__ActionsResetResponse resp = ARGUS__V1__ACTIONS_RESET_RESPONSE__INIT;
    char err[240];
    bool was_open = false;
    int rc;

    if (!query_actions_may(ctx, peer, TLS_ROLE_ADMIN, RPC_QUERY_ACTIONS_RESET, reply))
        return;
    req = argus__v1__actions_reset_request__unpack(NULL, len, data);
    if (!req) {
        query_actions_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not an ActionsResetRequest");
        return;
    }
    rc = actions_reset(ctx, peer->identity ? peer->identity : "", req->note, &was_open, err,
                       sizeof(err));
    resp.was_open = was_open;
    if (rc == 0)
        query_actions_reply(reply, &resp.base);
    else
        query_actions_fail(reply, TRANSPORT_INTERNAL, "%s", rc == -ENOMEM ? "out of memory" : err);
    argus__v1__actions_reset_request__free_unpacked(req, NULL);
}

int query_register_actions(struct transport_server *t, struct actions *a)
{
    int r = 0;

    r |= transport_add_unary(t, RPC_QUERY_ACTIONS, query_actions_list, a);
    r |= transport_add_unary(t, RPC_QUERY_ACTION_UNDO, query_actions_undo, a);
    r |= transport_add_unary(t, RPC_QUERY_ACTIONS_RESET, query_actions_reset, a);
    return r ? -EINVAL : 0;
}
