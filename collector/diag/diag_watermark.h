/* Event-time progress of one job, per agent stream (docs/design.md section 7):
 * for every rank, the highest step delivered, through which stream (the
 * Batch's agent_id) and when, in the collector's receive time; from that the
 * job's watermark and the ranks a step waits for.
 *
 * A rank is live (it holds the watermark) while it made progress (delivered
 * a higher step) within hold_ns, so a slow or stopped stream holds steps
 * open only up to that bound. The ranks of a known world that were never
 * seen are live during the first hold_ns of the job (agents start seconds
 * apart); with the world unknown, nothing is complete during that grace.
 * The watermark is the lowest next-step of the live ranks: every step below
 * it was delivered by every live rank. With no live rank left (the whole job
 * paused or ended), it moves past everything delivered.
 *
 * Pure: every time is the caller's (receive time, UNIX ns). Not thread-safe.
 */
#ifndef ARGUS_COLLECTOR_DIAG_WATERMARK_H
#define ARGUS_COLLECTOR_DIAG_WATERMARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIAG_WM_NO_STREAM UINT32_MAX

struct diag_wm_rank {
    uint64_t next;         /* highest step delivered + 1; 0 none */
    uint64_t last_recv_ns; /* last record received; 0 never seen */
    uint64_t progress_ns;  /* when next last grew */
    uint32_t stream;       /* the stream that delivered it last */
    bool silent;           /* reported silent, not back yet */
};

struct diag_wm_stream {
    char *id;              /* Batch.agent_id ("" for records fed without one) */
    uint64_t last_recv_ns; /* its last record of this job */
    bool silent;           /* reported as a whole, not back yet */
    bool down;             /* its link is down (diag_silence_check): unreachable, not silent */
    uint64_t up_ns;        /* when its link last came up (0 unknown): quiet counts from then */
};

/* What the seen ranks under one node of the progress tree hold (see
 * diag_watermark_update); a node without seen ranks has seen 0. */
struct diag_wm_node {
    uint64_t min_progress, max_progress; /* progress_ns */
    uint64_t min_next;
    uint32_t seen;
};

struct diag_watermark {
    uint64_t hold_ns;
    uint32_t cap;   /* ranks with room */
    uint32_t world; /* known world size, 0 unknown */
    uint32_t seen;  /* ranks seen at least once */
    struct diag_wm_rank *rank;
    struct diag_wm_node *tree; /* 2 * leaves nodes, root 1, rank i at leaves + i */
    uint32_t leaves;           /* a power of two >= cap */
    uint64_t delivered;        /* highest next of any rank */
    struct diag_wm_stream *streams;
    uint32_t n_streams, cap_streams;
    uint32_t *stream_slots;     /* hash of the ids: stream index + 1, 0 empty */
    uint32_t n_stream_slots;    /* a power of two, over twice n_streams */
    uint64_t first_ns, last_ns; /* the job's first and newest receive time */
    uint64_t newest_step;       /* highest step delivered by anyone */
    uint64_t mark;              /* steps below it were delivered by every live rank */
    uint32_t live;              /* ranks a complete step needs (UINT32_MAX: unknown yet) */
};

/* hold_ns 0 means 10 s. */
void diag_watermark_init(struct diag_watermark *w, uint64_t hold_ns);
void diag_watermark_free(struct diag_watermark *w);

/* Room for ranks [0, cap). 0 or -ENOMEM. */
int diag_watermark_reserve(struct diag_watermark *w, uint32_t cap);

/* The stream named id, added when new (hashed: O(1)). Its index, or
 * -ENOMEM. */
int diag_watermark_stream(struct diag_watermark *w, const char *id);

/* rank (< cap) delivered step through stream at recv_ns. Returns true when
 * the rank was never seen before. O(log ranks). */
bool diag_watermark_record(struct diag_watermark *w, uint32_t stream, uint32_t rank, uint64_t step,
                           uint64_t recv_ns);

/* Recompute mark and live at now_ns. O(log ranks) per run of ranks that
 * stopped holding the watermark (a tree over the ranks keeps their progress),
 * O(log ranks) when every rank holds it. */
void diag_watermark_update(struct diag_watermark *w, uint64_t now_ns);

/* Seconds of receive time the oldest open step (first record at
 * oldest_first_ns, 0 none) has waited at now_ns. */
double diag_watermark_lag_s(const struct diag_watermark *w, uint64_t oldest_first_ns,
                            uint64_t now_ns);

#endif
