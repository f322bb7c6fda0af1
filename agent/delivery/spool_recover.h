/* What spool_open finds on disk (spool.h: Identity, Corruption): the meta
 * file and the ack slots read, every segment file scanned into the index of
 * valid records, damage counted once, segments of another epoch counted as
 * dropped and deleted. A function of the directory: it knows nothing of an
 * open spool, and spool.c takes what it returns. */
#ifndef ARGUS_AGENT_SPOOL_RECOVER_H
#define ARGUS_AGENT_SPOOL_RECOVER_H

#include <stdint.h>

#include "agent/delivery/spool_format.h"

/* What spool_recover found in a spool directory. */
struct spool_found {
    struct spool_meta meta;   /* identity and counters, with the damage and drops found */
    struct spool_index index; /* the live segments' valid records, oldest first */
    uint64_t ack_gen;         /* the highest ack slot generation seen (any epoch) */
    uint64_t next_seq;        /* the first seq to hand out; meta reserves past it */
};

/* Recover the spool in directory dirfd, whose ack file is ackfd (both stay
 * the caller's), reading records up to max_record_bytes. out must start
 * zeroed. Fixes the identity (meta's epoch, else the newest segment's, else
 * now), indexes the valid records, truncates a damaged tail of the newest
 * segment of the epoch, deletes segments of another epoch, without valid
 * records or fully acked, and removes a stale meta.tmp. It does not write
 * meta: the caller writes out->meta next. Returns 0 or -errno (-ENOMEM, a
 * directory read error); either way the caller frees out->index with
 * spool_index_free. */
int spool_recover(int dirfd, int ackfd, uint32_t max_record_bytes, struct spool_found *out);

#endif
