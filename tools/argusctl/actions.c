#include "tools/argusctl/actions.h"

#include <inttypes.h>
#include <string.h>

#include "common/causes.h"
#include "common/clock.h"
#include "common/pbjson.h"
#include "common/rpc_paths.h"
#include "tools/argusctl/alerts.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/target.h"

/* The first line of s, at most 60 bytes, into out. */
static const char *actions_excerpt(const char *s, char *out, size_t len)
{
    size_t n = strcspn(s, "\n");

    snprintf(out, len, "%.*s", (int)(n > 60 ? 60 : n), s);
    return out;
}

void actions_print_one(FILE *out, const Argus__V1__Action *a, uint64_t now_ns)
{
    char age[16], ex[64], status[16] = "-";
    const char *text = strcmp(a->kind, "drain") == 0 ? a->output : a->reason;

    alerts_age(a->created_unix_ns, now_ns, age, sizeof(age));
    if (a->exit_status >= 0)
        snprintf(status, sizeof(status), "%d", a->exit_status);
    fprintf(out, "%-6s %6s  %-13s %-16s %-8s %-9s %4s  %-6s %-24s %s%s%s\n", a->id, age, a->kind,
            a->node[0] ? a->node : "-",
            strcmp(a->kind, "breaker_reset") == 0 ? "-" : causes_get(a->cause)->name, a->outcome,
            status, a->undone ? "yes" : "no", a->report_id[0] ? a->report_id : "-",
            actions_excerpt(text, ex, sizeof(ex)), a->by[0] ? " by " : "", a->by);
}

size_t actions_print(FILE *out, const Argus__V1__ActionsResponse *resp, uint64_t now_ns)
{
    const Argus__V1__ActionBreaker *b = resp->breaker;
    char age[16];

    if (b && b->open) {
        alerts_age(b->opened_unix_ns, now_ns, age, sizeof(age));
        fprintf(out, "breaker: OPEN for %s: %s\n", age, b->reason);
    } else {
        fprintf(out, "breaker: closed (%zu of %" PRIu32 " hook runs in the last %.0f s)\n",
                b ? b->n_recent_unix_ns : 0, resp->max, (double)resp->window_ns / 1e9);
    }
    fprintf(out, "mode: %s\n",
            !resp->enabled  ? "off (actions.rules names no cause)"
            : resp->dry_run ? "dry run (actions.dry_run = true): hooks are not run"
                            : "hooks run");
    if (resp->n_actions == 0) {
        fprintf(out, "no actions recorded\n");
        return 0;
    }
    fprintf(out, "%-6s %6s  %-13s %-16s %-8s %-9s %4s  %-6s %-24s %s\n", "ID", "AGE", "KIND",
            "NODE", "CAUSE", "OUTCOME", "EXIT", "UNDONE", "REPORT", "OUTPUT / REASON");
    for (size_t i = 0; i < resp->n_actions; i++)
        actions_print_one(out, resp->actions[i], now_ns);
    return resp->n_actions;
}

/* Call method with req; on success print the reply (JSON, or print_table). */
static int actions_call(const struct actions_command *o, const char *method,
                        const ProtobufCMessage *req, const ProtobufCMessageDescriptor *type,
                        void (*print_table)(const ProtobufCMessage *m))
{
    ProtobufCMessage *resp;
    struct json_object *j;
    int r = ctl_target_call(o->target, method, req, type, o->timeout_ms, false, &resp);

    if (r)
        return r;
    if (o->json) {
        j = pbjson_from_message(resp, NULL, NULL);
        puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
    } else {
        print_table(resp);
    }
    protobuf_c_message_free_unpacked(resp, NULL);
    return CTL_OK;
}

static void actions_table_list(const ProtobufCMessage *m)
{
    actions_print(stdout, (const Argus__V1__ActionsResponse *)m, clock_real_ns());
}

static void actions_table_undo(const ProtobufCMessage *m)
{
    const Argus__V1__ActionUndoResponse *r = (const Argus__V1__ActionUndoResponse *)m;

    if (r->action)
        actions_print_one(stdout, r->action, clock_real_ns());
}

static void actions_table_reset(const ProtobufCMessage *m)
{
    printf("breaker closed (it was %s)\n",
           ((const Argus__V1__ActionsResetResponse *)m)->was_open ? "open" : "closed already");
}

int actions_command(const struct actions_command *o, const char *sub, const char *arg)
{
    Argus__V1__ActionsRequest list = ARGUS__V1__ACTIONS_REQUEST__INIT;
    Argus__V1__ActionUndoRequest undo = ARGUS__V1__ACTION_UNDO_REQUEST__INIT;
    Argus__V1__ActionsResetRequest reset = ARGUS__V1__ACTIONS_RESET_REQUEST__INIT;

    if (o->is_set) {
        fprintf(stderr, "argusctl: actions are each collector's own (the primary of a job acts): "
                        "name one collector with --collector HOST:PORT\n");
        return CTL_USAGE;
    }
    if (!sub) {
        list.limit = o->limit;
        return actions_call(o, RPC_QUERY_ACTIONS, &list.base,
                            &argus__v1__actions_response__descriptor, actions_table_list);
    }
    if (strcmp(sub, "undo") == 0 && arg) {
        undo.id = (char *)arg;
        return actions_call(o, RPC_QUERY_ACTION_UNDO, &undo.base,
                            &argus__v1__action_undo_response__descriptor, actions_table_undo);
    }
    if (strcmp(sub, "reset") == 0) {
        reset.note = (char *)(arg ? arg : "");
        return actions_call(o, RPC_QUERY_ACTIONS_RESET, &reset.base,
                            &argus__v1__actions_reset_response__descriptor, actions_table_reset);
    }
    fprintf(stderr, "argusctl: usage: argusctl actions [undo ID | reset [NOTE]]\n");
    return CTL_USAGE;
}
