#include "tools/argusctl/actions.h"

#include <inttypes.h>
#include <string.h>

#include "common/causes.h"
#include "tools/argusctl/alerts.h"

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
