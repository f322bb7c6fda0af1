/* One step of one job as the diagnosis engine keeps it: compact per-rank
 * features extracted from argus.v1.StepRecord (docs/design.md section 7), plus the
 * per-job dictionaries that map phase, kernel and collective name ids to the
 * small indices the features use.
 *
 * A frame owns its arrays; diag_frame_free releases them. Nothing here keeps
 * a pointer into a StepRecord: the record may be freed right after
 * diag_frame_add_record returns.
 */
#ifndef ARGUS_COLLECTOR_DIAG_FRAME_H
#define ARGUS_COLLECTOR_DIAG_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_hw.h"
#include "proto/argus.pb-c.h"

#define DIAG_MAX_PHASES 8     /* distinct phase names tracked per job */
#define DIAG_MAX_KERNELS 8    /* distinct (kernel, stream) tracked per job */
#define DIAG_MAX_COLL_NAMES 8 /* distinct collective names per job */
#define DIAG_MAX_COLL_STREAMS 8
#define DIAG_QGRID 16       /* points of each quantile function */
#define DIAG_MAX_CLUSTERS 8 /* clusters used per kernel group */

/* Name of an id, or NULL while unknown (see diag_engine.h). */
typedef const char *(*diag_dict_name_fn)(void *ctx, uint64_t name_id);

enum diag_name_class {
    DIAG_CLASS_UNKNOWN = 0, /* name not known yet: treated as work */
    DIAG_CLASS_WORK = 1,    /* same work across DP replicas: work groups */
    DIAG_CLASS_EXPERT = 2,  /* expert phase or all-to-all: expert groups */
};

/* Name-id dictionaries of one job, filled first come first served. */
struct diag_dict {
    uint64_t phase[DIAG_MAX_PHASES];
    uint8_t phase_class[DIAG_MAX_PHASES];
    bool phase_backward[DIAG_MAX_PHASES]; /* work flows from the last stage back */
    uint32_t n_phase;
    uint64_t kernel[DIAG_MAX_KERNELS];
    uint32_t kernel_stream[DIAG_MAX_KERNELS];
    uint32_t n_kernel;
    uint64_t coll[DIAG_MAX_COLL_NAMES];
    uint8_t coll_class[DIAG_MAX_COLL_NAMES];
    uint32_t n_coll;
    uint32_t coll_stream[DIAG_MAX_COLL_STREAMS]; /* streams that ran collectives */
    uint32_t n_coll_stream;
    uint64_t overflow; /* names that did not fit (counted, ignored) */
};

/* One collective call of one rank, times in UNIX ns (node clock). A call
 * without GPU times (CPU jobs, steps inferred from host calls) has start =
 * arrival and end = its host end (the library finished it or its wait
 * returned: the same instant on every member, so it teaches the clock
 * offsets), or 0 when unknown (it teaches them nothing). */
struct diag_coll {
    uint64_t comm_id;
    uint64_t seq;
    bool local; /* (comm, seq) need not be the same call on every member: match by order */
    int64_t arrival;
    int64_t start;
    int64_t end;
    uint32_t rank;
    uint16_t ord; /* calls of this name before it in the rank's record */
    uint8_t name; /* index into diag_dict.coll */
};

/* What the engine keeps of one rank's step. A phase or kernel that is absent
 * has phase_ns 0 / its bit clear in kernel_mask. 208 bytes, 24 of them the
 * hardware counters (hw, xid; 16 + 4 and padding); 720 with its
 * diag_rank_q. */
struct diag_rank_step {
    bool present;
    uint64_t duration_ns;
    uint64_t phase_ns[DIAG_MAX_PHASES];
    uint64_t busy_ns;    /* kernel time on non-collective streams */
    uint64_t off_cpu_ns; /* host counters */
    uint64_t runq_ns;
    uint64_t sync_wait_ns;
    uint32_t kernel_mask;
    uint32_t kernel_count; /* kernels on non-collective streams (launches of more work) */
    uint64_t work_id[DIAG_MAX_KERNELS]; /* KernelGroup.work_id, 0 unknown */
    struct diag_hw_step hw;             /* StepRecord.hw (diag_hw.h), zero without */
    uint32_t xid;                       /* its last XID code (0: none) */
};

/* One rank's quantile functions, ns, one per kernel of the dictionary (a
 * kernel's is valid where its kernel_mask bit is set); kept apart from
 * diag_rank_step so that the scans of L2 over the ranks read 208 bytes a
 * rank, not 720. */
typedef float diag_rank_q[DIAG_MAX_KERNELS][DIAG_QGRID];

/* Bytes a frame holds per rank. */
#define DIAG_FRAME_RANK_BYTES (sizeof(struct diag_rank_step) + sizeof(diag_rank_q))

struct diag_frame {
    bool used;
    bool closed; /* analysed; kept for amending with late records */
    uint64_t step;
    uint64_t first_ns;  /* when its first record arrived */
    uint64_t onset_ns;  /* earliest start_unix_ns of its records by the close (0: none) */
    uint64_t close_seq; /* closed steps of the job before this one closed */
    uint32_t reported;  /* distinct ranks present */
    uint32_t cap;       /* ranks[] length */
    struct diag_rank_step *ranks;
    diag_rank_q *q; /* [cap], beside ranks */
    struct diag_coll *colls;
    size_t n_colls, cap_colls;
    uint32_t *amend; /* ranks that arrived after the close, not analysed yet */
    uint32_t n_amend, cap_amend;
};

/* Make room for ranks [0, cap). Keeps existing content. Returns 0 or -ENOMEM. */
int diag_frame_reserve(struct diag_frame *f, uint32_t cap);

/* Forget the content (keeps the memory) and start step `step` at now_ns. */
void diag_frame_reset(struct diag_frame *f, uint64_t step, uint64_t now_ns);

/* Free the arrays. f itself is the caller's. */
void diag_frame_free(struct diag_frame *f);

/* Heap bytes the frame holds (its share of the memory budget). */
size_t diag_frame_bytes(const struct diag_frame *f);

/* Note that rank's record was added after the close (diag_amend). 0 or
 * -ENOMEM. */
int diag_frame_note_amend(struct diag_frame *f, uint32_t rank);

/* Extract one record into the frame (rank < cap). Returns 0, 1 when the rank
 * had already reported this step (duplicate: ignored), or -ENOMEM. Name ids
 * that do not fit the dictionaries are counted in dict->overflow. */
int diag_frame_add_record(struct diag_frame *f, struct diag_dict *dict,
                          const Argus__V1__StepRecord *s);

/* The work id (KernelGroup.work_id) that most of the n present members
 * mem of f ran kernel index k with: the majority of the known (non-zero)
 * ids, 0 when they have none or no id has more than half of them. O(n). */
uint64_t diag_frame_work_majority(const struct diag_frame *f, const uint32_t *mem, uint32_t n,
                                  int k);

/* Whether stream ran collectives in this job. */
bool diag_dict_is_coll_stream(const struct diag_dict *d, uint32_t stream);

/* Classify the phase and collective names not classified yet through the
 * name callback: names containing "expert", "moe", "alltoall", "all_to_all"
 * or "all2all" (any case) are expert work, measured in expert groups; the
 * rest is work. A name the callback does not know yet stays unknown (treated
 * as work) and is tried again on the next call. Phases named "backward" or
 * "bwd" are marked as flowing backward through a pipeline. O(names). */
void diag_dict_classify(struct diag_dict *d, diag_dict_name_fn name, void *ctx);

/* True when phase index p (or collective name index c) is expert work. */
static inline bool diag_dict_phase_expert(const struct diag_dict *d, uint32_t p)
{
    return d->phase_class[p] == DIAG_CLASS_EXPERT;
}
/* True when phase p runs backward through a pipeline ("backward", "bwd"). */
static inline bool diag_dict_phase_backward(const struct diag_dict *d, uint32_t p)
{
    return d->phase_backward[p];
}
static inline bool diag_dict_coll_expert(const struct diag_dict *d, uint32_t c)
{
    return d->coll_class[c] == DIAG_CLASS_EXPERT;
}

#endif
