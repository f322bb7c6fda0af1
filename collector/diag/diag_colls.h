/* Collective calls matched across ranks, with clocks aligned (docs/design.md
 * section 7, L2).
 *
 * Calls are matched by (communicator, name, sequence number), or, when
 * the sequence number is local (Collective.seq_local: counted by each agent
 * from when it attached, NCCL), by (communicator, name, ordinal: the call's
 * place among the rank's calls of that name in the step). A call that
 * matches nobody that way (a communicator id that is a process-local handle
 * from an old agent, or none) is matched by (name, ordinal). Ordinals name
 * the same real call on every rank once steps are numbered alike. Every node has its own clock, but
 * a collective ends at nearly the same instant on all its members, so clock offsets are
 * estimated from the end times (GPU end, else the host end: gloo's work done or a wait's return;
 * weighted Jacobi rounds over the communicator graph, blended over steps), one per node (clock
 * domain: the ranks of a node read one clock and move together), and removed before
 * arrivals are compared; calls without an end time are compared with the offsets learnt from the
 * others (none: 0). Per rank and closed step: late     worst call: own start (or host arrival,
 * whichever is later) minus the members' mean; the culprit of a wait arrives last and its
 * collective looks shortest, wait     total time spent waiting inside collectives for the last
 * member, transfer per collective name, mean over calls of own end minus the last member's start:
 * the part that is not waiting (calls with an end time only), part     matched calls the rank took
 * part in, last: those it arrived at last (GPU start, or host arrival without GPU times; aligned
 *            clocks), chance: the number it would be last at by chance (sum
 *            of 1/members), gap: the median of last minus first arrival over
 *            the calls it was last at.
 */
#ifndef ARGUS_COLLECTOR_DIAG_COLLS_H
#define ARGUS_COLLECTOR_DIAG_COLLS_H

#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_frame.h"

struct diag_colls_entry;
struct diag_colls_gap;

struct diag_colls {
    double alpha;          /* offset EWMA weight per step, after a running mean */
    uint32_t cap;          /* ranks */
    double *offset;        /* ns to subtract from each rank's clock */
    uint64_t offset_steps; /* steps that contributed */
    double *late, *wait;   /* per rank, ns */
    double *transfer;      /* cap * DIAG_MAX_COLL_NAMES, ns per call */
    uint32_t *calls;       /* cap * DIAG_MAX_COLL_NAMES */
    uint32_t *part, *last; /* per rank: matched calls, calls it arrived last at */
    double *chance, *gap;  /* per rank: expected last arrivals, median gap ns */
    struct diag_colls_gap *gaps;
    double *resid, *resid_w, *prev;
    bool frozen; /* analyse without learning: offsets are restored after the run */
    /* The clock domain of each rank below n_domain: the lowest rank of its
     * node (ranks of a node read one clock), or NULL / beyond n_domain: the
     * rank itself. Owned by the caller. */
    const uint32_t *domain;
    uint32_t n_domain;
    struct diag_colls_entry *table;
    uint32_t *slot_of;
    uint32_t *used; /* table_cap: the slots in use, n_used of them (cleared slot by slot) */
    size_t table_cap, slot_cap, n_used;
};

/* alpha in (0, 1]; anything else means 0.1. */
void diag_colls_init(struct diag_colls *c, double alpha);
void diag_colls_free(struct diag_colls *c);

/* Match the calls of closed frame f (ranks < cap), update the offsets and
 * fill late, wait, transfer, calls, part, last, chance and gap (frozen: the offsets are refined for
 * this frame only and restored; an amended old step teaches nothing).
 * Returns 0 or -ENOMEM.
 * O(calls log calls + cap). */
int diag_colls_run(struct diag_colls *c, const struct diag_frame *f, uint32_t cap);

/* Clock offset estimate of rank in ns (relative: only differences mean
 * anything); 0 for unknown ranks. */
double diag_colls_offset(const struct diag_colls *c, uint32_t rank);

#endif
