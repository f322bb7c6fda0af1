#include "collector/alerts/alerts_metrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "collector/alerts/alerts.h"
#include "common/causes.h"

#define ALERTS_METRICS_MAX 256 /* (job, cause) pairs listed */

static const char *const alerts_sink_series[][2] = {
    {"argus_alerts_sent_total", "alert deliveries (and Alertmanager re-sends) that succeeded"},
    {"argus_alerts_failed_total", "alert delivery attempts that failed (retried)"},
    {"argus_alerts_queued", "alert deliveries waiting in the store's queue"},
    {"argus_alerts_queued_oldest_seconds", "age of the oldest alert delivery queued"},
};

struct alerts_sink_ctx {
    struct http_buf *b;
    int series;
    bool first;
};

static void alerts_sink_sample(void *ctx, const struct alerts_sink_stats *st)
{
    struct alerts_sink_ctx *c = ctx;
    double v[] = {(double)st->sent, (double)st->failed, (double)st->queued, st->oldest_age_s};
    char labels[700], e[600];

    snprintf(labels, sizeof(labels), "sink=\"%s\",target=\"%s\"", st->kind,
             http_label_escape(e, sizeof(e), st->target));
    if (c->first)
        http_buf_metric(c->b, alerts_sink_series[c->series][0], c->series < 2 ? "counter" : "gauge",
                        alerts_sink_series[c->series][1], labels, v[c->series]);
    else
        http_buf_sample(c->b, alerts_sink_series[c->series][0], labels, v[c->series]);
    c->first = false;
}

struct alerts_firing_ctx {
    struct {
        char job_copy[160];
        int cause;
        unsigned n;
    } rows[ALERTS_METRICS_MAX];
    size_t n;
};

static void alerts_count_firing(void *ctx, const struct alert *a, bool forgotten)
{
    struct alerts_firing_ctx *c = ctx;
    size_t i;

    if (a->status != ALERT_FIRING)
        return;
    for (i = 0; i < c->n; i++)
        if (c->rows[i].cause == a->cause && strcmp(c->rows[i].job_copy, a->job) == 0)
            break;
    if (i == c->n) {
        if (c->n == ALERTS_METRICS_MAX)
            return;
        snprintf(c->rows[i].job_copy, sizeof(c->rows[i].job_copy), "%s", a->job);
        c->rows[i].cause = a->cause;
        c->rows[i].n = 0;
        c->n++;
    }
    c->rows[i].n++;
}

static void alerts_firing_metrics(struct alerts *a, struct http_buf *b)
{
    static struct alerts_firing_ctx c; /* big: not on the HTTP thread's stack */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    char labels[400], e[320];

    pthread_mutex_lock(&lock);
    c.n = 0;
    alerts_foreach(a, alerts_count_firing, &c);
    for (size_t i = 0; i < c.n; i++) {
        snprintf(labels, sizeof(labels), "job=\"%s\",cause=\"%s\"",
                 http_label_escape(e, sizeof(e), c.rows[i].job_copy),
                 causes_get(c.rows[i].cause)->label);
        if (i == 0)
            http_buf_metric(b, "argus_alerts_firing", "gauge", "alerts firing, per job and cause",
                            labels, c.rows[i].n);
        else
            http_buf_sample(b, "argus_alerts_firing", labels, c.rows[i].n);
    }
    pthread_mutex_unlock(&lock);
}

void alerts_write_metrics(struct alerts *a, struct http_buf *b)
{
    uint64_t limited, errors;

    if (!a)
        return;
    for (int s = 0; s < 4; s++) {
        struct alerts_sink_ctx c = {b, s, true};
        alerts_foreach_sink(a, alerts_sink_sample, &c);
    }
    alerts_firing_metrics(a, b);
    alerts_get_counts(a, &limited, &errors);
    http_buf_metric(b, "argus_alerts_rate_limited_total", "counter",
                    "alerts kept pending by alerts.rate_limit", "", limited);
    http_buf_metric(b, "argus_alerts_store_errors_total", "counter",
                    "alert states or deliveries the store failed to write", "", errors);
}
