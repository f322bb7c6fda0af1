/* Dense slots for one job's rank numbers: everything diagnosis keeps per rank
 * (open steps, flags, persistence, liveness) is an array indexed by slot, so
 * its memory follows the ranks that report, not the highest rank number (two
 * 71-byte batches of rank 65,535 once made every per-rank array 65,536 long:
 * 3.2 GB charged). A rank gets a slot when it is first seen (a record, a
 * resource, a status, progress) and keeps it for the engine's life.
 *
 * Slot 0 is never a rank's: slots start at 1, so a rank number used where a
 * slot belongs (or the other way round) is off by one in every test, not only
 * in the jobs whose ranks arrive out of order.
 *
 * Inside the engine "rank" means slot; what leaves it (suspects, evidence
 * texts, recovered suspects, liveness findings) goes through
 * diag_slots_rank. Not thread-safe (the job's lock). */
#ifndef ARGUS_COLLECTOR_DIAG_SLOTS_H
#define ARGUS_COLLECTOR_DIAG_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct diag_slots {
    uint32_t *rank_of; /* [cap]: slot -> rank; rank_of[0] unused */
    uint32_t n, cap;   /* slots handed out + 1 (slot 0), rank_of's length */
    uint32_t *table;   /* open addressing, rank -> slot; 0 = empty */
    uint32_t size;     /* table length: a power of two, at least twice n */
};

/* Free the arrays; s is empty again (a zeroed struct is an empty map). */
void diag_slots_free(struct diag_slots *s);

/* rank's slot, 0 when it has none. */
uint32_t diag_slots_find(const struct diag_slots *s, uint32_t rank);

/* rank's slot into *slot, handed out now when it had none. 0 or -ENOMEM
 * (nothing changed). */
int diag_slots_get(struct diag_slots *s, uint32_t rank, uint32_t *slot);

/* The rank of slot; a value that is no slot (DIAG_RANK_NONE, out of range)
 * is returned as it is, and so is every value when s is NULL (no map: the
 * indexes are the rank numbers). */
uint32_t diag_slots_rank(const struct diag_slots *s, uint32_t slot);

/* Slots handed out (ranks seen). */
uint32_t diag_slots_count(const struct diag_slots *s);

/* Heap bytes of the map. */
size_t diag_slots_bytes(const struct diag_slots *s);

/* The ranks of the slots below cap that pick(ctx, slot) keeps, in rank order
 * as ranges ("0-7,9,12-15", "..." when buf is full) into buf (len >= 8).
 * Returns how many were kept. */
uint32_t diag_slots_ranks_text(const struct diag_slots *s, uint32_t cap,
                               bool (*pick)(const void *ctx, uint32_t slot), const void *ctx,
                               char *buf, size_t len);

#endif
