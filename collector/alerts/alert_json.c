#include "collector/alerts/alert_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/causes.h"
#include "common/pbjson.h"

/* The level as labels carry it ("L2"); read back, the proto name of
 * states stored before the short names is accepted too. */
static const char *alert_level_name(int level)
{
    return causes_level_label(level);
}

static int alert_level_value(const char *name)
{
    return causes_level_by_label(name);
}

static struct json_object *alert_labels_json(const struct alert *a)
{
    struct json_object *l = json_object_new_object();

    pbjson_put_str(l, "ranks", a->fired_ranks);
    json_object_object_add(l, "gpu", json_object_new_int(a->fired_gpu));
    pbjson_put_str(l, "level", alert_level_name(a->fired_level));
    return l;
}

struct json_object *alert_to_json(const struct alert *a)
{
    struct json_object *o = json_object_new_object(), *ranks = json_object_new_array();

    if (!o || !ranks) {
        json_object_put(o);
        json_object_put(ranks);
        return NULL;
    }
    pbjson_put_str(o, "id", a->id);
    pbjson_put_str(o, "job", a->job);
    pbjson_put_str(o, "subject", a->subject);
    pbjson_put_str(o, "cause", causes_get(a->cause)->label);
    pbjson_put_str(o, "level", alert_level_name(a->level));
    pbjson_put_str(o, "status", alert_status_name(a->status));
    json_object_object_add(o, "fired", json_object_new_boolean(a->fired));
    for (uint32_t i = 0; i < a->n_ranks; i++)
        json_object_array_add(ranks, json_object_new_int64(a->ranks[i]));
    json_object_object_add(o, "ranks", ranks);
    json_object_object_add(o, "more_ranks", json_object_new_int64(a->more_ranks));
    pbjson_put_str(o, "node", a->node);
    json_object_object_add(o, "gpu", json_object_new_int(a->gpu));
    pbjson_put_str(o, "group", a->group);
    pbjson_put_str(o, "where", a->where);
    json_object_object_add(o, "score", json_object_new_double(a->score));
    json_object_object_add(o, "gpu_hours_lost", json_object_new_double(a->gpu_hours_lost));
    pbjson_put_str(o, "summary", a->summary);
    pbjson_put_str(o, "evidence", a->evidence);
    pbjson_put_str(o, "report_id", a->report_id);
    pbjson_put_u64(o, "created_unix_ns", a->created_ns);
    pbjson_put_u64(o, "firing_unix_ns", a->firing_ns);
    pbjson_put_u64(o, "resolved_unix_ns", a->resolved_ns);
    pbjson_put_u64(o, "updated_unix_ns", a->updated_ns);
    json_object_object_add(o, "labels", alert_labels_json(a));
    return o;
}

static void alert_ranks_from_json(struct json_object *o, struct alert *a)
{
    struct json_object *ranks, *labels;

    if (json_object_object_get_ex(o, "ranks", &ranks) &&
        json_object_is_type(ranks, json_type_array))
        for (size_t i = 0; i < json_object_array_length(ranks) && i < ALERT_MAX_RANKS; i++)
            a->ranks[a->n_ranks++] =
                (uint32_t)json_object_get_int64(json_object_array_get_idx(ranks, i));
    a->more_ranks = (uint32_t)pbjson_int(o, "more_ranks", 0);
    if (json_object_object_get_ex(o, "labels", &labels)) {
        snprintf(a->fired_ranks, sizeof(a->fired_ranks), "%s",
                 pbjson_str(labels, "ranks") ? pbjson_str(labels, "ranks") : "");
        a->fired_gpu = pbjson_int(labels, "gpu", -1);
        a->fired_level =
            alert_level_value(pbjson_str(labels, "level") ? pbjson_str(labels, "level") : "");
    }
}

int alert_from_json(struct json_object *o, struct alert *a)
{
    const char *id = pbjson_str(o, "id"), *job = pbjson_str(o, "job"),
               *st = pbjson_str(o, "status");
    const char *subject = pbjson_str(o, "subject"), *cause = pbjson_str(o, "cause");
    struct json_object *fired;

    memset(a, 0, sizeof(*a));
    if (!id || !job || !st || !subject || !cause)
        return -EINVAL;
    a->job = strdup(job);
    if (!a->job)
        return -ENOMEM;
    snprintf(a->id, sizeof(a->id), "%s", id);
    snprintf(a->subject, sizeof(a->subject), "%s", subject);
    const struct causes_row *row = causes_by_name(cause);

    a->cause = row ? row->value : 0;
    a->level = alert_level_value(pbjson_str(o, "level") ? pbjson_str(o, "level") : "");
    a->status = strcmp(st, "firing") == 0     ? ALERT_FIRING
                : strcmp(st, "resolved") == 0 ? ALERT_RESOLVED
                                              : ALERT_PENDING;
    a->fired = json_object_object_get_ex(o, "fired", &fired) && json_object_get_boolean(fired);
    alert_ranks_from_json(o, a);
#define ALERT_STR(f) snprintf(a->f, sizeof(a->f), "%s", pbjson_str(o, #f) ? pbjson_str(o, #f) : "")
    ALERT_STR(node);
    ALERT_STR(group);
    ALERT_STR(where);
    ALERT_STR(summary);
    ALERT_STR(evidence);
    ALERT_STR(report_id);
#undef ALERT_STR
    a->gpu = pbjson_int(o, "gpu", -1);
    {
        struct json_object *v;
        a->score = json_object_object_get_ex(o, "score", &v) ? json_object_get_double(v) : 0;
        a->gpu_hours_lost =
            json_object_object_get_ex(o, "gpu_hours_lost", &v) ? json_object_get_double(v) : 0;
        a->gpu_hours_before = a->gpu_hours_lost;
    }
    a->created_ns = pbjson_u64(o, "created_unix_ns");
    a->firing_ns = pbjson_u64(o, "firing_unix_ns");
    a->resolved_ns = pbjson_u64(o, "resolved_unix_ns");
    a->updated_ns = pbjson_u64(o, "updated_unix_ns");
    return 0;
}

/* Append s to *out (len, cap); -ENOMEM when it cannot grow. */
static int url_append(char **out, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = (*len + n + 1) * 2;
        char *grown = realloc(*out, c);
        if (!grown)
            return -ENOMEM;
        *out = grown;
        *cap = c;
    }
    memcpy(*out + *len, s, n);
    *len += n;
    (*out)[*len] = '\0';
    return 0;
}

char *alert_report_url(const char *templ, const char *id, const char *job)
{
    char *out = NULL;
    size_t len = 0, cap = 0;
    int rc = url_append(&out, &len, &cap, "", 0);

    for (const char *p = templ; rc == 0 && *p;) {
        if (strncmp(p, "{id}", 4) == 0) {
            rc = url_append(&out, &len, &cap, id, strlen(id));
            p += 4;
        } else if (strncmp(p, "{job}", 5) == 0) {
            rc = url_append(&out, &len, &cap, job, strlen(job));
            p += 5;
        } else {
            rc = url_append(&out, &len, &cap, p++, 1);
        }
    }
    if (rc < 0) {
        free(out);
        return NULL;
    }
    return out;
}

char *alert_event_json(const struct alert *a, const char *report_url)
{
    struct json_object *o = json_object_new_object(), *al = alert_to_json(a);
    char *url = alert_report_url(report_url ? report_url : "", a->report_id, a->job);
    char *text = NULL;

    if (o && al && url) {
        pbjson_put_str(o, "schema", ALERT_SINK_SCHEMA);
        pbjson_put_str(o, "status", alert_status_name(a->status));
        json_object_object_add(o, "alert", al);
        al = NULL;
        pbjson_put_str(o, "report_url", report_url && *report_url && a->report_id[0] ? url : "");
        json_object_object_add(
            o, "report", a->report ? pbjson_from_message(&a->report->base, NULL, NULL) : NULL);
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(o);
    json_object_put(al);
    free(url);
    return text;
}
