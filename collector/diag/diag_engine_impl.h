/* Private to collector/diag/'s engine: what diag_engine.c (steps, levels,
 * findings) and diag_engine_time.c (batches, streams, late records, silence,
 * ticks) share. Nothing else includes it; callers use diag_engine.h.
 */
#ifndef ARGUS_COLLECTOR_DIAG_ENGINE_IMPL_H
#define ARGUS_COLLECTOR_DIAG_ENGINE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_rankwin.h"
#include "collector/diag/diag_steps.h"
#include "collector/diag/diag_watermark.h"

#define SPIKE_RING 8

struct rank_info {
    char *node;
    int32_t gpu;
};

struct step_note { /* what a closed step said, for L1 spike attribution */
    uint64_t step;
    uint32_t late_rank;
    double late_ns;
    int why; /* enum diag_spike_why */
};

struct diag_engine {
    struct diag_options o;
    char *job;
    uint32_t cap; /* ranks [0, cap) have room */
    struct rank_info *ri;
    struct diag_coord *coords;
    uint32_t n_present;
    uint32_t world_size; /* largest Resource.world_size (a hint, capped to max_ranks) */
    bool groups_dirty;
    struct diag_watermark wm; /* per-stream progress, the watermark, silence */
    uint32_t stream;          /* stream of the batch being fed (0: "") */
    bool in_batch;
    bool amend_pending;         /* kept frames got late records */
    struct diag_groups groups;  /* work groups: (pp, tp) */
    struct diag_groups xgroups; /* expert groups: (pp, ep) */
    uint32_t *domain;           /* clock domain per rank: the lowest rank of its node */
    uint32_t n_domain;          /* ranks in domain (cap when built) */
    struct diag_dict dict;
    struct diag_steps win; /* open steps */
    struct diag_flag *flags;
    struct diag_l1 l1;
    struct diag_l2 l2;
    struct diag_l3 l3;
    struct diag_persist persist;
    struct diag_rankwin rankwin; /* per-rank evidence over the window */
    struct step_note notes[SPIKE_RING];
    uint64_t last_skew_step;
    bool skew_reported;
    Argus__V1__Report **reports;
    size_t n_reports;
    uint64_t report_seq;
    struct diag_engine_stats st;
};

/* Build the peer groups when ranks or coordinates changed. 0 or -ENOMEM. */
int diag_engine_build_groups(struct diag_engine *e);

/* The work group label of rank ("" none). */
const char *diag_engine_group_label(const struct diag_engine *e, uint32_t rank);

/* Queue rep when it has suspects (window ending at to_step), else free it. */
int diag_engine_finish_report(struct diag_engine *e, Argus__V1__Report *rep, uint64_t to_step);

/* Rank suspects that persisted into rep: new ones always, firing ones again
 * when a periodic report is due (on_close: this is a step close). */
int diag_engine_persisted_suspects(struct diag_engine *e, Argus__V1__Report *rep, bool on_close);

/* Close the ready steps, and those below force_upto with force_reason.
 * Returns the number closed or -errno. */
int diag_engine_close_ready(struct diag_engine *e, uint64_t now_ns, uint64_t force_upto,
                            enum diag_close_reason force_reason);

/* A record of a closed step (f: its kept frame, NULL when gone): amend or
 * count it dropped. Returns 1 or -errno. */
int diag_engine_add_late(struct diag_engine *e, struct diag_frame *f,
                         const Argus__V1__StepRecord *s);

/* Analyse the kept frames that got late records. 0 or -errno. */
int diag_engine_amend_pending(struct diag_engine *e, uint64_t now_ns);

#endif
