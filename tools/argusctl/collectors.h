/* argusctl collectors: the collector set as argusctl sees it. Every member
 * is asked for its jobs (JobsResponse); a member that answers is up. Each
 * job any member holds is placed over the set (common/collector_set.h:
 * its primary and standby), and it has moved when its primary is up and
 * holds nothing of it (the set changed since it was placed: its history is
 * on the members it was on before, where argusctl still finds it). With
 * --job J only J's primary and standby are printed (no call is made). */
#ifndef ARGUS_ARGUSCTL_COLLECTORS_H
#define ARGUS_ARGUSCTL_COLLECTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "common/collector_set.h"

struct ctl_target;

#define COLLECTORS_NONE SIZE_MAX /* no standby: a set of one */

/* One job some member holds. */
struct collectors_job {
    const char *job;    /* points into the answers */
    size_t primary;     /* member index */
    size_t standby;     /* member index, or COLLECTORS_NONE */
    uint64_t held;      /* bit i: member i holds records of it */
    bool moved;         /* its primary is up and holds nothing of it */
    bool standby_moved; /* the same of its standby */
};

/* The jobs of the members' answers (answers[i]: member i's JobsResponse, or
 * NULL when it did not answer), sorted by job id, placed over s. Returns
 * the count and *out (malloc'd; valid while the answers are), or -ENOMEM. */
long collectors_table(const struct collector_set *s, ProtobufCMessage *const *answers,
                      struct collectors_job **out);

struct collectors_options {
    bool json;
    const char *job;     /* "": the whole set */
    uint64_t timeout_ms; /* of each member's answer */
};

/* Print the set and its jobs (or --job's placement) to f. Returns an exit
 * code (enum ctl_exit): CTL_OK when a member answered (or with --job),
 * CTL_UNREACHABLE when none did. */
int collectors_run(struct ctl_target *t, const struct collectors_options *o, FILE *f);

#endif
