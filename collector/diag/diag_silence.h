/* Silence by wall clock (docs/design.md section 7): which ranks and agent streams
 * of a job stopped delivering while the job went on.
 *
 * A rank is silent when nothing covering it (a step record of it) arrived for
 * silence_ns of collector receive time while other ranks of the job kept
 * delivering for that long after it: a job that paused or ended as a whole
 * is not silent, a rank that is missing from a closed step is not silent, a
 * rank that was never seen (start-up, joining late) is not silent. When every
 * rank of an agent stream went quiet, the finding is one suspect about the
 * node (rank DIAG_RANK_NONE, group "node", naming the node and its ranks),
 * not one per rank. A rank or stream is reported once and becomes silent
 * again only after it delivered something (diag_watermark_record clears it).
 *
 * A stream whose link is down (link says so: the collector saw its agent's
 * stream end and none came back) is unreachable, not silent: neither it nor
 * its ranks are reported while it is down, and once it is back, quiet
 * counts from when it came back (the agent drains its spool first).
 */
#ifndef ARGUS_COLLECTOR_DIAG_SILENCE_H
#define ARGUS_COLLECTOR_DIAG_SILENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/diag/diag_slots.h"
#include "collector/diag/diag_watermark.h"
#include "proto/argus.pb-c.h"

/* Where a rank runs, for the suspect (strings stay the caller's). */
struct diag_silence_where {
    const char *node;
    int32_t gpu;
    const char *group;
};
typedef void (*diag_silence_where_fn)(void *ctx, uint32_t rank, struct diag_silence_where *out);

/* Whether the collector hears agent (an agent stream's id) now: false when
 * its stream ended and none came back; else true with *since_ns (UNIX ns)
 * when its stream came up, 0 unknown. Thread-safe (collector/ingest/links.h). */
typedef bool (*diag_silence_link_fn)(void *ctx, const char *agent, uint64_t *since_ns);

struct diag_silence_counts {
    uint32_t nodes; /* node findings added */
    uint32_t ranks; /* rank findings added */
    uint32_t down;  /* streams whose link is down: unreachable, not reported */
};

/* How to tell where a rank runs, and whether a stream's link is up (link
 * NULL: always). */
struct diag_silence_env {
    diag_silence_where_fn where; /* by the watermark's index (a slot) */
    void *where_ctx;
    const struct diag_slots *slots; /* the rank numbers of the watermark's indexes */
    diag_silence_link_fn link;
    void *link_ctx;
};

/* Find what went silent at now_ns (silence_ns of receive time) and add one
 * suspect per quiet stream and per quiet rank of a stream that still
 * delivers to rep; window goes into the suspects; streams whose link is
 * down are passed over. Returns 0 or -ENOMEM; *out counts what was added.
 * O(ranks + streams). */
int diag_silence_check(struct diag_watermark *w, uint64_t silence_ns, uint64_t now_ns,
                       uint32_t window, const struct diag_silence_env *env, Argus__V1__Report *rep,
                       struct diag_silence_counts *out);

/* "0-7,9,12-15" into buf for the ranks of stream (at most len bytes, "..."
 * when cut): the rank numbers of the watermark's slots (slots NULL: the
 * indexes are the numbers). Returns the number of ranks. */
uint32_t diag_silence_ranks(const struct diag_watermark *w, const struct diag_slots *slots,
                            uint32_t stream, char *buf, size_t len);

#endif
