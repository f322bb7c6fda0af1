/* The collector's own place in the collector set (docs/design.md section
 * 10; the keys cluster.*). In: the set (a static list, or a DNS name kept
 * fresh by common/collector_set.h's watch) and this collector's member
 * name. Out: for each job the store holds, this collector's role under the
 * current set, primary, standby or other (a job placed elsewhere: history
 * from before a membership change, or a sender with another view of the
 * set), counted for /metrics.
 *
 * Roles are only reported: the collector stores and diagnoses everything it
 * receives whatever its role (fail open: a page twice over a page missed).
 * A collector with no set is a set of one: it is every job's primary.
 *
 * Threads: membership_count may run on any thread (the HTTP one); the
 * watch has its own. */
#ifndef ARGUS_COLLECTOR_MEMBERSHIP_H
#define ARGUS_COLLECTOR_MEMBERSHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct membership;

struct membership_options {
    const char *set;      /* cluster.set, "" or NULL: none */
    const char *dns;      /* cluster.dns, "" or NULL: none */
    uint64_t interval_ns; /* cluster.dns_interval */
    const char *self;     /* cluster.self, "": grpc_listen if a member, else the host name */
    const char *grpc_listen;
};

enum membership_role {
    MEMBERSHIP_PRIMARY = 0,
    MEMBERSHIP_STANDBY = 1,
    MEMBERSHIP_OTHER = 2,
    MEMBERSHIP_ROLES = 3,
};

struct membership_counts {
    size_t members;                  /* in the current set (1 with no set) */
    bool self_found;                 /* this collector is one of them */
    uint64_t jobs[MEMBERSHIP_ROLES]; /* jobs held, by role */
};

/* Start (a DNS set is resolved once before returning). Returns 0 and *out,
 * or -EINVAL (bad set; err says why), -ENOMEM. */
int membership_new(const struct membership_options *o, struct membership **out, char *err,
                   size_t errlen);

/* NULL is fine. */
void membership_free(struct membership *m);

/* The role of this collector for job under the current set. */
enum membership_role membership_role(struct membership *m, const char *job);

/* Count the jobs store holds by role into *out; logs a warning once per
 * set when this collector is not a member. Returns 0 or the store's error. */
int membership_count(struct membership *m, struct store *store, struct membership_counts *out);

/* Told of each job the store holds with its role (job valid during the
 * call). */
typedef void (*membership_job_fn)(void *ctx, const char *job, enum membership_role role);

/* Like membership_count, also telling fn (may be NULL) of every job. */
int membership_count_each(struct membership *m, struct store *store, struct membership_counts *out,
                          membership_job_fn fn, void *ctx);

/* The name of role ("primary", "standby", "other"). */
const char *membership_role_name(enum membership_role role);

#endif
