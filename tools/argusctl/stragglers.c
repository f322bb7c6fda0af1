/* Straggler reports as text: see stragglers.h. */
#include "tools/argusctl/stragglers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/causes.h"
#include "common/clock.h"
#include "common/config_value.h"
#include "tools/argusctl/cost.h"

/* Enum value name without its prefix ("CAUSE_HOST" -> "HOST"). */
static const char *enum_name(const ProtobufCEnumDescriptor *d, int v, size_t skip)
{
    const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);

    return e ? e->name + (strlen(e->name) > skip ? skip : 0) : "?";
}

static void print_suspect(FILE *out, const Argus__V1__Suspect *s)
{
    char rank[16], hours[32];

    if (s->rank == UINT32_MAX)
        snprintf(rank, sizeof(rank), "job");
    else
        snprintf(rank, sizeof(rank), "%" PRIu32, s->rank);
    fprintf(out,
            "  %-7s rank %-6s node %-16s gpu %-3" PRId32 " %-12s %-14s %-13s %s  persisted %" PRIu32
            "/%" PRIu32 " steps\n",
            s->pages ? "PAGES" : "finding", rank, s->node, s->gpu,
            enum_name(&argus__v1__level__descriptor, s->level, 6),
            causes_known(s->cause) ? causes_get(s->cause)->name : "?", s->group, s->where,
            s->persisted, s->window);
    fprintf(out, "      %s (score %.2f", s->evidence, s->score);
    if (s->gpu_hours_lost > 0)
        fprintf(out, ", cost %s GPU-hours", cost_hours(s->gpu_hours_lost, hours, sizeof(hours)));
    fprintf(out, ")\n");
}

void stragglers_print_report(FILE *out, const Argus__V1__Report *rep, bool all)
{
    char t[40], hours[32];

    fprintf(out, "report %s  job %s  steps %" PRIu64 "-%" PRIu64 "  %s  %s\n  %s\n", rep->id,
            rep->job, rep->from_step, rep->to_step,
            rep->created_unix_ns ? clock_format_rfc3339(rep->created_unix_ns, t, sizeof(t)) : "-",
            rep->pages ? "PAGES" : "finding (pages nobody)", rep->summary);
    /* 0 is printed too: the line says the cost was looked at (a report of
     * an older collector, a finding that slows nothing, says 0) */
    fprintf(out, "  GPU-hours lost %s (%.1f s of the job's time over these steps)\n",
            cost_hours(rep->gpu_hours_lost, hours, sizeof(hours)), rep->seconds_lost);
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

/* The names --cause takes, for its error message: "UNKNOWN, COMPUTE, ...". */
static void stragglers_cause_names(char *buf, size_t len)
{
    buf[0] = 0;
    for (int c = 0; c < causes_count(); c++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", c ? ", " : "", causes_get(c)->name);
}

int stragglers_parse_causes(const char *list, struct stragglers_filter *f, char *err, size_t errlen)
{
    f->causes = 0;
    for (const char *p = list ? list : ""; *p;) {
        size_t len = strcspn(p, ",");
        char name[64];
        const struct causes_row *c = NULL;
        if (len < sizeof(name)) {
            memcpy(name, p, len);
            name[len] = 0;
            c = causes_by_name(name);
        }
        if (!c) {
            char allowed[256];
            stragglers_cause_names(allowed, sizeof(allowed));
            if (len > 6 && strncasecmp(p, "CAUSE_", 6) == 0)
                p += 6, len -= 6; /* the message names it without the prefix */
            snprintf(err, errlen, "--cause: unknown cause '%.*s' (one of: %s)", (int)len, p,
                     allowed);
            return -EINVAL;
        }
        f->causes |= 1u << c->value;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* "+HH:MM", "-HH:MM" or "Z" at s into *seconds east of UTC. */
static int parse_zone(const char *s, long *seconds)
{
    int hh, mm, n = 0;

    if ((s[0] == 'Z' || s[0] == 'z') && !s[1]) {
        *seconds = 0;
        return 0;
    }
    if ((s[0] != '+' && s[0] != '-') || sscanf(s + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || s[1 + n] ||
        hh > 23 || mm > 59)
        return -EINVAL;
    *seconds = (s[0] == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
    return 0;
}

static int parse_rfc3339(const char *text, uint64_t *unix_ns)
{
    struct tm tm = {0};
    const char *p = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
    uint64_t frac = 0, scale = 1000000000ULL;
    long zone;

    if (!p)
        p = strptime(text, "%Y-%m-%d %H:%M:%S", &tm);
    if (!p)
        return -EINVAL;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale > 1) {
                scale /= 10;
                frac += (uint64_t)(*p - '0') * scale;
            }
    }
    if (parse_zone(p, &zone) < 0)
        return -EINVAL;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || t - zone < 0)
        return -EINVAL;
    *unix_ns = (uint64_t)(t - zone) * NSEC_PER_SEC + frac;
    return 0;
}

int stragglers_parse_since(const char *text, uint64_t now_ns, uint64_t *unix_ns)
{
    uint64_t ago;

    if (config_parse_duration(text, &ago) == 0) {
        *unix_ns = ago < now_ns ? now_ns - ago : 0;
        return 0;
    }
    return parse_rfc3339(text, unix_ns);
}

bool stragglers_filter_empty(const struct stragglers_filter *f)
{
    return f->causes == 0 && (!f->node || !*f->node);
}

static bool filter_keeps(const struct stragglers_filter *f, const Argus__V1__Suspect *s)
{
    if (f->causes && (s->cause < 0 || s->cause > 31 || !(f->causes & (1u << s->cause))))
        return false;
    return !f->node || !*f->node || strcmp(f->node, s->node ? s->node : "") == 0;
}

/* One report of the view: a copy of rep's fields with its own list of the
 * suspects f keeps. Returns false when none is kept or on failure (*ok). */
static bool view_report(const Argus__V1__Report *rep, const struct stragglers_filter *f,
                        Argus__V1__Report *copy, bool *ok)
{
    *copy = *rep;
    copy->n_suspects = 0;
    copy->pages = false;
    copy->suspects = calloc(rep->n_suspects ? rep->n_suspects : 1, sizeof(*copy->suspects));
    if (!copy->suspects) {
        *ok = false;
        return false;
    }
    for (size_t i = 0; i < rep->n_suspects; i++) {
        if (!filter_keeps(f, rep->suspects[i]))
            continue;
        copy->suspects[copy->n_suspects++] = rep->suspects[i];
        copy->pages = copy->pages || rep->suspects[i]->pages;
    }
    if (copy->n_suspects == 0)
        free(copy->suspects);
    return copy->n_suspects > 0;
}

Argus__V1__StragglersResponse *stragglers_view(const Argus__V1__StragglersResponse *resp,
                                               const struct stragglers_filter *f)
{
    Argus__V1__StragglersResponse *v = calloc(1, sizeof(*v));
    size_t n = resp->n_reports ? resp->n_reports : 1;
    bool ok = true;

    if (!v)
        return NULL;
    argus__v1__stragglers_response__init(v);
    v->reports = calloc(n, sizeof(*v->reports));
    Argus__V1__Report *copies = calloc(n, sizeof(*copies));
    if (!v->reports || !copies) {
        free(copies);
        stragglers_view_free(v);
        return NULL;
    }
    for (size_t i = 0; i < resp->n_reports && ok; i++) {
        if (view_report(resp->reports[i], f, &copies[v->n_reports], &ok)) {
            v->reports[v->n_reports] = &copies[v->n_reports];
            v->n_reports++;
        }
    }
    if (v->n_reports == 0)
        free(copies); /* else the first report owns the block */
    if (!ok) {
        stragglers_view_free(v);
        return NULL;
    }
    return v;
}

void stragglers_view_free(Argus__V1__StragglersResponse *view)
{
    if (!view)
        return;
    for (size_t i = 0; i < view->n_reports; i++)
        free(view->reports[i]->suspects);
    if (view->n_reports)
        free(view->reports[0]); /* the block of copies */
    free(view->reports);
    free(view);
}
