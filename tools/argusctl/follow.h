/* argusctl stragglers --follow: poll a job's reports by creation time and
 * print each new one once, until SIGINT or SIGTERM.
 *
 * Each poll asks for reports created since the newest one seen, less an
 * overlap (FOLLOW_OVERLAP_NS), so that a report stored a little after a
 * newer one, or stamped by a collector clock a little behind, is not
 * missed; reports already printed are known by their id. Without a since
 * time the first answer is only noted (what exists is not new); with one,
 * it is printed. A collector that never answered ends the follow
 * (CTL_UNREACHABLE); one that stops answering, or a job with no report
 * yet (CTL_NOT_FOUND), is waited for after one message on stderr, with the
 * fetches quiet meanwhile. Output is flushed after each poll. */
#ifndef ARGUS_ARGUSCTL_FOLLOW_H
#define ARGUS_ARGUSCTL_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define FOLLOW_OVERLAP_NS (120ULL * 1000000000ULL)

struct follow_ops {
    /* Reports created since from_ns: *raw the reply (freed by follow with
     * protobuf-c), *view what to print (stragglers_view_free). Returns a
     * ctl_exit code. */
    int (*fetch)(void *ctx, uint64_t from_ns, Argus__V1__StragglersResponse **raw,
                 Argus__V1__StragglersResponse **view);
    /* Print one new report. */
    void (*print)(void *ctx, const Argus__V1__Report *rep);
    /* Say nothing about failed fetches (true) or say it again (false). */
    void (*quiet)(void *ctx, bool quiet);
};

/* Follow until interrupted (returns CTL_OK) or a fetch fails for good
 * (returns its code). since_ns 0: only reports new after the start. */
int follow_run(const struct follow_ops *ops, void *ctx, uint64_t since_ns, uint64_t poll_ns);

#endif
