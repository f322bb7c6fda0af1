/* Where the GPU-hours went: see cost.h. */
#include "tools/argusctl/cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/causes.h"

static const char *const cost_by_names[] = {"node", "cause", "job"};

const char *cost_hours(double hours, char *buf, size_t len)
{
    snprintf(buf, len, "%.*f", hours >= 100 ? 0 : hours >= 1 ? 2 : 4, hours);
    return buf;
}

int cost_parse_by(const char *text, enum cost_by *by)
{
    for (int i = 0; i < 3; i++)
        if (text && strcmp(text, cost_by_names[i]) == 0) {
            *by = (enum cost_by)i;
            return 0;
        }
    return -EINVAL;
}

/* The row of key, added when new; NULL on ENOMEM. */
static struct cost_row *cost_row(struct cost_table *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].key, key) == 0)
            return &t->rows[i];
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct cost_row *grown = realloc(t->rows, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        t->rows = grown;
        t->cap = cap;
    }
    struct cost_row *r = &t->rows[t->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->key, sizeof(r->key), "%s", key);
    return r;
}

/* Count hours of report id in row r, keeping its top reports. */
static void cost_row_add(struct cost_row *r, const char *id, double hours)
{
    uint32_t i;

    r->gpu_hours += hours;
    r->reports++;
    if (r->n_top < COST_TOP_REPORTS)
        r->n_top++;
    else if (hours <= r->top[COST_TOP_REPORTS - 1].gpu_hours)
        return;
    for (i = r->n_top - 1; i > 0 && r->top[i - 1].gpu_hours < hours; i--)
        r->top[i] = r->top[i - 1];
    snprintf(r->top[i].id, sizeof(r->top[i].id), "%s", id);
    r->top[i].gpu_hours = hours;
}

/* The key suspect s counts under. */
static const char *cost_key(const struct cost_table *t, const Argus__V1__Suspect *s)
{
    if (t->by == COST_BY_CAUSE)
        return causes_known(s->cause) ? causes_get(s->cause)->name : "?";
    return s->node && *s->node ? s->node : "(unknown node)";
}

int cost_add(struct cost_table *t, const Argus__V1__Report *rep)
{
    const char *id = rep->id ? rep->id : "";

    if (t->by == COST_BY_JOB) {
        struct cost_row *r = rep->gpu_hours_lost > 0 ? cost_row(t, rep->job ? rep->job : "") : NULL;
        if (rep->gpu_hours_lost > 0 && !r)
            return -ENOMEM;
        if (r)
            cost_row_add(r, id, rep->gpu_hours_lost);
        t->gpu_hours += r ? rep->gpu_hours_lost : 0;
        t->reports += r != NULL;
        return 0;
    }
    double total = 0;
    for (size_t i = 0; i < rep->n_suspects; i++) { /* each key once: its suspects' sum */
        const char *key = cost_key(t, rep->suspects[i]);
        double hours = 0;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = rep->suspects[j]->gpu_hours_lost > 0 &&
                   strcmp(cost_key(t, rep->suspects[j]), key) == 0;
        for (size_t j = i; j < rep->n_suspects && !seen; j++)
            if (strcmp(cost_key(t, rep->suspects[j]), key) == 0)
                hours +=
                    rep->suspects[j]->gpu_hours_lost > 0 ? rep->suspects[j]->gpu_hours_lost : 0;
        if (seen || hours <= 0)
            continue;
        struct cost_row *r = cost_row(t, key);
        if (!r)
            return -ENOMEM;
        cost_row_add(r, id, hours);
        total += hours;
    }
    t->gpu_hours += total;
    t->reports += total > 0;
    return 0;
}

static int cost_cmp(const void *a, const void *b)
{
    const struct cost_row *x = a, *y = b;

    if (x->gpu_hours != y->gpu_hours)
        return x->gpu_hours < y->gpu_hours ? 1 : -1;
    return strcmp(x->key, y->key);
}

void cost_sort(struct cost_table *t)
{
    if (t->n)
        qsort(t->rows, t->n, sizeof(*t->rows), cost_cmp);
}

void cost_print(FILE *out, const struct cost_table *t, const char *since)
{
    if (!t->n) {
        fprintf(out, "no GPU-hours lost to stragglers since %s\n", since);
        return;
    }
    fprintf(out, "%-24s %12s %8s  %s\n",
            t->by == COST_BY_NODE    ? "NODE"
            : t->by == COST_BY_CAUSE ? "CAUSE"
                                     : "JOB",
            "GPU-HOURS", "REPORTS", "TOP REPORTS");
    char h[32];

    for (size_t i = 0; i < t->n; i++) {
        const struct cost_row *r = &t->rows[i];
        fprintf(out, "%-24s %12s %8u  ", r->key, cost_hours(r->gpu_hours, h, sizeof(h)),
                r->reports);
        for (uint32_t k = 0; k < r->n_top; k++)
            fprintf(out, "%s%s", k ? ", " : "", r->top[k].id);
        fputc('\n', out);
    }
    fprintf(out, "%-24s %12s %8u  since %s\n", "total", cost_hours(t->gpu_hours, h, sizeof(h)),
            t->reports, since);
}

static struct json_object *cost_row_json(const struct cost_row *r)
{
    struct json_object *o = json_object_new_object(), *top = json_object_new_array();

    for (uint32_t k = 0; o && top && k < r->n_top; k++) {
        struct json_object *x = json_object_new_object();
        json_object_object_add(x, "id", json_object_new_string(r->top[k].id));
        json_object_object_add(x, "gpu_hours", json_object_new_double(r->top[k].gpu_hours));
        json_object_array_add(top, x);
    }
    if (!o || !top) {
        json_object_put(o);
        json_object_put(top);
        return NULL;
    }
    json_object_object_add(o, "key", json_object_new_string(r->key));
    json_object_object_add(o, "gpu_hours", json_object_new_double(r->gpu_hours));
    json_object_object_add(o, "reports", json_object_new_int64(r->reports));
    json_object_object_add(o, "top_reports", top);
    return o;
}

struct json_object *cost_json(const struct cost_table *t)
{
    struct json_object *o = json_object_new_object(), *rows = json_object_new_array();

    if (!o || !rows) {
        json_object_put(o);
        json_object_put(rows);
        return NULL;
    }
    json_object_object_add(o, "by", json_object_new_string(cost_by_names[t->by]));
    json_object_object_add(o, "gpu_hours", json_object_new_double(t->gpu_hours));
    json_object_object_add(o, "reports", json_object_new_int64(t->reports));
    for (size_t i = 0; i < t->n; i++)
        json_object_array_add(rows, cost_row_json(&t->rows[i]));
    json_object_object_add(o, "rows", rows);
    return o;
}

void cost_free(struct cost_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = t->cap = 0;
    t->gpu_hours = 0;
    t->reports = 0;
}
