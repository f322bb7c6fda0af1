/* The fan-out: the spool to a set of collectors (common/collector_set.h),
 * each job's batches to its primary and its standby (docs/design.md
 * section 5, "Hot standby").
 *
 * One exporter (exporter.h) per member of the set. The batcher says which
 * jobs each sealed batch holds (batcher_last_sealed); fanout_sealed keeps
 * that per seq in memory, in a ring of the unacked seqs, and a record is
 * meant for a member when the member is the primary or the standby
 * (collector_set_place) of one of its jobs. A batch of no job (drop
 * counters only, raw span traces) is meant for every member that is a
 * primary or standby of a job the agent sent in the last
 * FANOUT_ACTIVE_NS, or for every member when there is none. A record the
 * ring does not know (spooled before a restart) is meant for every member:
 * a duplicate over a miss.
 *
 * Acks. Each exporter keeps an ack cursor: every seq <= it is acked by its
 * collector or not meant for it. The spool's ack watermark (what deletes
 * segments) is the lowest cursor, so a record stays until every collector
 * meant to have it acked it; the names registry (names.h) is acked with
 * the same watermark.
 *
 * The bound. A member with records waiting that acked nothing for
 * standby_wait is behind: records it needs are still kept for it, up to
 * the spool cap, but the spool is told (spool_set_delivered) that
 * everything up to the lowest cursor of the members that are not behind
 * was delivered, so the cap deleting such a record counts it as
 * SPOOL_LOSS_BEHIND (a collector has it), not as a loss. Each member
 * counts the records it needed that the cap deleted (behind_dropped).
 * fanout_idle, what a stopping agent waits for, does not wait for a member
 * that is behind.
 *
 * Membership. fanout_set_members takes a new set: exporters of members that
 * stay are kept, those of removed members freed (they no longer hold the
 * watermark), new members start at the spool's ack watermark (they catch up
 * from what is still spooled); every record's members are placed again;
 * the names registry is reset (a new standby or primary has none of them).
 * A batch rejected by one collector as invalid is dropped for all and
 * counted once (EXPORTER_DROP_REJECTED).
 *
 * Single-threaded: the agent's main loop. */
#ifndef ARGUS_AGENT_FANOUT_H
#define ARGUS_AGENT_FANOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/delivery/batcher.h"
#include "agent/delivery/exporter.h"
#include "common/collector_set.h"

struct spool;
struct names;
struct drops;
struct tls_pem;

/* A job the agent sent nothing of for this long no longer decides where
 * batches of no job go. */
#define FANOUT_ACTIVE_NS (UINT64_C(600) * 1000000000)

struct fanout_options {
    uint64_t keepalive_ns, backoff_min_ns, backoff_max_ns; /* as exporter_options */
    uint64_t standby_wait_ns;                              /* the bound (collector.standby_wait) */
    bool eager;                                            /* as exporter_options */
    exporter_capture_fn on_capture; /* capture requests of any member; may be NULL */
    void *on_capture_ctx;
    const struct tls_pem *tls; /* copied into each channel; NULL: plaintext */
};

struct fanout;

/* spool, names and drops are not owned and must outlive the fan-out. It
 * starts with no member (fanout_set_members). NULL on -ENOMEM. */
struct fanout *fanout_new(const struct fanout_options *o, struct spool *spool, struct names *names,
                          struct drops *drops);
void fanout_free(struct fanout *f);

/* The members are set now (copied). Returns 0, or -ENOMEM (or an address
 * gRPC refuses) with the members that could not be created left out (the
 * records they would hold wait in the spool for the next call). */
int fanout_set_members(struct fanout *f, const struct collector_set *set, uint64_t now_ns);

/* Record seq was just appended to the spool holding what sealed says
 * (batcher_last_sealed); names is the registry its job indexes are of. */
void fanout_sealed(struct fanout *f, uint64_t seq, const struct batcher_sealed *sealed,
                   uint64_t now_ns);

/* Poll every exporter, then move the spool's ack watermark, the names'
 * acks and the delivered watermark. now_ns is monotonic. */
void fanout_poll(struct fanout *f, uint64_t now_ns);

/* The earliest exporter_next_ns of the members (UINT64_MAX: idle). */
uint64_t fanout_next_ns(const struct fanout *f, uint64_t now_ns);

/* True when every member that is not behind has every record meant for it
 * (a set of none: true). */
bool fanout_idle(const struct fanout *f, uint64_t now_ns);

/* New credentials for every member (exporter_set_tls). 0 or -ENOMEM (the
 * members done so far keep the new ones). */
int fanout_set_tls(struct fanout *f, const struct tls_pem *tls, uint64_t now_ns);

/* One member as /metrics shows it. */
struct fanout_member_stats {
    const char *name; /* valid until the next fanout_set_members */
    bool connected, behind;
    uint64_t unacked;        /* spooled records it needs and has not acked (refreshed each s) */
    uint64_t acked;          /* its ack cursor */
    uint64_t behind_dropped; /* records it needed that the cap deleted first */
    struct exporter_stats exporter;
};

/* Members in the set. */
size_t fanout_members(const struct fanout *f);

/* What every member reads besides the plain messages (the Ack.features bits
 * all of them said on their streams up now; 0 with no member). */
uint32_t fanout_features(const struct fanout *f);

/* Member i (< fanout_members) into *out. */
void fanout_member_stats(const struct fanout *f, size_t i, struct fanout_member_stats *out);

/* The members together, as the unlabelled metrics show them: connected
 * when every member is (and there is one), counters summed, acked the
 * spool's ack watermark. */
void fanout_get_stats(const struct fanout *f, struct exporter_stats *out);

/* Whether record seq is meant for member i (for tests and the exporters). */
bool fanout_wants(const struct fanout *f, size_t i, uint64_t seq);

#endif
