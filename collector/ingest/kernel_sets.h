/* The kernel identity sets a collector holds (common/kernel_code.h): what
 * the agents' records coded as a set are decoded with. Ingest expands each
 * batch's coded kernels through here (kernel_sets_expand: a set from the
 * cache, else from the store), and keeps the sets a batch's records define
 * (kernel_sets_keep: checked against the record's groups, written to the
 * store before the batch is acked, so that an agent that saw the ack may
 * refer to them, across collector restarts too). A record that refers to a
 * set this collector does not hold (its store lost, or a job that moved to
 * it with batches in flight) is stored without kernels and counted; the
 * batch is not refused. The cache is bounded (max_bytes of identities; a
 * full cache is emptied and refilled from the store). Thread-safe. */
#ifndef ARGUS_COLLECTOR_KERNEL_SETS_H
#define ARGUS_COLLECTOR_KERNEL_SETS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

struct store;
struct kernel_sets;

/* store is not owned and must outlive it. NULL on -ENOMEM. */
struct kernel_sets *kernel_sets_new(struct store *store, size_t max_bytes);
void kernel_sets_free(struct kernel_sets *k);

/* Turn b's coded kernels into KernelGroups (kernel_code_expand_batch_sets,
 * from a); *unknown: its records that referred to a set not held (the ack
 * tells the agent: Ack.kernel_sets_unknown). Returns the records expanded,
 * or -EBADMSG/-EMSGSIZE (malformed or oversized: refuse the batch), -ENOMEM
 * or -EIO (a set could not be read from the store: retry later). */
long kernel_sets_expand(struct kernel_sets *k, Argus__V1__Batch *b, size_t max_groups,
                        size_t max_clusters, ProtobufCAllocator *a, size_t *unknown);

/* Keep the sets b's expanded records define: each id checked against the
 * record's groups (a wrong one is counted and ignored), the new ones written
 * to the store as one durable write; every packed_kernels_set of b is then
 * zero. 0, or -EIO/-ENOMEM with err set (nothing kept: do not ack b). */
int kernel_sets_keep(struct kernel_sets *k, Argus__V1__Batch *b, char *err, size_t errlen);

struct kernel_sets_stats {
    uint64_t defined;  /* sets written to the store */
    uint64_t referred; /* records decoded with a set */
    uint64_t unknown;  /* records that referred to a set not held: stored without kernels */
    uint64_t bad;      /* definitions whose id is not their groups' */
    uint64_t cached;   /* sets in the cache now */
};
void kernel_sets_get_stats(struct kernel_sets *k, struct kernel_sets_stats *out);

#endif
