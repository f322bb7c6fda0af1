#include "collector/alerts/sinks/alertmanager.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/alerts/sinks/sink.h"
#include "common/causes.h"
#include "common/pbjson.h"

/* RFC 3339 UTC with milliseconds, as Alertmanager reads it. */
static void am_rfc3339(uint64_t ns, char *out, size_t len)
{
    time_t s = (time_t)(ns / 1000000000ull);
    struct tm tm;
    char base[32];

    gmtime_r(&s, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03uZ", base, (unsigned)(ns / 1000000ull % 1000));
}

static struct json_object *am_labels(struct json_object *al)
{
    struct json_object *l = json_object_new_object(), *fl = NULL;
    const char *ranks = "";
    const struct causes_row *c = causes_by_name(pbjson_str(al, "cause"));
    int cause = c ? (int)c->value : 0;
    char gpu[16] = "";

    json_object_object_get_ex(al, "labels", &fl);
    if (fl && pbjson_str(fl, "ranks"))
        ranks = pbjson_str(fl, "ranks");
    if (fl && pbjson_int(fl, "gpu", -1) >= 0)
        snprintf(gpu, sizeof(gpu), "%d", pbjson_int(fl, "gpu", -1));
    pbjson_put_str(l, "alertname", causes_alertname(cause));
    pbjson_put_str(l, "job", pbjson_str(al, "job"));
    pbjson_put_str(l, "cause", pbjson_str(al, "cause"));
    pbjson_put_str(l, "subject", pbjson_str(al, "subject"));
    pbjson_put_str(l, strchr(ranks, ',') ? "ranks" : "rank", ranks);
    if (pbjson_str(al, "node") && *pbjson_str(al, "node"))
        pbjson_put_str(l, "node", pbjson_str(al, "node"));
    if (*gpu)
        pbjson_put_str(l, "gpu", gpu);
    pbjson_put_str(l, "level", fl && pbjson_str(fl, "level") ? pbjson_str(fl, "level") : "");
    pbjson_put_str(l, "severity", causes_severity(cause));
    return l;
}

int alert_sink_alertmanager_append(struct json_object *am, struct json_object *event,
                                   uint64_t now_ns, uint64_t ends_ahead_ns)
{
    struct json_object *al, *o, *ann, *cost;
    const char *schema = pbjson_str(event, "schema"), *status = pbjson_str(event, "status");
    bool resolved = status && strcmp(status, "resolved") == 0;
    uint64_t starts, ends;
    char t[48], hours[32];

    if (!schema || strcmp(schema, ALERT_SINK_SCHEMA) != 0 || !status ||
        !json_object_object_get_ex(event, "alert", &al))
        return -EINVAL;
    starts = pbjson_u64(al, "firing_unix_ns");
    ends = resolved ? pbjson_u64(al, "resolved_unix_ns") : now_ns + ends_ahead_ns;
    o = json_object_new_object();
    ann = json_object_new_object();
    json_object_object_add(o, "labels", am_labels(al));
    pbjson_put_str(ann, "summary", pbjson_str(al, "summary"));
    pbjson_put_str(ann, "evidence", pbjson_str(al, "evidence"));
    pbjson_put_str(ann, "report", pbjson_str(event, "report_url"));
    pbjson_put_str(ann, "report_id", pbjson_str(al, "report_id"));
    double h =
        json_object_object_get_ex(al, "gpu_hours_lost", &cost) ? json_object_get_double(cost) : 0;
    /* whole hours from 100, two decimals from 1, four below (as argusctl) */
    snprintf(hours, sizeof(hours), "%.*f", h >= 100 ? 0 : h >= 1 ? 2 : 4, h);
    pbjson_put_str(ann, "gpu_hours_lost", hours);
    json_object_object_add(o, "annotations", ann);
    /* startsAt is the finding's onset by the agents' clocks (the same from
     * both collectors of a pair); one ahead of endsAt (a clock far off)
     * would be refused, so it becomes now. */
    am_rfc3339(starts && starts < ends ? starts : now_ns, t, sizeof(t));
    pbjson_put_str(o, "startsAt", t);
    am_rfc3339(ends, t, sizeof(t));
    pbjson_put_str(o, "endsAt", t);
    if (pbjson_str(event, "report_url") && *pbjson_str(event, "report_url"))
        pbjson_put_str(o, "generatorURL", pbjson_str(event, "report_url"));
    json_object_array_add(am, o);
    return 0;
}

static int alertmanager_deliver(const struct alert_sink *s, const struct alert_sink_batch *b,
                                char *err, size_t errlen)
{
    struct json_object *am = json_object_new_array();
    uint64_t ends_ahead = 4 * s->settings->resend_ns;
    size_t tl = strlen(s->target);
    char url[1024];
    int rc = am ? 0 : -ENOMEM;

    for (size_t i = 0; i < b->n && rc == 0; i++) {
        struct json_object *ev = json_tokener_parse(b->events[i]);
        rc = ev ? alert_sink_alertmanager_append(am, ev, b->now_ns, ends_ahead) : -EINVAL;
        json_object_put(ev);
    }
    if (rc < 0)
        snprintf(err, errlen, "an alert event that is not %s JSON", ALERT_SINK_SCHEMA);
    if (rc == 0) {
        snprintf(url, sizeof(url), "%.*s/api/v2/alerts",
                 (int)(tl && s->target[tl - 1] == '/' ? tl - 1 : tl), s->target);
        rc = alert_sink_post(url, NULL, json_object_to_json_string_ext(am, JSON_C_TO_STRING_PLAIN),
                             s->settings->http_timeout_ns, err, errlen);
    }
    json_object_put(am);
    return rc;
}

const struct alert_sink_ops alert_sink_alertmanager = {
    .name = "alertmanager",
    .check = alert_sink_check_http_url,
    .deliver = alertmanager_deliver,
    .resends = true,
};
