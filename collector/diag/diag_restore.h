/* What diagnosis brings back from the store for a job whose state it starts
 * again while the job runs: after a collector restart (SIGTERM, kill -9, an
 * upgrade) or when the job comes back after its state was retired. It takes
 * in the store and a job id and gives out, into the job's new engine and
 * recent-suspects summary, the placement of its ranks (the Resources of its
 * latest attempt: node, GPU, parallel coordinates, world) and the suspects
 * of its stored reports. Agents declare a rank's Resource once, so without
 * this a running job's reports would name no node, GPU or group after a
 * restart, and its alerts would change identity (alert_book.h: node:X
 * becomes rank:N) and page again; its per-job series would vanish until the
 * next report. Only a job the store saw within idle_ns is brought back: an
 * old job id used again by a new run starts clean. docs/operations.md,
 * "Restarts and upgrades". */
#ifndef ARGUS_COLLECTOR_DIAG_RESTORE_H
#define ARGUS_COLLECTOR_DIAG_RESTORE_H

#include <stdint.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/recent_suspects.h"
#include "collector/store/store.h"

struct diag_restored {
    uint32_t ranks;   /* Resources given to the engine */
    uint32_t restart; /* their attempt (the job's epoch) */
    uint32_t reports; /* reports whose suspects were noted */
};

/* Bring job back from s into e (its placement) and recent (its reports'
 * suspects) when the store saw it at or after now_ns - idle_ns (idle_ns 0:
 * any time). *out says what came back (all 0: nothing, a new or old job).
 * 0, or a negative errno of the store (what was read is kept). */
int diag_restore_job(struct store *s, const char *job, uint64_t now_ns, uint64_t idle_ns,
                     struct diag_engine *e, struct recent_suspects *recent,
                     struct diag_restored *out);

/* Call fn(ctx, job) for every job the store saw at or after now_ns - idle_ns
 * (the jobs a restarted collector takes back at start). 0 or -errno. */
int diag_restore_foreach_recent(struct store *s, uint64_t now_ns, uint64_t idle_ns,
                                void (*fn)(void *ctx, const char *job), void *ctx);

#endif
