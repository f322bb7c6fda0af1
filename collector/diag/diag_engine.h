/* collector/diag, the diagnosis stage: it takes in the argus.v1.StepRecords
 * of one job, as ingest stores them (through the adapter collector/diag/diagnosis.h,
 * which keeps this stage free of the store and of logging), and gives out
 * argus.v1.Report messages: the suspect ranks, each with a cause (compute,
 * link, host, data skew, silent, job regression), where (phase or kernel)
 * and its evidence in numbers. The engine (this header) is the entry point;
 * diag_steps.h is its window of open steps, diag_frame.h the features kept of
 * each record, diag_l1/l2/l3.h the three levels (with diag_groups.h,
 * diag_colls.h, diag_pipeline.h and diag_stats.h under them), diag_persist.h
 * the M-of-N persistence, diag_rankwin.h each rank's arrival order and host
 * counters over that window, diag_ranks.h the ranks with their groups and
 * clock domains, diag_evidence.h and diag_report.h the output (with the
 * queue of finished reports), diag_amend.h the late records. Next to the
 * engine, diag_live.h (with diag_hang.h) turns the ranks' liveness statuses
 * (argus.v1.RankStatus) into hang and death reports and the job's state;
 * the adapter feeds both.
 *
 * The collector's online straggler diagnosis for one job (docs/design.md
 * section 7): feed step records in any order across ranks, batch by batch
 * with the agent stream and the collector's receive time; a step closes by
 * event time (diag_steps.h: complete, watermark of diag_watermark.h,
 * timeout, memory budget); records of closed steps amend them within a
 * horizon (diag_amend.h); silence is wall-clock time per stream
 * (diag_silence.h); each closed step runs L1 (iteration time), L2
 * (rank and phase, peer groups, collectives with aligned clocks) and L3
 * (kernel distributions, W1), then persistence (M of N steps), and produces
 * argus.v1.Report messages.
 *
 * Cost per closed step is O(ranks + collective calls + ranks * kernels *
 * grid), per record O(kernels * grid + log ranks), per batch O(log ranks)
 * for the watermark and O(1) for its stream, per tick O(ranks + streams)
 * for silence (diag_watermark.h); history is bounded (a 64-step window,
 * DIAG_MAX_* names), open steps by max_open_bytes. Not thread-safe: one
 * engine per job, calls serialised by the caller.
 */
#ifndef ARGUS_COLLECTOR_DIAG_ENGINE_H
#define ARGUS_COLLECTOR_DIAG_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_l1.h"
#include "collector/diag/diag_l2.h"
#include "collector/diag/diag_l3.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_report.h"
#include "collector/diag/diag_silence.h"
#include "collector/diag/diag_steps.h"
#include "proto/argus.pb-c.h"

/* Name of a phase, kernel or collective id for evidence strings; the string
 * must stay valid until the call returns. NULL: printed as "name:<hex>". */
typedef const char *(*diag_name_fn)(void *ctx, uint64_t name_id);

struct diag_options {
    const char *job;          /* job id (copied); NULL = from the first record */
    uint64_t step_timeout_ns; /* close a step this long after its first record (10 s) */
    uint64_t stream_hold_ns;  /* a rank without progress for this long stops holding the
                               * watermark (10 s) */
    uint64_t silence_ns;      /* no record of a rank for this long while the job goes on:
                               * silent (30 s) */
    uint64_t max_open_bytes;  /* memory of open and kept steps (256 MiB); when it binds
                               * the oldest open step closes (counted) */
    uint32_t late_horizon;    /* closed steps kept for amending with late records (40) */
    uint32_t max_ranks;       /* refuse ranks at or above this (65,536): memory follows the
                               * ranks that reported (a slot each, diag_slots.h), ~720 B
                               * per rank and open step, whatever their numbers; a
                               * declared world size is a hint capped to it */
    uint32_t window;          /* persistence window N, <= 64 (40) */
    uint32_t min_hits;        /* M of N to alert (24) */
    uint32_t report_every;    /* re-report firing suspects every so many steps (= window) */
    uint32_t skew_min_ranks;  /* data skew: transient ranks at least (4) */
    uint64_t max_step_jump;   /* refuse a step this far past the open window (10^6) */
    uint32_t max_reports;     /* reports kept until taken; the oldest go first (1024) */
    struct diag_l1_options l1;
    struct diag_l2_options l2;
    struct diag_l3_options l3;
    diag_name_fn name;
    void *name_ctx;
    diag_silence_link_fn link; /* an agent stream's link (NULL: always up) */
    void *link_ctx;
};

/* Numbers for /metrics and the benchmark. */
struct diag_engine_stats {
    uint64_t records;         /* step records accepted */
    uint64_t duplicates;      /* same (step, rank) twice */
    uint64_t late;            /* records of an already closed step */
    uint64_t amended;         /* late records that amended their closed step */
    uint64_t dropped_horizon; /* late records beyond the horizon: not diagnosed */
    uint64_t dropped_early;   /* records of steps before the first one diagnosed */
    uint64_t dropped_memory;  /* late records whose kept step was freed for memory */
    uint64_t rejected;        /* wrong job, rank over max_ranks */
    uint64_t noted;           /* progress noted without a record (queue full) */
    uint64_t steps_closed;
    uint64_t steps_closed_by[DIAG_CLOSE_N]; /* by enum diag_close_reason */
    uint64_t steps_timed_out;               /* closed by timeout or budget */
    uint64_t silent_nodes;                  /* node findings (a whole stream went quiet) */
    uint64_t silent_ranks;                  /* rank findings (a rank went quiet alone) */
    uint64_t open_steps;                    /* gauge: steps open now */
    uint64_t open_bytes;                    /* gauge: memory of open and kept steps */
    uint64_t newest_step;                   /* gauge: highest step delivered */
    uint64_t watermark;      /* gauge: steps below it were delivered by every live rank */
    double lag_s;            /* gauge: receive time the oldest open step has waited */
    uint64_t close_ns_total; /* CPU time spent closing steps */
    uint64_t close_ns_max;
    uint64_t reports;
    uint64_t reports_dropped; /* over max_reports before they were taken */
    uint64_t names_overflow;  /* phase/kernel/collective names over the DIAG_MAX_* tables */
    uint64_t closed_through;  /* gauge: 1 + the highest step analysed (0: none yet) */
    uint64_t closed_onset_ns; /* when that step started by its records (0: none said) */
    double last_step_p50_ns;  /* gauge: that step's time, median over its ranks */
    double last_step_max_ns;  /* gauge: and max over its ranks */
};

struct diag_engine;
struct diag_slots;

/* New engine; o is copied (NULL = defaults). NULL on ENOMEM. */
struct diag_engine *diag_engine_new(const struct diag_options *o);

/* Free the engine and reports not taken. NULL is fine. */
void diag_engine_free(struct diag_engine *e);

/* Add or update a rank's resource (node, GPU, parallel coordinates). The
 * message stays the caller's. Returns 0, -EINVAL (other job), -ERANGE (rank
 * over max_ranks) or -ENOMEM. */
int diag_engine_add_resource(struct diag_engine *e, const Argus__V1__Resource *r);

/* The records fed until diag_engine_end_batch came through agent stream
 * agent_id (Batch.agent_id; copied) and were received at recv_ns. Between
 * the two calls the watermark is not recomputed per record. Returns 0 or
 * -ENOMEM. */
int diag_engine_begin_batch(struct diag_engine *e, const char *agent_id, uint64_t recv_ns);

/* The batch is fed: recompute the watermark, close the steps that are
 * ready. Steps that got late records are amended at the next tick (or
 * flush). Returns steps closed or -errno. */
int diag_engine_end_batch(struct diag_engine *e, uint64_t now_ns);

/* Feed one step record (kept as features; the message stays the caller's).
 * now_ns is its receive time (UNIX ns), used for progress, timeouts and
 * report times. Outside a batch, the stream is "" (one for all). May close
 * steps (in step order). Returns 0, 1 when the record did not go into an open
 * step (duplicate, or late: amending its closed step or dropped from
 * diagnosis, counted), -EINVAL (other job), -ERANGE (rank over max_ranks,
 * step over max_step_jump ahead) or -ENOMEM. */
int diag_engine_add_step(struct diag_engine *e, const Argus__V1__StepRecord *s, uint64_t now_ns);

/* rank delivered step at now_ns, but its record is not diagnosed (the
 * collector's diagnosis queue was full): it counts as progress of the rank
 * and its stream (watermark, silence) and nothing else, so a step closes
 * without it instead of waiting, and the rank is not silent. Within a batch
 * like diag_engine_add_step. Returns 0, -ERANGE or -ENOMEM. */
int diag_engine_note_progress(struct diag_engine *e, uint32_t rank, uint64_t step, uint64_t now_ns);

/* Advance time to now_ns (receive-time clock): recompute the watermark,
 * close the steps whose watermark or timeout passed, report what went silent.
 * Returns the number closed, or a negative errno. */
int diag_engine_tick(struct diag_engine *e, uint64_t now_ns);

/* Close every open step now (end of job, tests). Returns the number closed. */
int diag_engine_flush(struct diag_engine *e, uint64_t now_ns);

/* Hand over the reports produced so far: *out is a malloc'd array of
 * reports (free each with diag_report_free, then the array with free()).
 * Returns their number (0: *out = NULL). */
size_t diag_engine_take_reports(struct diag_engine *e, Argus__V1__Report ***out);

/* Hand over up to max of the (rank, cause) suspects that stopped firing,
 * not flagged for a whole window since (diag_persist_settle), oldest
 * first, into out. Returns their number. */
size_t diag_engine_take_recovered(struct diag_engine *e, struct diag_persist_recovery *out,
                                  size_t max);

/* Steps closed so far (what diag_engine_get_stats says, without the walk
 * over the open steps that their bytes take: diagnosis asks per batch). */
uint64_t diag_engine_steps_closed(const struct diag_engine *e);

/* Copy the counters into *out. */
void diag_engine_get_stats(const struct diag_engine *e, struct diag_engine_stats *out);

/* A diag_silence_where_fn (ctx: the engine): where rank runs (node, GPU,
 * peer group); the strings stay valid until the engine changes. Unknown
 * ranks leave out. */
void diag_engine_where(void *ctx, uint32_t rank, struct diag_silence_where *out);

/* The same by slot (below), for findings made outside the engine over the
 * same slots (diag_live.h). */
void diag_engine_where_slot(void *ctx, uint32_t slot, struct diag_silence_where *out);

/* rank's slot into *slot (diag_slots.h), handed out now when it had none,
 * with room for it in every per-rank array: the index that state kept per
 * rank outside the engine (liveness) shares. 0, -ERANGE (rank over
 * max_ranks) or -ENOMEM. */
int diag_engine_slot(struct diag_engine *e, uint32_t rank, uint32_t *slot);

/* The rank number of slot (a value that is no slot is returned as it is). */
uint32_t diag_engine_rank_of(const struct diag_engine *e, uint32_t slot);

/* The engine's slots (valid until it is freed). */
const struct diag_slots *diag_engine_slots(const struct diag_engine *e);

/* The L2 clock offset estimate of a rank (tests, drill-down). */
double diag_engine_clock_offset(const struct diag_engine *e, uint32_t rank);

#endif
