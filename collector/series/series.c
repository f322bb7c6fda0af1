#include "collector/series/series.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_blind.h"
#include "collector/diag/diagnosis.h"
#include "common/causes.h"
#include "common/http.h"

static const char *const series_names[SERIES_METRIC_N][2] = {
    [SERIES_LAST_STEP] = {"argus_job_last_step", "per job: the last step closed and diagnosed"},
    [SERIES_STEP_P50] = {"argus_job_step_seconds_p50",
                         "per job: time of the last closed step, median over ranks"},
    [SERIES_STEP_MAX] = {"argus_job_step_seconds_max",
                         "per job: time of the last closed step, max over ranks (the job's pace)"},
    [SERIES_SUSPECTS] = {"argus_job_suspects",
                         "per job and cause: suspects (ranks, or nodes) in reports of the last "
                         "two persistence windows"},
    [SERIES_TOP_STRAGGLER] = {"argus_job_top_straggler_slowdown",
                              "per job: slowdown of the recent paging rank suspect (compute, "
                              "link, host, silent) that runs slowest against its peers: its own "
                              "step time over its peers' median, 1.0 = healthy, the same scale "
                              "at every level; labels rank, node, gpu and cause are that rank's"},
    [SERIES_TOP_LEVEL_SCORE] = {"argus_job_top_straggler_level_score",
                                "per job: the same rank's score as the level that found it "
                                "measures it (label statistic: robust_z at L2, w1_ratio at L3); "
                                "not comparable across levels"},
    [SERIES_DIAGNOSIS_LAG] = {"argus_job_diagnosis_lag_seconds",
                              "per job: how far diagnosis runs behind receipt (feed lag plus "
                              "the wait of the oldest open step)"},
    [SERIES_GPU_SECONDS_LOST] = {"argus_job_gpu_seconds_lost_total",
                                 "per job and cause: GPU-seconds the job's suspects cost it "
                                 "(GPU-hours x 3600: Prometheus's base unit; "
                                 "collector/diag/diag_cost.h), summed over its reports"},
    [SERIES_DIAG_DEGRADED] = {"argus_diag_degraded",
                              "per job and reason (memory, horizon, queue_full): 1 while its "
                              "diagnosis sheds work (an ArgusBlind episode), else 0"},
    [SERIES_DIAG_SHED] = {"argus_job_diag_shed_records_total",
                          "per job and reason: step records not diagnosed (dropped for memory, "
                          "beyond the late horizon, kept out by the full queue)"},
};

const char *series_metric_name(enum series_metric m)
{
    return series_names[m][0];
}

const char *series_metric_help(enum series_metric m)
{
    return series_names[m][1];
}

const char *series_metric_type(enum series_metric m)
{
    return m == SERIES_GPU_SECONDS_LOST || m == SERIES_DIAG_SHED ? "counter" : "gauge";
}

int series_add(struct series_set *s, enum series_metric m, const char *name0, const char *value0,
               const char *name1, const char *value1, double value)
{
    const char *names[] = {name0, name1}, *values[] = {value0, value1};

    return series_add_labels(s, m, names, values, !name0 ? 0 : !name1 ? 1 : 2, value);
}

int series_add_labels(struct series_set *s, enum series_metric m, const char *const *names,
                      const char *const *values, int n, double value)
{
    struct series_sample x = {.metric = m, .value = value};

    if (n > SERIES_MAX_LABELS)
        return -EINVAL;

    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        struct series_sample *grown = realloc(s->v, cap * sizeof(*grown));
        if (!grown)
            goto nomem;
        s->v = grown;
        s->cap = cap;
    }
    for (int i = 0; i < n; i++) {
        x.label_names[i] = names[i];
        x.label_values[i] = strdup(values[i]);
        x.n_labels++;
        if (!x.label_values[i])
            goto nomem;
    }
    s->v[s->n++] = x;
    return 0;
nomem:
    for (int i = 0; i < x.n_labels; i++)
        free(x.label_values[i]);
    s->failed = 1;
    return -ENOMEM;
}

/* The statistic a level's Suspect.score is. */
static const char *series_statistic(int level)
{
    switch (level) {
    case ARGUS__V1__LEVEL__LEVEL_L1_ITERATION:
        return "step_ratio";
    case ARGUS__V1__LEVEL__LEVEL_L2_PHASE:
        return "robust_z";
    case ARGUS__V1__LEVEL__LEVEL_L3_KERNEL:
        return "w1_ratio";
    default:
        return "score";
    }
}

/* The job's top straggler: its slowdown, and its level's own score. */
static int series_top(struct series_set *s, const char *job, const struct diagnosis_job_series *j)
{
    char rank[16], gpu[16];

    snprintf(rank, sizeof(rank), "%u", j->top_rank);
    snprintf(gpu, sizeof(gpu), "%d", j->top_gpu);
    const char *n1[] = {"cause", "gpu", "job", "node", "rank"};
    const char *v1[] = {causes_get(j->top_cause)->label, gpu, job, j->top_node, rank};
    const char *n2[] = {"gpu", "job", "level", "node", "rank", "statistic"};
    const char *v2[] = {gpu,         job,  causes_level_label(j->top_level),
                        j->top_node, rank, series_statistic(j->top_level)};
    int err = series_add_labels(s, SERIES_TOP_STRAGGLER, n1, v1, 5, j->top_slowdown);
    return err | series_add_labels(s, SERIES_TOP_LEVEL_SCORE, n2, v2, 6, j->top_score);
}

/* diagnosis_series_fn: one job's samples. */
static void series_job(void *ctx, const char *job, const struct diagnosis_job_series *j)
{
    struct series_set *s = ctx;
    int err = 0;

    if (j->has_step) {
        err |= series_add(s, SERIES_LAST_STEP, "job", job, NULL, NULL, (double)j->step);
        err |= series_add(s, SERIES_STEP_P50, "job", job, NULL, NULL, j->step_p50_s);
        err |= series_add(s, SERIES_STEP_MAX, "job", job, NULL, NULL, j->step_max_s);
    }
    for (int c = 0; c < causes_count(); c++)
        err |= series_add(s, SERIES_SUSPECTS, "cause", causes_get(c)->label, "job", job,
                          j->suspects[c]);
    if (j->has_top)
        err |= series_top(s, job, j);
    err |= series_add(s, SERIES_DIAGNOSIS_LAG, "job", job, NULL, NULL, j->lag_s);
    for (int c = 0; c < causes_count(); c++)
        if (j->gpu_hours_lost[c] > 0)
            err |= series_add(s, SERIES_GPU_SECONDS_LOST, "cause", causes_get(c)->label, "job", job,
                              j->gpu_hours_lost[c] * 3600);
    for (int r = 0; r < DIAG_BLIND_N; r++) {
        err |= series_add(s, SERIES_DIAG_DEGRADED, "job", job, "reason", diag_blind_reason_name(r),
                          j->blind[r]);
        if (j->shed[r]) /* as the GPU-seconds: there once something was shed */
            err |= series_add(s, SERIES_DIAG_SHED, "job", job, "reason", diag_blind_reason_name(r),
                              (double)j->shed[r]);
    }
    (void)err; /* failures are in s->failed */
}

int series_collect(struct diagnosis *d, struct series_set *out)
{
    size_t before = out->n;

    diagnosis_foreach_series(d, series_job, out);
    return out->failed ? -ENOMEM : (int)(out->n - before);
}

void series_set_clear(struct series_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        for (int l = 0; l < s->v[i].n_labels; l++)
            free(s->v[i].label_values[l]);
    free(s->v);
    *s = (struct series_set){0};
}

void series_write_text(const struct series_set *s, struct http_buf *b)
{
    char labels[SERIES_MAX_LABELS * 300], e[SERIES_MAX_LABELS][256];

    for (int m = 0; m < SERIES_METRIC_N; m++) {
        int first = 1;
        for (size_t i = 0; i < s->n; i++) {
            const struct series_sample *x = &s->v[i];
            if (x->metric != (enum series_metric)m)
                continue;
            size_t off = 0;
            labels[0] = '\0';
            for (int l = 0; l < x->n_labels; l++)
                off +=
                    (size_t)snprintf(labels + off, off < sizeof(labels) ? sizeof(labels) - off : 0,
                                     "%s%s=\"%s\"", l ? "," : "", x->label_names[l],
                                     http_label_escape(e[l], sizeof(e[l]), x->label_values[l]));
            if (first)
                http_buf_metric(b, series_metric_name(m), series_metric_type(m),
                                series_metric_help(m), labels, x->value);
            else
                http_buf_sample(b, series_metric_name(m), labels, x->value);
            first = 0;
        }
    }
}
