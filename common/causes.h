/* The causes of diagnosis as one table: a row per argus.v1.Cause value
 * (proto/argus.proto), UNKNOWN included, saying what the cause means, which
 * levels of diagnosis find it, whether it pages and whom, how its alerts
 * group ranks, what evidence it carries, and its names as users see them.
 * The collector's report summaries, paging rule, recent suspects, alerts
 * and per-job series, argusctl and the heatmap read it; none keeps its own
 * list. Adding a cause is its proto value, its row in common/causes.c and
 * its detector (a cause with per-rank persistence also takes its index in
 * collector/diag/diag_persist.h). tests/unit/test_causes.c checks that the
 * rows are exactly the values of argus__v1__cause__descriptor.
 *
 * The table is constant: every function here is thread-safe. */
#ifndef ARGUS_COMMON_CAUSES_H
#define ARGUS_COMMON_CAUSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Room for causes in fixed arrays indexed by cause value (causes_count() of
 * them are used); common/causes.c asserts that the table fits. */
#define CAUSES_MAX 16

/* The bit of an Argus__V1__Level in causes_row.levels. */
#define CAUSES_LEVEL(level) (1u << (level))

/* Whom a suspect of the cause is for. */
enum causes_audience {
    CAUSES_FOR_NOBODY = 0,    /* nothing to act on (UNKNOWN) */
    CAUSES_FOR_ON_CALL = 1,   /* the on-call of the node: a sick GPU, link, host */
    CAUSES_FOR_JOB_OWNER = 2, /* the job's owner: a finding for the report page */
};

/* What one alert of the cause stands for (collector/alerts/alert_book.h). */
enum causes_grouping {
    CAUSES_GROUP_NODE = 0,  /* the suspect's node ("node:N"), else its rank ("rank:R") */
    CAUSES_GROUP_PEERS = 1, /* its peer group ("group:G") unless that is "" or "job",
                             * else as CAUSES_GROUP_NODE: one bad switch is one alert */
    CAUSES_GROUP_JOB = 2,   /* the job as a whole ("job"): a job-level suspect (no rank)
                             * that pages: argus's own blindness (DIAG_BLIND) */
};

struct causes_row {
    Argus__V1__Cause value;
    const char *name;    /* the proto name without "CAUSE_", as argusctl shows it: "DATA_SKEW" */
    const char *label;   /* Prometheus label and alert JSON value: "data_skew" */
    const char *word;    /* in report summaries: "data skew" */
    const char *meaning; /* one line for people */
    uint32_t levels;     /* CAUSES_LEVEL bits of the levels that report it */
    bool pages;          /* a persisted rank-level suspect pages (diag_suspect_pages) */
    bool persists;       /* flagged per rank and step, kept as M-of-N histories (diag_persist.h) */
    bool fleet;          /* a paging suspect of it counts against its node and GPU in fleet memory
                          * (collector/fleet/): the hardware is suspect, not the job or its code */
    enum causes_audience audience;
    enum causes_grouping grouping;
    const char *evidence;  /* what a suspect's evidence text carries */
    const char *alertname; /* Alertmanager's alertname (NULL: "ArgusStraggler") */
    const char *severity;  /* the alert's severity label (NULL: "page") */
};

/* Number of rows: the values 0 .. causes_count() - 1, at most CAUSES_MAX. */
int causes_count(void);

/* True when cause is a value the table has a row for. */
bool causes_known(int cause);

/* The row of cause; the UNKNOWN row when causes_known(cause) is false.
 * Never NULL; static storage. */
const struct causes_row *causes_get(int cause);

/* The row whose name is name, any case, with or without "CAUSE_" ("host",
 * "HOST", "CAUSE_HOST", "cause_data_skew"); NULL for any other string or
 * NULL. Static storage. */
const struct causes_row *causes_by_name(const char *name);

/* Whether a persisted rank-level suspect of cause pages an on-call
 * (causes_get(cause)->pages): COMPUTE, LINK, HOST, SILENT, HANG, EXITED and
 * GPU_THROTTLED. */
bool causes_pages(int cause);

/* The alertname and severity of an alert of cause: "ArgusStraggler" and
 * "page" unless its row says otherwise (DIAG_BLIND: "ArgusBlind", "warning"). */
const char *causes_alertname(int cause);
const char *causes_severity(int cause);

/* Whether a paging suspect of cause counts against its node in fleet
 * memory (causes_get(cause)->fleet): COMPUTE, LINK, HOST, HANG, EXITED,
 * GPU_THROTTLED;
 * never IMBALANCE, DATA_SKEW or a job regression. */
bool causes_fleet(int cause);

/* The cause value of the index-th row with persists set, counted in value
 * order (collector/diag/diag_persist.h enum diag_cause_index); UNKNOWN past
 * the last. */
Argus__V1__Cause causes_persisted(int index);

/* The short name of an argus.v1.Level as alert labels and Prometheus series
 * carry it: "L1", "L2", "L3", "silent", "liveness"; "unknown" for
 * LEVEL_UNKNOWN and values without a name. Static storage. */
const char *causes_level_label(int level);

/* The Level value of a causes_level_label() name or of the proto name
 * ("L2" or "LEVEL_L2_PHASE": alert states stored before the short names),
 * any case; LEVEL_UNKNOWN (0) for anything else or NULL. */
int causes_level_by_label(const char *label);

#endif
