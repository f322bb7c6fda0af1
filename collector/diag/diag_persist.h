/* Persistence of per-step findings (docs/design.md section 7): a fail-slow rank
 * stays slow, so a suspect pages only when flagged in at least M of the last N
 * closed steps; slowness that moves from rank to rank (data skew) is counted
 * as rotation instead, never as a bad rank.
 */
#ifndef ARGUS_COLLECTOR_DIAG_PERSIST_H
#define ARGUS_COLLECTOR_DIAG_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Causes tracked per rank: the rows of common/causes.c with persists set,
 * in value order (causes_persisted(index) is the argus.v1.Cause value;
 * tests/unit/test_causes.c checks the two agree). Constants, because the
 * per-rank arrays and the detectors that set flags index by them. */
enum diag_cause_index {
    DIAG_CAUSE_COMPUTE = 0,
    DIAG_CAUSE_LINK = 1,
    DIAG_CAUSE_HOST = 2,
    DIAG_CAUSE_IMBALANCE = 3, /* more work than its peers: a finding, never a page */
    DIAG_CAUSE_N = 4,
};

/* Where a finding points. */
enum diag_where_kind {
    DIAG_WHERE_PHASE = 0,   /* index into diag_dict.phase */
    DIAG_WHERE_KERNEL = 1,  /* index into diag_dict.kernel */
    DIAG_WHERE_COLL = 2,    /* index into diag_dict.coll */
    DIAG_WHERE_ARRIVAL = 3, /* late host arrival at collectives */
    DIAG_WHERE_RUNQ = 4     /* threads waiting for a CPU (run-queue time) */
};

/* One finding of one rank in one step. */
struct diag_flag {
    bool set;
    bool group_wide; /* the whole peer group was flagged against other groups */
    bool expert;     /* found in the expert groups (else the work groups) */
    uint8_t level;   /* ARGUS__V1__LEVEL__* */
    uint8_t kind;    /* enum diag_where_kind */
    uint8_t index;
    double value;  /* the rank's number (ns, or W1 ratio for kernels) */
    double median; /* the reference it was compared with */
    double score;  /* robust z, or W1 / reference mean */
    double aux;    /* compute, imbalance in a phase: own kernel busy / group median; host,
                    * imbalance at arrival: off-CPU ns outside collectives; else 0 */
};

#define DIAG_PERSIST_RECOVERED_MAX 256 /* recoveries kept until taken; more are counted */

/* A (rank, cause) that was firing and has not been flagged for a whole
 * window: it recovered (diag_persist_settle). */
struct diag_persist_recovery {
    uint32_t rank;
    int cause; /* enum diag_cause_index */
};

struct diag_persist {
    uint32_t cap;                     /* ranks */
    uint32_t window;                  /* N, 1..64 */
    uint32_t min_hits;                /* M */
    uint64_t *mask;                   /* cap * DIAG_CAUSE_N bit histories, bit 0 = newest step */
    struct diag_flag *last;           /* newest flag per (rank, cause) */
    bool *firing;                     /* alert state per (rank, cause) */
    uint64_t step_mask[DIAG_CAUSE_N]; /* steps with any flag of that cause */
    struct diag_persist_recovery recovered[DIAG_PERSIST_RECOVERED_MAX]; /* not yet taken */
    uint32_t n_recovered;
    uint64_t recovered_dropped; /* over DIAG_PERSIST_RECOVERED_MAX before they were taken */
};

/* Set window and threshold (M clamped to 1..N, N to 1..64). */
void diag_persist_init(struct diag_persist *p, uint32_t window, uint32_t min_hits);

/* Room for ranks [0, cap); new ranks have empty histories. 0 or -ENOMEM. */
int diag_persist_reserve(struct diag_persist *p, uint32_t cap);

/* Release the arrays; p stays valid and empty. */
void diag_persist_free(struct diag_persist *p);

/* Shift every history by one step and record flags[rank * DIAG_CAUSE_N +
 * cause] for ranks [0, n). O(n). */
void diag_persist_step(struct diag_persist *p, const struct diag_flag *flags, uint32_t n);

/* Set (rank, cause)'s bit of the step closed age steps ago (0 = newest) when
 * flag->set: a late record amended that step. Ignored beyond the window. */
void diag_persist_amend(struct diag_persist *p, uint32_t rank, int cause, uint32_t age,
                        const struct diag_flag *flag);

/* Steps of the window in which (rank, cause) was flagged. */
uint32_t diag_persist_hits(const struct diag_persist *p, uint32_t rank, int cause);

/* Update (rank, cause)'s firing state from its hits: it fires from M hits
 * on and stops at none, once it was not flagged in any step of the window
 * (healthy for one window: the recovery is queued for
 * diag_persist_take_recovered). Returns whether it was firing before. */
bool diag_persist_settle(struct diag_persist *p, uint32_t rank, int cause);

/* Move up to max queued recoveries, oldest first, into out. Returns their
 * number. */
size_t diag_persist_take_recovered(struct diag_persist *p, struct diag_persist_recovery *out,
                                   size_t max);

/* Rotation over the window for one cause: *ranks = ranks flagged at least
 * once but in fewer than M/2 steps (transient), *steps = steps with at least
 * one flag. Data skew shows as many transient ranks over many steps. */
void diag_persist_rotation(const struct diag_persist *p, int cause, uint32_t n, uint32_t *ranks,
                           uint32_t *steps);

#endif
