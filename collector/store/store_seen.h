/* Distinct step records (store_seen.c): which (job, step, rank) records
 * the store holds, answered from memory for recent steps and from the DB
 * for older ones, so a replay is neither stored nor counted twice. Its
 * state lives in struct store (store_db.h) as s->seen; store_write.c marks
 * records, retention forgets jobs, store.c frees it. Called under s->lock.
 */
#ifndef ARGUS_COLLECTOR_STORE_SEEN_H
#define ARGUS_COLLECTOR_STORE_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/store/store_kv.h"

struct store;
struct seen_mark; /* store_seen.c */

/* What store_seen.c keeps: which (step, rank) records a job has stored. */
struct seen {
    struct kvset jobs;      /* job -> struct seen_job (v.seen) */
    struct seen_job *last;  /* the job of the previous record (most batches hold one) */
    struct seen_mark *undo; /* marks of the batch being staged */
    size_t n_undo, cap_undo;
    struct kvset batch_keys; /* step keys of this batch checked against the DB */
};

/* Mark the record (job, step, rank) whose steps key is key/klen as staged in
 * the batch being written. Returns 1 when the store does not hold it yet (and
 * no earlier record of this batch had it), 0 when it does, -ENOMEM or -EIO
 * (err set). Recent steps of each rank are answered from memory; older ones,
 * and steps that may predate this process (at or below the job's last step
 * when the store was opened or the job first seen), by a DB read. Called
 * under s->lock. */
int store_seen_mark(struct store *s, const char *job, uint64_t step, uint32_t rank,
                    const uint8_t *key, size_t klen, char *err, size_t errlen);

/* The batch was committed (keep the marks) or not (undo them). */
void store_seen_end_batch(struct store *s, bool committed);

/* Forget a job whose steps retention removed. */
void store_seen_forget(struct store *s, const char *job);

/* Free everything (store_close). */
void store_seen_free(struct store *s);

#endif
