/* The per-step kernel summarizer (docs/design.md §3): per rank and per step, the
 * durations of every (kernel name id, stream) group become a handful of
 * clusters, one per mode of their log-duration distribution.
 *
 * Per group: sort the durations, take logs, build a Gaussian KDE with Scott's
 * bandwidth h = 1.06 * sigma * n^(-1/5) on a fixed grid spanning
 * [min - 3h, max + 3h] of the logs (the samples are linearly binned onto the
 * grid and the bins convolved with the kernel truncated at 4h, so the cost is
 * O(n + grid * kernel width), never O(n * grid)), find the density valleys
 * and cut at a valley only when
 *   - each side keeps at least min_count events and min_fraction of the
 *     segment being cut (counted from the previous accepted cut on the left,
 *     to the end of the segment on the right): sparse tails of one big mode
 *     make bumps of a few events that are noise, not modes,
 *   - the density peaks on either side are at least min_log_gap apart (natural
 *     log units: 0.25 = the modes differ by 28% or more), and
 *   - the valley is at most max_valley_ratio times the lower of the two peaks
 *     (so the wiggles of one broad mode are not cut).
 * Each cluster gets count, sum, p50, p99, min and max computed exactly from
 * the sorted durations (nearest rank: the p-quantile of n sorted values is
 * value number ceil(p * n), 1-based). Groups with sigma = 0 (one event,
 * identical durations) or fewer than 2 * min_count events are one cluster.
 *
 * What goes on the wire is set by fields and quantize_bits. The defaults are
 * the ones that meet the >= 3,700x target (tests/bench/bench_compression: on
 * a 46,000-kernel step, as the batcher codes them (common/kernel_code.h),
 * exact values with min/max give ~2,900x per step in a batch of 8 steps or
 * 8 ranks, without min/max ~3,900x, and without min/max rounded to 8
 * significant bits ~7,800x): no min/max, and every ns value rounded to 8
 * significant bits (relative error <= 0.4%), so each value codes in about a
 * byte against its neighbour and values that barely move from step to step
 * or rank to rank repeat byte for byte for LZ4. Exact output is one option
 * away (fields = SUMMARIZE_FIELDS_ALL, quantize_bits = 0). What the clusters
 * mean to a reader, as a distribution, is common/clusters.h.
 *
 * Everything is deterministic: output groups are ordered by (name_id, stream)
 * and the result depends only on the multiset of events added, not on their
 * order. Not thread-safe: one summarizer per thread (per rank is typical).
 */
#ifndef ARGUS_AGENT_SUMMARIZE_H
#define ARGUS_AGENT_SUMMARIZE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Which optional Cluster fields summarizer_finish fills (count, p50 and p99
 * are always filled). An unfilled field is 0, which protobuf does not send. */
#define SUMMARIZE_FIELD_SUM 0x1u     /* sum_ns */
#define SUMMARIZE_FIELD_MIN_MAX 0x2u /* min_ns and max_ns */
#define SUMMARIZE_FIELDS_ALL (SUMMARIZE_FIELD_SUM | SUMMARIZE_FIELD_MIN_MAX)

#define SUMMARIZE_DEFAULT_GRID_POINTS 256u
#define SUMMARIZE_DEFAULT_MIN_COUNT 5u
#define SUMMARIZE_DEFAULT_MIN_FRACTION 0.005
#define SUMMARIZE_DEFAULT_MIN_LOG_GAP 0.25
#define SUMMARIZE_DEFAULT_MAX_VALLEY_RATIO 0.8
#define SUMMARIZE_DEFAULT_MAX_CLUSTERS 8u
#define SUMMARIZE_DEFAULT_MAX_EVENTS (4u << 20) /* per step */
#define SUMMARIZE_DEFAULT_FIELDS SUMMARIZE_FIELD_SUM
#define SUMMARIZE_DEFAULT_QUANTIZE_BITS 8u
#define SUMMARIZE_MAX_GRID_POINTS 4096u
#define SUMMARIZE_MAX_CLUSTERS 32u

struct summarize_options {
    uint32_t grid_points;    /* KDE grid size, 16..SUMMARIZE_MAX_GRID_POINTS */
    uint32_t min_count;      /* events on each side of a cut, >= 1 */
    double min_fraction;     /* share of the segment on each side of a cut, [0, 0.5) */
    double min_log_gap;      /* distance between the peaks of a cut, ln units, >= 0 */
    double max_valley_ratio; /* valley density / lower peak, in (0, 1] */
    uint32_t max_clusters;   /* clusters per group, 1..SUMMARIZE_MAX_CLUSTERS */
    uint32_t max_events;     /* events per step; more are dropped and counted */
    uint32_t fields;         /* SUMMARIZE_FIELD_* to fill */
    uint32_t quantize_bits;  /* 0: exact ns; else round the ns values to this many
                                significant bits (relative error <= 2^-bits), which
                                makes step-to-step values repeat and LZ4 find them */
};

/* The defaults above: 256 points, min_count 5, min_fraction 0.5%,
 * min_log_gap 0.25, valley ratio 0.8, 8 clusters, 4 Mi events, sum but no
 * min/max, values rounded to 8 significant bits. */
void summarize_options_default(struct summarize_options *o);

struct summarizer;

/* A summarizer with options o (NULL = defaults), copied. Returns NULL on
 * -ENOMEM or when o is out of bounds (errno says which). Free with
 * summarizer_free. */
struct summarizer *summarizer_new(const struct summarize_options *o);

/* Free s and everything it holds. NULL is a no-op. Groups already handed out
 * by summarizer_finish are not touched: free them with summarizer_free_groups. */
void summarizer_free(struct summarizer *s);

/* Add one kernel of duration_ns to the current step. Returns 0, or -ENOSPC
 * when the step already holds max_events (the event is dropped and counted in
 * summarizer_dropped), or -ENOMEM (dropped and counted too). */
int summarizer_add(struct summarizer *s, uint64_t name_id, uint32_t stream, uint64_t duration_ns);

/* summarizer_add of a kernel launched with shape (common/work_id.h
 * work_id_shape; 0 = unknown): the group's KernelGroup.work_id sums the
 * shapes of its kernels of the step, so ranks that launched the same kernels
 * with the same shapes get the same id. */
int summarizer_add_shape(struct summarizer *s, uint64_t name_id, uint32_t stream,
                         uint64_t duration_ns, uint32_t shape);

/* Events added to the current step so far. */
uint64_t summarizer_events(const struct summarizer *s);

/* Events dropped since summarizer_new (cumulative, never reset). */
uint64_t summarizer_dropped(const struct summarizer *s);

/* Summarise the current step into out: sets out->kernels, out->n_kernels and
 * out->kernel_events, touching nothing else of out (out->kernels must be NULL
 * or freed before). The groups live in one allocation owned by the caller,
 * released with summarizer_free_groups(out). Then starts a new, empty step
 * (like summarizer_reset). A step with no events gives n_kernels 0 and
 * kernels NULL. Returns 0 or -ENOMEM (out untouched, the step is kept). */
int summarizer_finish(struct summarizer *s, Argus__V1__StepRecord *out);

/* Free the groups summarizer_finish put into out and set out->kernels NULL,
 * out->n_kernels 0. Only for records filled by summarizer_finish (not for
 * unpacked messages: those are freed by protobuf-c). NULL is a no-op. */
void summarizer_free_groups(Argus__V1__StepRecord *out);

/* Drop the current step's events (capacity is kept for the next step). */
void summarizer_reset(struct summarizer *s);

#endif
