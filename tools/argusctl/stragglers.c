/* Straggler reports as text: see stragglers.h. */
#include "tools/argusctl/stragglers.h"

#include <inttypes.h>
#include <string.h>

#include "common/clock.h"

/* Enum value name without its prefix ("CAUSE_HOST" -> "HOST"). */
static const char *enum_name(const ProtobufCEnumDescriptor *d, int v, size_t skip)
{
    const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);

    return e ? e->name + (strlen(e->name) > skip ? skip : 0) : "?";
}

static void print_suspect(FILE *out, const Argus__V1__Suspect *s)
{
    char rank[16];

    if (s->rank == UINT32_MAX)
        snprintf(rank, sizeof(rank), "job");
    else
        snprintf(rank, sizeof(rank), "%" PRIu32, s->rank);
    fprintf(out,
            "  %-7s rank %-6s node %-16s gpu %-3" PRId32 " %-12s %-14s %-13s %s  persisted %" PRIu32
            "/%" PRIu32 " steps\n",
            s->pages ? "PAGES" : "finding", rank, s->node, s->gpu,
            enum_name(&argus__v1__level__descriptor, s->level, 6),
            enum_name(&argus__v1__cause__descriptor, s->cause, 6), s->group, s->where, s->persisted,
            s->window);
    fprintf(out, "      %s (score %.2f)\n", s->evidence, s->score);
}

void stragglers_print_report(FILE *out, const Argus__V1__Report *rep, bool all)
{
    char t[40];

    fprintf(out, "report %s  job %s  steps %" PRIu64 "-%" PRIu64 "  %s  %s\n  %s\n", rep->id,
            rep->job, rep->from_step, rep->to_step,
            rep->created_unix_ns ? clock_format_rfc3339(rep->created_unix_ns, t, sizeof(t)) : "-",
            rep->pages ? "PAGES" : "finding (pages nobody)", rep->summary);
    for (size_t i = 0; i < rep->n_suspects; i++)
        if (all || rep->suspects[i]->pages)
            print_suspect(out, rep->suspects[i]);
}

size_t stragglers_print(FILE *out, const Argus__V1__StragglersResponse *resp, bool all,
                        const char *job)
{
    size_t shown = 0, hidden = 0;

    for (size_t i = 0; i < resp->n_reports; i++) {
        if (!all && !resp->reports[i]->pages) {
            hidden++;
            continue;
        }
        stragglers_print_report(out, resp->reports[i], all);
        shown++;
    }
    if (!shown && hidden)
        fprintf(out, "nothing pages for job %s\n", job);
    if (hidden)
        fprintf(out, "%zu report%s with findings that page nobody not shown (--all shows them)\n",
                hidden, hidden == 1 ? "" : "s");
    else if (!shown)
        fprintf(out, "no straggler reports for job %s\n", job);
    return shown;
}
