/* The store's writers (store_write.c): store_ingest stages a batch against
 * the caches, commits it in one WriteBatch with its high-water mark, then
 * applies it to the caches; also store_high_water and store_put_report
 * (declared in store.h). This header holds the staging area, which lives in
 * struct store (store_db.h) as s->stage.
 */
#ifndef ARGUS_COLLECTOR_STORE_WRITE_H
#define ARGUS_COLLECTOR_STORE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/store/store_kv.h"

/* The staged entries of one index family (time or received): second | job
 * -> step range, in index (lookup) and items (insertion order). */
struct stage_index {
    struct kvset index;
    struct kv_node **items;
    size_t n, cap;
};

/* Per-batch staging: changes computed before the write, applied after. */
struct stage {
    struct kvset jobs_index;
    struct stage_index time, received;
    struct job_entry *jobs; /* copies; ranks holds only the new ranks */
    struct job_entry **cached;
    size_t n_jobs, cap_jobs, cap_cached;
    uint64_t recv_ns;       /* the batch's receive time (collector clock) */
    uint64_t fresh_records; /* step records of the batch not stored before */
};

/* Free what the staging area holds (store_close). */
void store_stage_free(struct stage *st);

#endif
