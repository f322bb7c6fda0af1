#include "collector/alerts/sinks/alertmanager.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/alerts/sinks/sink.h"

static void am_put_str(struct json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

static const char *am_str(struct json_object *o, const char *k)
{
    struct json_object *v;

    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

static uint64_t am_u64(struct json_object *o, const char *k)
{
    const char *s = am_str(o, k);

    return s ? strtoull(s, NULL, 10) : 0;
}

static int am_int(struct json_object *o, const char *k, int def)
{
    struct json_object *v;

    return json_object_object_get_ex(o, k, &v) ? json_object_get_int(v) : def;
}

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
    char gpu[16] = "";

    json_object_object_get_ex(al, "labels", &fl);
    if (fl && am_str(fl, "ranks"))
        ranks = am_str(fl, "ranks");
    if (fl && am_int(fl, "gpu", -1) >= 0)
        snprintf(gpu, sizeof(gpu), "%d", am_int(fl, "gpu", -1));
    am_put_str(l, "alertname", "ArgusStraggler");
    am_put_str(l, "job", am_str(al, "job"));
    am_put_str(l, "cause", am_str(al, "cause"));
    am_put_str(l, "subject", am_str(al, "subject"));
    am_put_str(l, strchr(ranks, ',') ? "ranks" : "rank", ranks);
    if (am_str(al, "node") && *am_str(al, "node"))
        am_put_str(l, "node", am_str(al, "node"));
    if (*gpu)
        am_put_str(l, "gpu", gpu);
    am_put_str(l, "level", fl && am_str(fl, "level") ? am_str(fl, "level") : "");
    am_put_str(l, "severity", "page");
    return l;
}

int alert_sink_alertmanager_append(struct json_object *am, struct json_object *event,
                                   uint64_t now_ns, uint64_t ends_ahead_ns)
{
    struct json_object *al, *o, *ann;
    const char *schema = am_str(event, "schema"), *status = am_str(event, "status");
    bool resolved = status && strcmp(status, "resolved") == 0;
    uint64_t starts, ends;
    char t[48];

    if (!schema || strcmp(schema, ALERT_SINK_SCHEMA) != 0 || !status ||
        !json_object_object_get_ex(event, "alert", &al))
        return -EINVAL;
    starts = am_u64(al, "firing_unix_ns");
    ends = resolved ? am_u64(al, "resolved_unix_ns") : now_ns + ends_ahead_ns;
    o = json_object_new_object();
    ann = json_object_new_object();
    json_object_object_add(o, "labels", am_labels(al));
    am_put_str(ann, "summary", am_str(al, "summary"));
    am_put_str(ann, "evidence", am_str(al, "evidence"));
    am_put_str(ann, "report", am_str(event, "report_url"));
    am_put_str(ann, "report_id", am_str(al, "report_id"));
    json_object_object_add(o, "annotations", ann);
    am_rfc3339(starts ? starts : now_ns, t, sizeof(t));
    am_put_str(o, "startsAt", t);
    am_rfc3339(ends, t, sizeof(t));
    am_put_str(o, "endsAt", t);
    if (am_str(event, "report_url") && *am_str(event, "report_url"))
        am_put_str(o, "generatorURL", am_str(event, "report_url"));
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
