/* Rank ownership (issue 31): which agent identity may write each rank of a
 * job. Ingest judges every batch with owners_judge after admission and
 * before the store; it takes in the batch and the identity that sent it (the
 * certificate's under mTLS, the batch's agent id in plaintext) and gives out
 * a verdict for the whole batch, plus the owners table in the store (owners
 * family) so a restarted collector judges as before.
 *
 * A rank of a job belongs to the identity that first wrote a record of it:
 * a Resource, a StepRecord or a RankStatus. Its later records from another
 * identity are refused (TRANSPORT_PERMISSION_DENIED naming the rank, the job,
 * the owner and the intruder; counted; logged at most once per (job, rank,
 * intruder) per log_interval_ns), and the whole batch with them: nothing of
 * it is stored, the agent keeps it spooled. A rank moves to another identity,
 * logged at info ("rank 8 of job J moves from node-b to node-a: ..."), when
 *   - the batch writes it in a newer attempt of the job (Resource.restart,
 *     RankStatus.restart; the highest seen of the job or declared by this
 *     batch) than the owner's: the attempt the owner's own records declared,
 *     or the job's when it claimed the rank (its late records of an older
 *     attempt keep the rank but not a newer attempt from its next writer), or
 *   - the owner has sent no record of it for idle_ns (diag.job_idle).
 * The owner's own records keep it (last seen = the receive time).
 *
 * Memory: per job, one 48-byte slot per rank up to its highest and the
 * identities that own its ranks; jobs silent for OWNERS_FORGET_IDLE x idle_ns
 * are forgotten (with their stored entries), and at most max_jobs are kept
 * (a new one forgets the least recently seen). Ranks per job are bounded by
 * admission (limits.h) before judging; owners_judge refuses a rank at or
 * above max_ranks (INVALID_ARGUMENT) in case it runs without it.
 *
 * Storage: a claim, a move or a changed epoch is written at once; the last
 * seen time at most every idle_ns / 8 per rank (so after a restart the owner
 * looks at most that much more silent than it was). A failed write is counted
 * and retried with the next record of the rank. Thread-safe (one lock; the
 * store writes happen outside it). */
#ifndef ARGUS_COLLECTOR_OWNERS_H
#define ARGUS_COLLECTOR_OWNERS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

struct store;

/* A job silent this many idle bounds is forgotten. */
#define OWNERS_FORGET_IDLE 2

struct owners_options {
    uint64_t idle_ns;         /* owner silent this long: its ranks may move (diag.job_idle) */
    uint32_t max_jobs;        /* jobs remembered at once */
    uint32_t max_ranks;       /* ranks per job (limits.max_ranks_per_job) */
    uint64_t log_interval_ns; /* one refusal log per (job, rank, intruder) per interval */
};

struct owners;

/* A table over store (not owned; NULL: memory only, nothing survives a
 * restart); o is copied. NULL on ENOMEM. */
struct owners *owners_new(const struct owners_options *o, struct store *store);

/* Free the table (not the store). NULL is fine. */
void owners_free(struct owners *ow);

/* Load the stored table (once, before the first judge); entries of jobs
 * silent past the forget bound at now_ns are dropped from the store. Returns
 * the number of ranks loaded, or -EIO/-ENOMEM with a sentence in err. */
long owners_load(struct owners *ow, uint64_t now_ns, char *err, size_t errlen);

/* Judge batch b (validated: job ids are printable) sent by identity and
 * received at now_ns (the collector's real-time clock, ns). Every rank the
 * batch names is checked first; only when all may be written are they
 * claimed, moved and refreshed (and stored). Returns TRANSPORT_OK, or
 * TRANSPORT_PERMISSION_DENIED with a sentence in err naming the rank, job,
 * owner and identity (nothing changed), or TRANSPORT_INVALID_ARGUMENT (a rank
 * at or above max_ranks) / TRANSPORT_INTERNAL (ENOMEM; nothing claimed). */
int owners_judge(struct owners *ow, const Argus__V1__Batch *b, const char *identity,
                 uint64_t now_ns, char *err, size_t errlen);

/* The owner of (job, rank) now, copied into out (outlen bytes). 1 when
 * owned, 0 when not (out ""). */
int owners_get(struct owners *ow, const char *job, uint32_t rank, char *out, size_t outlen);

struct owners_stats {
    uint64_t refused;      /* batches refused (argus_collector_rank_owner_refused_total) */
    uint64_t moves;        /* ranks that moved to another identity */
    uint64_t store_errors; /* entries not written (retried) */
    uint64_t jobs, ranks;  /* known now */
};
void owners_get_stats(struct owners *ow, struct owners_stats *out);

#endif
