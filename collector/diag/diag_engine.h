/* collector/diag, the diagnosis stage: it takes in the argus.v1.StepRecords
 * of one job, as ingest stores them (through the adapter collector/diagnosis.h,
 * which keeps this stage free of the store and of logging), and gives out
 * argus.v1.Report messages: the suspect ranks, each with a cause (compute,
 * link, host, data skew, silent, job regression), where (phase or kernel)
 * and its evidence in numbers. The engine (this header) is the entry point;
 * diag_steps.h is its window of open steps, diag_frame.h the features kept of
 * each record, diag_l1/l2/l3.h the three levels (with diag_groups.h,
 * diag_colls.h, diag_pipeline.h and diag_stats.h under them), diag_persist.h
 * the M-of-N persistence, diag_evidence.h and diag_report.h the output.
 *
 * The collector's online straggler diagnosis for one job (DESIGN.md
 * section 7): feed step records in any order across ranks; a step closes when
 * every known rank reported it or a timeout after its first record passed (a
 * silent rank is a finding); each closed step runs L1 (iteration time), L2
 * (rank and phase, peer groups, collectives with aligned clocks) and L3
 * (kernel distributions, W1), then persistence (M of N steps), and produces
 * argus.v1.Report messages.
 *
 * Cost per closed step is O(ranks + collective calls + ranks * kernels *
 * grid); history is bounded (a 64-step window, DIAG_MAX_* names). Not
 * thread-safe: one engine per job, calls serialised by the caller.
 */
#ifndef ARGUS_COLLECTOR_DIAG_ENGINE_H
#define ARGUS_COLLECTOR_DIAG_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_l1.h"
#include "collector/diag/diag_l2.h"
#include "collector/diag/diag_l3.h"
#include "collector/diag/diag_report.h"
#include "proto/argus.pb-c.h"

/* Name of a phase, kernel or collective id for evidence strings; the string
 * must stay valid until the call returns. NULL: printed as "name:<hex>". */
typedef const char *(*diag_name_fn)(void *ctx, uint64_t name_id);

struct diag_options {
    const char *job;          /* job id (copied); NULL = from the first record */
    uint64_t step_timeout_ns; /* close a step this long after its first record (30 s) */
    uint32_t max_open_steps;  /* steps open at once, 2..64 (8) */
    uint32_t max_ranks;       /* refuse ranks at or above this (65,536): memory follows the
                               * highest rank, ~5 KB per rank with 8 open steps */
    uint32_t window;          /* persistence window N, <= 64 (40) */
    uint32_t min_hits;        /* M of N to alert (24) */
    uint32_t silent_steps;    /* consecutive closed steps without a record (3) */
    uint32_t report_every;    /* re-report firing suspects every so many steps (= window) */
    uint32_t skew_min_ranks;  /* data skew: transient ranks at least (4) */
    uint64_t max_step_jump;   /* refuse a step this far past the open window (10^6) */
    uint32_t max_reports;     /* reports kept until taken; the oldest go first (1024) */
    struct diag_l1_options l1;
    struct diag_l2_options l2;
    struct diag_l3_options l3;
    diag_name_fn name;
    void *name_ctx;
};

/* Numbers for /metrics and the benchmark. */
struct diag_engine_stats {
    uint64_t records;    /* step records accepted */
    uint64_t duplicates; /* same (step, rank) twice */
    uint64_t late;       /* records of an already closed step */
    uint64_t rejected;   /* wrong job, rank over max_ranks */
    uint64_t steps_closed;
    uint64_t steps_timed_out; /* closed by timeout or to make room */
    uint64_t close_ns_total;  /* CPU time spent closing steps */
    uint64_t close_ns_max;
    uint64_t reports;
    uint64_t reports_dropped; /* over max_reports before they were taken */
    uint64_t names_overflow;  /* phase/kernel/collective names over the DIAG_MAX_* tables */
};

struct diag_engine;

/* New engine; o is copied (NULL = defaults). NULL on ENOMEM. */
struct diag_engine *diag_engine_new(const struct diag_options *o);

/* Free the engine and reports not taken. NULL is fine. */
void diag_engine_free(struct diag_engine *e);

/* Add or update a rank's resource (node, GPU, parallel coordinates). The
 * message stays the caller's. Returns 0, -EINVAL (other job), -ERANGE (rank
 * over max_ranks) or -ENOMEM. */
int diag_engine_add_resource(struct diag_engine *e, const Argus__V1__Resource *r);

/* Feed one step record (kept as features; the message stays the caller's).
 * now_ns is the caller's clock (UNIX ns), used for timeouts and report times.
 * May close steps (in step order). Returns 0, 1 when the record was ignored
 * (duplicate or its step already closed), -EINVAL (other job), -ERANGE (rank
 * over max_ranks, step over max_step_jump ahead) or -ENOMEM. */
int diag_engine_add_step(struct diag_engine *e, const Argus__V1__StepRecord *s, uint64_t now_ns);

/* Close the steps whose timeout passed. Returns the number closed, or a
 * negative errno. */
int diag_engine_tick(struct diag_engine *e, uint64_t now_ns);

/* Close every open step now (end of job, tests). Returns the number closed. */
int diag_engine_flush(struct diag_engine *e, uint64_t now_ns);

/* Hand over the reports produced so far: *out is a malloc'd array of
 * reports (free each with diag_report_free, then the array with free()).
 * Returns their number (0: *out = NULL). */
size_t diag_engine_take_reports(struct diag_engine *e, Argus__V1__Report ***out);

/* Copy the counters into *out. */
void diag_engine_get_stats(const struct diag_engine *e, struct diag_engine_stats *out);

/* The L2 clock offset estimate of a rank (tests, drill-down). */
double diag_engine_clock_offset(const struct diag_engine *e, uint32_t rank);

#endif
