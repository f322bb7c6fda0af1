/* What the clusters of a KernelGroup (proto/argus.proto) mean as a
 * distribution: the one decoder of the cluster format, for the collector's
 * L3 diagnosis (collector/diag/diag_frame.c) and for tests of the agent's
 * summarizer (agent/steps/summarize.h writes the clusters).
 *
 * The agent cuts a group's durations at the valleys of their density, so
 * the clusters are modes that barely overlap, in increasing duration. The
 * group's distribution is rebuilt as: cumulative probability p falls in the
 * cluster whose cumulative count covers p * total count, at the local level
 * (p * total - counts before) / count of that cluster; each cluster is a
 * log-normal with median p50_ns and sigma = ln(p99_ns / p50_ns) /
 * Phi^-1(0.99), the local level kept in [1e-6, 1 - 1e-6], the value clamped
 * to [min_ns, max_ns] where those are filled (non-zero). A p50 of 0 counts
 * as 1 ns; a p99 at or below p50 makes the cluster a point mass at p50.
 *
 * Pure functions, no allocation, thread-safe.
 */
#ifndef ARGUS_COMMON_CLUSTERS_H
#define ARGUS_COMMON_CLUSTERS_H

#include <stddef.h>

#include "proto/argus.pb-c.h"

/* Phi^-1(0.99): a log-normal's p99 is its median times exp(sigma * this). */
#define CLUSTERS_Z99 2.3263478740408408

/* The duration in ns at cumulative probability p in [0, 1] of group kg, into
 * *out_ns. Returns 0, or -EINVAL when kg has no counted clusters or p is
 * outside [0, 1] or NaN. O(clusters). */
int clusters_quantile(const Argus__V1__KernelGroup *kg, double p, double *out_ns);

/* The quantile function of kg on the grid p_i = (i + 0.5) / g, in ns, into
 * out[0..g): out[i] is clusters_quantile at p_i, as a float. Returns 0, or
 * -EINVAL when kg has no counted clusters or g is 0 (out untouched).
 * O(g + clusters). */
int clusters_quantile_grid(const Argus__V1__KernelGroup *kg, float *out, size_t g);

/* Phi^-1(p), the inverse of the standard normal CDF (Acklam's rational
 * approximation, relative error < 1.2e-9) for 0 < p < 1; -INFINITY at or
 * below 0, INFINITY at or above 1. */
double clusters_norm_ppf(double p);

#endif
