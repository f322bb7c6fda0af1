/* Where a job lives in a set of collectors (docs/design.md section 10):
 * rendezvous (highest random weight) hashing of the job id over the set's
 * member names. Every member gets a weight for the job; the member of the
 * highest weight is the job's primary, the next its standby. Agents and
 * argusctl that hold the same member names compute the same placement
 * with no coordinator, whatever order their lists are in; adding a member
 * moves only the jobs it now wins (about 1/N of them, all to it), and
 * removing one moves only its jobs (each to its standby).
 *
 * The weights are part of the wire contract in effect: an agent and a
 * collector of different versions must place a job alike, so the function
 * never changes (tests/unit/test_placement.c pins its values).
 *
 * Pure and reentrant. */
#ifndef ARGUS_COMMON_PLACEMENT_H
#define ARGUS_COMMON_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* The weight of member for job: FNV-1a 64 of "job\0member" through
 * splitmix64's finaliser (FNV alone mixes its low bits poorly). */
uint64_t placement_weight(const char *job, const char *member);

/* The k members of highest weight for job, best first, as indexes into
 * members[0..n) (out[0] the primary, out[1] the standby). Equal weights go
 * by the member name, so the order of members does not matter; a name
 * listed twice counts once (the first index). Returns how many were
 * written: min(k, distinct names). NULL or empty names are skipped. */
size_t placement_pick(const char *job, const char *const *members, size_t n, size_t *out, size_t k);

#endif
