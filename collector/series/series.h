/* collector/series/: it takes in what diagnosis holds of each job
 * and gives out Prometheus series: the text exposition of /metrics and the
 * remote write sender (remote_write.h).
 *
 * The per-job series for Prometheus: what collector/diag/diagnosis.h summarises
 * of each job, as samples with low-cardinality labels (job, cause; the top
 * straggler's rank, node, GPU and level: one top straggler per job, never a
 * series per rank; never phase or kernel names). One collection is a
 * series_set, written as text exposition by /metrics (collector/metrics.c)
 * and sent by remote write (collector/series/remote_write.c), so both carry the
 * same series. A retired job has no samples: its series disappear. */
#ifndef ARGUS_COLLECTOR_SERIES_H
#define ARGUS_COLLECTOR_SERIES_H

#include <stddef.h>

struct diagnosis;
struct http_buf;

#define SERIES_MAX_LABELS 6

enum series_metric {
    SERIES_LAST_STEP,        /* argus_job_last_step{job} */
    SERIES_STEP_P50,         /* argus_job_step_seconds_p50{job} */
    SERIES_STEP_MAX,         /* argus_job_step_seconds_max{job} */
    SERIES_SUSPECTS,         /* argus_job_suspects{cause,job} */
    SERIES_TOP_STRAGGLER,    /* argus_job_top_straggler_slowdown{cause,gpu,job,node,rank} */
    SERIES_TOP_LEVEL_SCORE,  /* argus_job_top_straggler_level_score{gpu,job,level,node,rank,
                              * statistic} */
    SERIES_DIAGNOSIS_LAG,    /* argus_job_diagnosis_lag_seconds{job} */
    SERIES_GPU_SECONDS_LOST, /* argus_job_gpu_seconds_lost_total{cause,job} (a counter) */
    SERIES_DIAG_DEGRADED,    /* argus_diag_degraded{job,reason}: 1 while shedding */
    SERIES_DIAG_SHED,        /* argus_job_diag_shed_records_total{job,reason} (a counter) */
    SERIES_METRIC_N,
};

struct series_sample {
    enum series_metric metric;
    const char *label_names[SERIES_MAX_LABELS]; /* static; sorted by name */
    char *label_values[SERIES_MAX_LABELS];      /* owned by the set */
    int n_labels;
    double value;
};

struct series_set {
    struct series_sample *v;
    size_t n, cap;
    int failed; /* an allocation failed: samples are missing */
};

/* The metric's name, HELP text and TYPE ("gauge"). Static strings. */
const char *series_metric_name(enum series_metric m);
const char *series_metric_help(enum series_metric m);
const char *series_metric_type(enum series_metric m);

/* Append the per-job samples of every job under diagnosis to out (which
 * the caller zeroed or cleared). Returns the number appended, or -ENOMEM
 * (out->failed set, what was appended is kept). */
int series_collect(struct diagnosis *d, struct series_set *out);

/* Append one sample; values are copied. 0 or -ENOMEM. For tests and
 * series_collect. */
int series_add(struct series_set *s, enum series_metric m, const char *name0, const char *value0,
               const char *name1, const char *value1, double value);

/* Append one sample with n labels (at most SERIES_MAX_LABELS; names
 * static and sorted, values copied). 0, -EINVAL (too many) or -ENOMEM. */
int series_add_labels(struct series_set *s, enum series_metric m, const char *const *names,
                      const char *const *values, int n, double value);

/* Free the samples; the set can be reused. */
void series_set_clear(struct series_set *s);

/* Write the set as Prometheus text: each metric's HELP and TYPE, then its
 * samples (metrics without samples are left out). */
void series_write_text(const struct series_set *s, struct http_buf *b);

#endif
