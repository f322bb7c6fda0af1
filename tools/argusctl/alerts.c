#include "tools/argusctl/alerts.h"

#include <inttypes.h>
#include <string.h>

#include "common/causes.h"

void alerts_age(uint64_t since_ns, uint64_t now_ns, char *out, size_t len)
{
    uint64_t s = since_ns && now_ns > since_ns ? (now_ns - since_ns) / 1000000000ull : 0;

    if (s < 120)
        snprintf(out, len, "%" PRIu64 "s", s);
    else if (s < 7200)
        snprintf(out, len, "%" PRIu64 "m", s / 60);
    else if (s < 172800)
        snprintf(out, len, "%" PRIu64 "h", s / 3600);
    else
        snprintf(out, len, "%" PRIu64 "d", s / 86400);
}

static const char *alerts_status(Argus__V1__AlertStatus s)
{
    return s == ARGUS__V1__ALERT_STATUS__ALERT_STATUS_FIRING    ? "FIRING"
           : s == ARGUS__V1__ALERT_STATUS__ALERT_STATUS_PENDING ? "pending"
                                                                : "resolved";
}

static const char *alerts_enum(const ProtobufCEnumDescriptor *d, int v, size_t skip)
{
    const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);

    return e && strlen(e->name) > skip ? e->name + skip : "?";
}

static void alerts_print_one(FILE *out, const Argus__V1__Alert *a, uint64_t now_ns)
{
    char age[16], ranks[96] = "-";
    size_t off = 0;
    uint64_t since = a->status == ARGUS__V1__ALERT_STATUS__ALERT_STATUS_FIRING ? a->firing_unix_ns
                     : a->status == ARGUS__V1__ALERT_STATUS__ALERT_STATUS_RESOLVED
                         ? a->resolved_unix_ns
                         : a->created_unix_ns;

    alerts_age(since, now_ns, age, sizeof(age));
    for (size_t i = 0; i < a->n_ranks && off + 12 < sizeof(ranks); i++)
        off += (size_t)snprintf(ranks + off, sizeof(ranks) - off, "%s%" PRIu32, i ? "," : "",
                                a->ranks[i]);
    fprintf(out, "%-8s %6s  %-20s %-8s %-22s %-12s %-9s %s\n", alerts_status(a->status), age,
            a->job, causes_known(a->cause) ? causes_get(a->cause)->name : "?", a->subject, ranks,
            alerts_enum(&argus__v1__level__descriptor, a->level, 9), a->summary);
}

size_t alerts_print(FILE *out, const Argus__V1__AlertsResponse *resp, uint64_t now_ns,
                    const char *job)
{
    static const Argus__V1__AlertStatus order[] = {ARGUS__V1__ALERT_STATUS__ALERT_STATUS_FIRING,
                                                   ARGUS__V1__ALERT_STATUS__ALERT_STATUS_PENDING,
                                                   ARGUS__V1__ALERT_STATUS__ALERT_STATUS_RESOLVED};
    size_t n = 0;

    if (!resp->n_alerts) {
        fprintf(out, "no alerts%s%s\n", job && *job ? " for job " : "", job ? job : "");
        return 0;
    }
    fprintf(out, "%-8s %6s  %-20s %-8s %-22s %-12s %-9s %s\n", "STATUS", "AGE", "JOB", "CAUSE",
            "SUBJECT", "RANKS", "LEVEL", "SUMMARY");
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < resp->n_alerts; i++)
            if (resp->alerts[i]->status == order[k] ||
                (k == 2 &&
                 resp->alerts[i]->status == ARGUS__V1__ALERT_STATUS__ALERT_STATUS_UNKNOWN)) {
                alerts_print_one(out, resp->alerts[i], now_ns);
                n++;
            }
    return n;
}
