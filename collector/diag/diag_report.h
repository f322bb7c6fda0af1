/* Building argus.v1.Report and Suspect messages for the diagnosis engine.
 *
 * Every string and array of a report built here is malloc'd and owned by the
 * report; diag_report_free releases the whole tree (not protobuf-c's
 * free_unpacked: these were never unpacked).
 */
#ifndef ARGUS_COLLECTOR_DIAG_REPORT_H
#define ARGUS_COLLECTOR_DIAG_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Rank of a job-level suspect (data skew, job regression). */
#define DIAG_RANK_NONE UINT32_MAX

/* A new suspect; strings are copied (NULL means ""). NULL on ENOMEM. */
Argus__V1__Suspect *diag_suspect_new(uint32_t rank, const char *node, int32_t gpu,
                                     const char *group, Argus__V1__Level level,
                                     Argus__V1__Cause cause, const char *where, double score,
                                     uint32_t persisted, uint32_t window, const char *evidence);

/* A new empty report for job, made at created_unix_ns (this collector's
 * clock), with a provisional id "<created ns, 20 digits>-<job hash, 8
 * hex>-<seq, 6 digits>" that diag_report_identify replaces once the report
 * is complete. NULL on ENOMEM. */
Argus__V1__Report *diag_report_new(const char *job, uint64_t created_unix_ns, uint64_t seq);

/* Give the complete report r (suspects, from_step and to_step set) its id
 * from its data only, so that two collectors fed the same records (the
 * primary and the standby of a job) give the same id to the same finding:
 * "<onset ns, 20 digits>-<job hash, 8 hex>-<finding hash, 12 hex>", where
 * onset_unix_ns is when the finding's last step started by the records
 * (0: none said; the id then sorts first) and the finding hash covers
 * to_step and every suspect's rank, node, group, cause and level (not their
 * order, scores or evidence text). Ids sort by onset; distinct findings of a job
 * get distinct ids; the same finding reported again (amended, re-reported
 * while a rank stays silent) gets the same id, and the store keeps the
 * newest. Sets r->onset_unix_ns. 0 or -ENOMEM. */
int diag_report_identify(Argus__V1__Report *r, uint64_t onset_unix_ns);

/* Append s to r (r takes it; on -ENOMEM s is freed). */
int diag_report_add(Argus__V1__Report *r, Argus__V1__Suspect *s);

/* Set the one-line summary from the suspects ("N suspects", or "N findings
 * (pages nobody)" when r->pages is false: call diag_report_mark_pages
 * first); a summary already set (a liveness report's) is kept. 0 or
 * -ENOMEM. */
int diag_report_summarize(Argus__V1__Report *r);

/* Free a suspect built here (not one owned by a report). NULL is fine. */
void diag_suspect_free(Argus__V1__Suspect *s);

/* Free a report built here and everything in it. NULL is fine. */
void diag_report_free(Argus__V1__Report *r);

/* A duration for evidence text: "2,252 ms", "4.5 ms" or "870 us" into buf. */
const char *diag_fmt_ns(char *buf, size_t len, double ns);

/* Pages an on-call: a rank-level suspect (compute, link, host or silent)
 * that persisted. L1 spikes, data skew and job regressions are findings for
 * the report page, not pages about a rank. */
int diag_suspect_pages(const Argus__V1__Suspect *s);

/* Set every suspect's pages flag (diag_suspect_pages) and the report's (any
 * suspect pages). */
void diag_report_mark_pages(Argus__V1__Report *r);

/* Finished reports waiting for the caller (diag_engine_take_reports). */
struct diag_report_queue {
    Argus__V1__Report **reports;
    size_t n;
    size_t max;       /* over this many the oldest goes (counted in dropped) */
    uint64_t seq;     /* reports finished so far: the next report's seq is seq + 1 */
    uint64_t queued;  /* reports queued, ever */
    uint64_t dropped; /* queued reports dropped over max */
};

/* A new report of job (diag_report_new) numbered as the next one q will
 * finish. NULL when out of memory. */
Argus__V1__Report *diag_report_queue_new(const struct diag_report_queue *q, const char *job,
                                         uint64_t created_unix_ns);

/* Finish rep, the findings of the window of `window` steps ending at
 * to_step (which started at onset_unix_ns by the records, 0: unknown), give
 * it its id (diag_report_identify) and queue it; a report without suspects
 * is freed instead. The queue takes rep in every case (freed on -ENOMEM).
 * Returns 0 or -ENOMEM. */
int diag_report_queue_finish(struct diag_report_queue *q, Argus__V1__Report *rep, uint64_t to_step,
                             uint32_t window, uint64_t onset_unix_ns);

/* Hand the queued reports to the caller (*out, free each with
 * diag_report_free and the array with free); the queue is left empty.
 * Returns their number. */
size_t diag_report_queue_take(struct diag_report_queue *q, Argus__V1__Report ***out);

/* Free the queued reports; q is left empty (its counters stay). */
void diag_report_queue_free(struct diag_report_queue *q);

#endif
