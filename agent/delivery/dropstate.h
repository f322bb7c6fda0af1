/* The agent's cumulative drop counters across restarts.
 *
 * Batches carry drop counters as totals since the spool epoch began, and the
 * collector keeps the newest total. A restarted agent would start its own
 * counters (CUPTI ring full, probe rings, rejected batches, spool write
 * failures...) from 0 again, and the collector's totals would fall. So the
 * counters are saved in the spool directory whenever they changed, before
 * the batch that carries them is spooled (a saved total is never below one
 * the collector has seen), and loaded at start when the spool's epoch is
 * the same. Counters that the spool rebuilds itself from its own meta
 * (skip list) are not saved, or they would be counted twice.
 *
 * The file is text: a header line "argus-drops 1 EPOCH", then one line per
 * counter "TOTAL\tRANK\tREASON\tJOB" (JOB "-" for node-level). It is
 * written to a temporary file, fsynced and renamed over the old one. */
#ifndef ARGUS_AGENT_DROPSTATE_H
#define ARGUS_AGENT_DROPSTATE_H

#include <stdint.h>

#include "agent/delivery/drops.h"

#define DROPSTATE_FILE "drops"

/* Write d's counters (except reasons in skip, a NULL-terminated list) as
 * dir/DROPSTATE_FILE for epoch. Returns 0 or -errno. The caller marks d
 * saved (drops_saved) on success. */
int dropstate_save(const char *dir, uint64_t epoch, const struct drops *d, const char *const *skip);

/* Add the counters saved in dir for epoch to d (drops_add), but those in skip. Returns
 * the number of counters loaded: 0 when there is no file or it is of
 * another epoch; a malformed line is skipped (-EBADMSG when nothing valid
 * was read but the file was not empty, or the header is wrong). */
int dropstate_load(const char *dir, uint64_t epoch, struct drops *d, const char *const *skip);

#endif
