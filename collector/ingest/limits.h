/* Admission limits: what one batch may add to the state the collector keeps
 * per job (docs/design.md section 4, issue 15 "bounded by construction"). Ingest
 * calls limits_admit after a batch is validated and before anything is
 * stored or allocated for it; every limit is checked against what the batch
 * would add, so a refused batch costs nothing but its own parsing.
 *
 * Per job (a job is named by a step record, resource, rank status or name
 * entry):
 *   - rank numbers below max_ranks_per_job; a Resource's declared
 *     world_size is only a hint, capped to it, and costs nothing (diagnosis
 *     keeps a slot per rank that reports, whatever its number);
 *   - at most max_names_per_job distinct names, max_names_total over all
 *     jobs;
 *   - steps below max_step (2^64-1 and the like are refused), and no step
 *     more than max_step_jump above the job's highest step so far (for a new
 *     job, above the batch's lowest step).
 * Per collector: at most max_jobs jobs known at once, and per-job state within
 * job_memory bytes. The memory of a job is charged by a model of what the
 * collector keeps for it at most (struct limits_cost: a base per job, per
 * distinct rank seen, per name plus its length), so the budget binds
 * before the memory is taken. A batch may carry several jobs (a node runs
 * ranks of more than one job): at most max_jobs_per_batch, each admitted on
 * its own terms; the batch is admitted whole or not at all.
 *
 * A job that sent nothing for job_idle_ns is forgotten (its charge, names and
 * step mark go), checked at most once a second and whenever a new job would
 * not fit; fed again it starts anew. Counts are of this collector run.
 *
 * A refusal returns TRANSPORT_INVALID_ARGUMENT (a rank or step that cannot be
 * right) or TRANSPORT_RESOURCE_EXHAUSTED (a capacity), with a sentence naming
 * the job, the value, the limit and its config key, and is counted by limit.
 * Thread-safe (one lock; admission is O(items of the batch)). */
#ifndef ARGUS_COLLECTOR_LIMITS_H
#define ARGUS_COLLECTOR_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* The memory model, bytes (limits_default_options has the measured ones). */
struct limits_cost {
    uint64_t job;  /* one job: its diagnosis engine and tables */
    uint64_t rank; /* one rank seen: its per-rank state, open and kept steps */
    uint64_t name; /* one name besides its bytes: dictionary and set entries */
};

struct limits_options {
    uint32_t max_jobs;
    uint32_t max_ranks_per_job;
    uint64_t max_names_per_job;
    uint64_t max_names_total;
    uint64_t max_step;
    uint64_t max_step_jump;
    uint32_t max_jobs_per_batch;
    uint64_t job_memory; /* bytes */
    uint64_t job_idle_ns;
    struct limits_cost cost;
};

/* What each refusal is counted as (argus_limit_rejections_total{limit}). */
enum limits_kind {
    LIMITS_JOBS,
    LIMITS_RANKS_PER_JOB,
    LIMITS_NAMES_PER_JOB,
    LIMITS_NAMES_TOTAL,
    LIMITS_STEP,
    LIMITS_STEP_JUMP,
    LIMITS_JOBS_PER_BATCH,
    LIMITS_JOB_MEMORY,
    LIMITS_KIND_COUNT,
};

/* The label of a kind ("jobs", "ranks_per_job", ...). */
const char *limits_kind_name(enum limits_kind k);

/* The documented defaults. */
void limits_default_options(struct limits_options *o);

struct limits;

/* o is copied. NULL on ENOMEM. */
struct limits *limits_new(const struct limits_options *o);
void limits_free(struct limits *l);

/* Admit batch b (already validated: job ids are printable strings) received
 * at now_ns (any clock, the same for every call): check every limit for every
 * job it names, then record its new jobs, ranks, names and highest steps and
 * charge their memory. All or nothing. Returns TRANSPORT_OK, or
 * TRANSPORT_INVALID_ARGUMENT / TRANSPORT_RESOURCE_EXHAUSTED with a sentence
 * in err (counted), or TRANSPORT_INTERNAL on ENOMEM (nothing recorded). */
int limits_admit(struct limits *l, const Argus__V1__Batch *b, uint64_t now_ns, char *err,
                 size_t errlen);

struct limits_stats {
    uint64_t rejections[LIMITS_KIND_COUNT];
    uint64_t jobs;         /* known now */
    uint64_t names;        /* distinct names of the known jobs */
    uint64_t memory;       /* bytes charged now */
    uint64_t memory_limit; /* job_memory */
    uint64_t jobs_forgotten;
};
void limits_get_stats(struct limits *l, struct limits_stats *out);

#endif
