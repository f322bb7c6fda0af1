/* Robust statistics for the diagnosis engine (docs/design.md section 7).
 *
 * Pure functions on caller-owned arrays: no allocation unless stated, no
 * global state. Medians use quickselect on a scratch copy so the input keeps
 * its order. Everything is O(n) except where said.
 */
#ifndef ARGUS_COLLECTOR_DIAG_STATS_H
#define ARGUS_COLLECTOR_DIAG_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0.6745 = Phi^-1(0.75): makes MAD-based z comparable to a normal z. */
#define DIAG_STATS_Z_SCALE 0.6745

/* Median of v[0..n) computed in place (v is reordered). n == 0 returns 0. For
 * even n the mean of the two middle values. */
double diag_stats_median_inplace(double *v, size_t n);

/* The k-th smallest of v[0..n) (k < n), in place: left at v[k], none
 * bigger before it, none smaller after. O(n) expected. */
double diag_stats_select_inplace(double *v, size_t n, size_t k);

/* q-quantile (0..1) of v[0..n) by nearest rank, in place (v reordered);
 * n == 0 returns 0. */
double diag_stats_quantile_inplace(double *v, size_t n, double q);

/* Median of v[0..n) without changing v; scratch must hold n doubles. */
double diag_stats_median(const double *v, size_t n, double *scratch);

/* Median absolute deviation around med; scratch must hold n doubles. */
double diag_stats_mad(const double *v, size_t n, double med, double *scratch);

/* The MAD used for z: max(mad, rel_floor * |med|, abs_floor), so a perfectly
 * flat group does not turn a 1 ns difference into an infinite z. */
double diag_stats_mad_floor(double mad, double med, double rel_floor, double abs_floor);

/* Robust z = 0.6745 * (x - med) / mad (mad already floored, > 0). */
double diag_stats_robust_z(double x, double med, double mad);

/* Robust fence: med + k * mad. */
double diag_stats_fence(double med, double mad, double k);

/* A fixed-size rolling window of doubles with an O(w) median. */
#define DIAG_STATS_ROLL_MAX 64
struct diag_roll {
    double v[DIAG_STATS_ROLL_MAX];
    uint32_t cap;  /* window length, 1..DIAG_STATS_ROLL_MAX */
    uint32_t n;    /* values held, <= cap */
    uint32_t head; /* next slot to write */
};

/* Initialise with window length cap (clamped to 1..DIAG_STATS_ROLL_MAX). */
void diag_roll_init(struct diag_roll *r, uint32_t cap);
void diag_roll_push(struct diag_roll *r, double x);
/* Median of the values held; 0 when empty. */
double diag_roll_median(const struct diag_roll *r);
/* The i-th most recent value (0 = newest); i < n. */
double diag_roll_get(const struct diag_roll *r, uint32_t i);

/* Two-window mean-shift change point on a series (use log T): compares the
 * mean of the newest `recent` values with the median of the `base` values
 * before them. Robust scale = MAD of the base window (floored at
 * min_scale). Returns true and the shift (recent mean - base median) when the
 * shift exceeds both min_shift and k * scale. x is oldest first, n values; it
 * needs n >= base + recent, else false. scratch holds base doubles. */
bool diag_stats_change_point(const double *x, size_t n, size_t base, size_t recent, double k,
                             double min_shift, double min_scale, double *shift, double *scratch);

/* Quantile-function grid: probabilities p_i = (i + 0.5) / g, i < g. The
 * Wasserstein-1 distance of two distributions on the line is the integral
 * of |Q1(p) - Q2(p)| over p, so on this grid it is the mean of |a_i - b_i|. */
double diag_stats_w1(const float *a, const float *b, size_t g);

/* Mean of a quantile function (the distribution's mean on the grid). */
double diag_stats_qmean(const float *q, size_t g);

/* Pointwise median of m quantile functions of g points each: qs[j] points
 * to function j. out has g floats; scratch holds m * g doubles. O(m * g). A
 * pointwise median of monotone functions is monotone. */
void diag_stats_qmedian(const float *const *qs, size_t m, size_t g, float *out, double *scratch);

#endif
