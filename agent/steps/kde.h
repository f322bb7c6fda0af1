/* The clustering of one kernel group's durations in one step, for the
 * summarizer (the method and its options are described in summarize.h):
 * sort the durations, cut them where the kernel density estimate of their
 * logs has a deep enough valley between distinct enough modes, and give each
 * cut's count, sum, nearest-rank p50 and p99, min and max as a cluster,
 * filled and rounded as the options say. The scratch memory (sort buffer,
 * logs, the density grid) lives in a struct kde across groups and steps.
 * Deterministic; not thread-safe: one struct kde per summarizer. */
#ifndef ARGUS_AGENT_KDE_H
#define ARGUS_AGENT_KDE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/steps/summarize.h"

/* One cluster before the summarizer copies it into an argus.v1.Cluster; an
 * unfilled field is 0. */
struct kde_cluster {
    uint32_t count;
    uint64_t sum, p50, p99, min, max;
};

struct kde;

/* Clustering with options o (valid ones, checked by the caller; copied).
 * Returns NULL on -ENOMEM. Free with kde_free. */
struct kde *kde_new(const struct summarize_options *o);

/* Free k and its scratch. NULL is a no-op. */
void kde_free(struct kde *k);

/* Make room for groups of up to n durations. Returns 0, or -ENOMEM (k keeps
 * the room it had). */
int kde_reserve(struct kde *k, size_t n);

/* Sort dur[0..n) in place (0 < n <= the room reserved) and write its
 * clusters, in increasing duration, to out, which has room for the options'
 * max_clusters. Returns how many (1..max_clusters). */
uint32_t kde_summarize(struct kde *k, uint64_t *dur, size_t n, struct kde_cluster *out);

#endif
