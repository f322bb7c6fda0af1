/* A rank x step heatmap that points at the rank: the grid both argusctl
 * heatmap and the collector's report page draw (common/heatmap_svg.c).
 *
 * The value of a cell is the rank's own time in the step, heatmap_own_ns():
 * the step time less the time the rank spent inside collectives. Coupled
 * ranks share the step time (everyone waits for the slowest inside the
 * collective), so step time, or phases that hold the waits, paint a
 * culprit's whole group; its own time does not: the culprit arrives last
 * and waits least. Each cell is then shown as its ratio to the median own
 * time of the rank's peer group (same pipeline stage) in that step, so a
 * straggler is one red row and its peers stay white.
 *
 * At thousands of ranks the drawing aggregates rows: one row per node (or
 * per run of nodes), worth the largest ratio of its ranks, and each suspect
 * is drawn on top as its own row with its label.
 *
 * Not thread-safe; one owner. */
#ifndef ARGUS_COMMON_HEATMAP_H
#define ARGUS_COMMON_HEATMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define HEATMAP_MAX_CELLS (1u << 26)
#define HEATMAP_MAX_SUSPECTS 16
#define HEATMAP_ONSET_RATIO 1.15f /* a suspect this much slower than its group: the fault is on */

struct heatmap;

/* A grid for ranks [0, nranks) and steps [first_step, first_step + nsteps).
 * NULL when empty, over HEATMAP_MAX_CELLS, or out of memory. */
struct heatmap *heatmap_new(uint32_t nranks, uint64_t first_step, uint64_t nsteps);

/* Free. NULL is fine. */
void heatmap_free(struct heatmap *h);

/* Where rank runs: node (copied; NULL or "" = unknown) and its peer group
 * (ranks compared with each other, e.g. its pipeline stage). Ranks never
 * set are on an unknown node in group 0. Returns 0, -ERANGE or -ENOMEM. */
int heatmap_set_rank(struct heatmap *h, uint32_t rank, const char *node, uint32_t group);

/* Record one cell's value (ns; 0 = no record); out-of-range cells are
 * ignored. */
void heatmap_set(struct heatmap *h, uint32_t rank, uint64_t step, uint64_t value_ns);

/* Mark rank as a suspect with a short label (copied, e.g. "rank 131
 * COMPUTE"); at most HEATMAP_MAX_SUSPECTS. Returns 0, -ERANGE, -ENOSPC. */
int heatmap_add_suspect(struct heatmap *h, uint32_t rank, const char *label);

/* The step a fault began (drawn as a line), when known. */
void heatmap_set_onset(struct heatmap *h, uint64_t step);

/* Compute each cell's ratio to its group's median in its step; call after
 * the last heatmap_set. Returns 0 or -ENOMEM. */
int heatmap_finish(struct heatmap *h);

/* The ratio of a cell after heatmap_finish (0: no record or out of range). */
double heatmap_ratio(const struct heatmap *h, uint32_t rank, uint64_t step);

/* A rank's own time in a step record: its duration less the union of its
 * collectives' intervals (GPU start to end, else host arrival to return)
 * clipped to the step. A record without timed collectives counts whole. */
uint64_t heatmap_own_ns(const Argus__V1__StepRecord *s);

/* Where a Resource's rank runs: its node, and its pipeline stage as peer
 * group. Returns heatmap_set_rank's result. */
int heatmap_add_resource(struct heatmap *h, const Argus__V1__Resource *res);

/* The suspects of a report that page (rank-level, persisted), each rank
 * once, labelled "rank R CAUSE". heatmap_finish puts the onset where the
 * first suspect's cells turn red (else at its earliest report's first step)
 * unless heatmap_set_onset gave one. Returns 0 or a negative errno. */
int heatmap_add_report(struct heatmap *h, const Argus__V1__Report *rep);

/* The pieces of heatmap_own_ns, for decoders of packed records
 * (common/heatmap_wire.h): a collective's interval, GPU start to end, else
 * host arrival to return (false: untimed); and the step's duration less the
 * union of n intervals clipped to [start, start + duration) (sp is
 * reordered). Never 0 for a record: at least 1. */
struct heatmap_span {
    uint64_t a, b;
};
bool heatmap_coll_span(uint64_t gpu_start, uint64_t gpu_end, uint64_t host_arrival,
                       uint64_t host_return, struct heatmap_span *out);
uint64_t heatmap_own_spans(uint64_t start, uint64_t duration, struct heatmap_span *sp, size_t n);

/* The rows of the drawing. With nranks <= max_rows one row per rank; else
 * one per node (a run of consecutive ranks on the same node), and when
 * there are still more than max_rows, runs of nodes per row. */
struct heatmap_row {
    uint32_t first, last; /* ranks */
    uint32_t nodes;       /* nodes in the row (0: per-rank rows) */
    bool node_start;      /* the row begins a node */
};

/* The rows for at most max_rows (>= 1): a malloc'd array (caller frees) of
 * *n rows, or NULL when out of memory. */
struct heatmap_row *heatmap_rows(const struct heatmap *h, uint32_t max_rows, uint32_t *n);

/* The largest ratio over ranks [first, last] and steps [s0, s1] (offsets
 * from the first step), 0 when none has a record. */
double heatmap_max_ratio(const struct heatmap *h, uint32_t first, uint32_t last, uint64_t s0,
                         uint64_t s1);

/* Accessors for the renderer. */
uint32_t heatmap_nranks(const struct heatmap *h);
uint64_t heatmap_first_step(const struct heatmap *h);
uint64_t heatmap_nsteps(const struct heatmap *h);
const char *heatmap_node(const struct heatmap *h, uint32_t rank); /* "" when unknown */
/* The onset step, false when none is set. */
bool heatmap_onset(const struct heatmap *h, uint64_t *step);
/* Suspect i (< heatmap_nsuspects): its rank and label. */
size_t heatmap_nsuspects(const struct heatmap *h);
uint32_t heatmap_suspect(const struct heatmap *h, size_t i, const char **label);

#endif
