/* The distributions argusctl compare works on: one row (the step time, a
 * phase, a kernel name) on one side. In go exact samples (step and phase
 * durations, one per record) and kernel groups (proto/argus.proto
 * KernelGroup: the agent's clusters, count, p50, p99 and sum of each, min
 * and max when the agent sent them); out come nearest-rank quantiles with
 * bounds, and the W1 distance between two distributions with a bound.
 *
 * Kernels reach argusctl only as clusters, so a kernel row is a model with
 * stated bounds. A cluster of n kernels knows some of its ranks exactly
 * (nearest rank, as the agent computes them): rank ceil(n/2) is p50, rank
 * ceil(0.99 n) is p99 (so for n <= 100 the longest kernel is p99), rank 1 is
 * min and rank n is max when sent. Every other rank lies between the known
 * ranks around it; the first and last also between the neighbouring
 * clusters of the group (the agent cuts sorted durations, so clusters do
 * not overlap) and, for the last, below what the sum leaves. The model puts
 * the known ranks at their values and each unknown rank on the log-normal
 * through p50 and p99, shifted (in log) so the cluster's sum is met, kept
 * inside its bounds. Values on the wire may be rounded to 8 significant
 * bits: every known value is taken as +-2^-8 (COMPARE_DIST_ROUNDING).
 *
 * The bounds: a quantile's true value and the estimate both lie in
 * [lo, hi], the same quantile of the distribution with every unknown rank at
 * its lowest and at its highest bound; a true W1 lies within w1_err of the
 * estimate (w1_err: both sides' mean distance of a true value from its
 * estimate, rank by rank, at most; where the sum is known the values above
 * their estimates make up for those below). Where a cluster's min and max
 * (or, as for n <= 100, its longest kernel) are known, no estimate is
 * outside them. Exact rows have lo = hi and w1_err 0.
 *
 * Memory: up to COMPARE_DIST_PIECES pieces of 40 bytes per cluster (a point
 * per sample of an exact row), until a distribution holds more than
 * COMPARE_DIST_MAX_PIECES (10 MiB): then it becomes a sketch of
 * COMPARE_DIST_SKETCH pieces, each 1 / SKETCH of the values between two
 * consecutive quantiles of the estimate, bounded by the low and high views'
 * quantiles there (so the bounds above still hold; W1's grows by the range
 * / SKETCH), and takes more values until it is sketched again. Not
 * thread-safe; no globals.
 */
#ifndef ARGUS_ARGUSCTL_COMPARE_DIST_H
#define ARGUS_ARGUSCTL_COMPARE_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/argus.pb-c.h"

#define COMPARE_DIST_ROUNDING (1.0 / 256) /* relative error of a value on the wire */
#define COMPARE_DIST_RUN 8u               /* unknown ranks between two known: points up to this */
#define COMPARE_DIST_PIECES (4u + 3u * COMPARE_DIST_RUN) /* per cluster, at most */
#define COMPARE_DIST_MAX_PIECES (1u << 18)               /* a distribution with more is sketched */
#define COMPARE_DIST_SKETCH (1u << 14)                   /* pieces of the sketch */

/* w values spread evenly over [lo, hi] (a point when lo == hi), whose true
 * values lie in [env_lo, env_hi]. */
struct compare_piece {
    double lo, hi, w, env_lo, env_hi;
};

/* A distribution being built; zero-initialised is empty. */
struct compare_dist {
    struct compare_piece *p;
    size_t n, cap;
    double count;     /* values in it (the pieces' weights summed) */
    double sum;       /* their sum in ns: exact samples, the clusters' sum_ns or the model's */
    double deviation; /* a bound on the sum of |true - estimate| over its values, ns */
};

/* Quantiles of a distribution, in ns: estimate and bounds. */
struct compare_quantile {
    double v, lo, hi;
};

/* Add one exact sample of v ns. Returns 0 or -ENOMEM (d unchanged). */
int compare_dist_add_sample(struct compare_dist *d, double v);

/* Add the clusters of kernel group kg (those with a count; none: nothing).
 * Returns 0 or -ENOMEM (d may hold some of kg's clusters). */
int compare_dist_add_group(struct compare_dist *d, const Argus__V1__KernelGroup *kg);

/* The nearest-rank quantiles of d at p[0..n) (each in (0, 1]: the smallest
 * value with at least p * count values at or below it) with their bounds,
 * into q[0..n). Returns 0, -ENODATA when d is empty (q zeroed), or -ENOMEM.
 * O(pieces log pieces + n * pieces). */
int compare_dist_quantiles(const struct compare_dist *d, const double *p, size_t n,
                           struct compare_quantile *q);

/* The W1 (earth mover's) distance between a and b (each normalised to one)
 * in ns into *w1, and its bound into *err. Returns 0, -ENODATA when either
 * is empty, or -ENOMEM. */
int compare_dist_w1(const struct compare_dist *a, const struct compare_dist *b, double *w1,
                    double *err);

/* Free d's pieces and empty it. */
void compare_dist_free(struct compare_dist *d);

#endif
