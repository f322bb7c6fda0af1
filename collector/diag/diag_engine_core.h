/* Inside collector/diag/diag_engine: the engine's state, shared by
 * diag_engine.c (closing steps, the levels, reports, ticks) and
 * diag_engine_feed.c (what comes in: resources, records, progress, and the
 * translation between rank numbers and the slots everything inside is
 * indexed by, diag_slots.h). Not for other modules: they use diag_engine.h. */
#ifndef ARGUS_COLLECTOR_DIAG_ENGINE_CORE_H
#define ARGUS_COLLECTOR_DIAG_ENGINE_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_cost.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_rankwin.h"
#include "collector/diag/diag_ranks.h"
#include "collector/diag/diag_slots.h"
#include "collector/diag/diag_steps.h"
#include "collector/diag/diag_watermark.h"

#define SPIKE_RING 8

struct step_note { /* what a closed step said, for L1 spike attribution */
    uint64_t step;
    uint32_t late_rank;
    double late_ns;
    int why; /* enum diag_spike_why */
};

struct diag_engine {
    struct diag_options o;
    char *job;
    struct diag_slots slots;  /* rank number <-> slot: every per-rank array is by slot */
    struct diag_ranks ranks;  /* nodes, coordinates, groups, clock domains */
    struct diag_watermark wm; /* per-stream progress, the watermark, silence */
    uint32_t stream;          /* stream of the batch being fed (0: "") */
    bool in_batch;
    bool amend_pending; /* kept frames got late records */
    struct diag_dict dict;
    struct diag_steps win; /* open steps */
    struct diag_flag *flags;
    struct diag_l1 l1;
    struct diag_l2 l2;
    struct diag_l3 l3;
    struct diag_persist persist;
    struct diag_rankwin rankwin; /* per-rank evidence over the window */
    struct diag_cost cost;       /* what the suspects cost, per closed step */
    struct step_note notes[SPIKE_RING];
    uint64_t last_skew_step;
    bool skew_reported;
    struct diag_report_queue rq; /* finished reports for diag_engine_take_reports */
    struct diag_engine_stats st;
};

/* Close open step f now for why (its analysis, its report). 0 or -errno. */
int diag_engine_close_one(struct diag_engine *e, struct diag_frame *f, uint64_t now_ns,
                          enum diag_close_reason why);

/* Close the oldest open steps that are ready (diag_steps_ready) and those
 * before force_upto. Returns the number closed or -errno. */
int diag_engine_close_ready(struct diag_engine *e, uint64_t now_ns, uint64_t force_upto,
                            enum diag_close_reason force_reason);

/* Analyse the kept frames that got late records (when any did). 0 or -errno. */
int diag_engine_amend_pending(struct diag_engine *e, uint64_t now_ns);

#endif
