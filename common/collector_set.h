/* The set of collectors that agents, collectors and argusctl share
 * (docs/design.md section 10), and where each job lives in it.
 *
 * A set is given one of two ways:
 *   a static list   "HOST:PORT,HOST:PORT,..." (commas or spaces between);
 *                   each member's name is its address as written, so every
 *                   program must be given the same spelling;
 *   a DNS name      "NAME:PORT", re-resolved periodically (a Kubernetes
 *                   headless Service gives one A record per ready pod); each
 *                   address found is a member, named by its reverse (PTR)
 *                   name when there is one, so a StatefulSet pod that comes
 *                   back with a new address keeps its name and its jobs,
 *                   else by its address; the name gets ":PORT" appended.
 * Members are kept sorted by name with duplicates removed, so two programs
 * given the same members hold equal sets whatever order they were listed
 * or resolved in.
 *
 * Placement is common/placement.h over the member names: the first member
 * of collector_set_place is a job's primary, the second its standby.
 *
 * collector_set_watch keeps a DNS set fresh on a thread of its own (name
 * resolution blocks; a daemon's loop must not), and publishes each changed
 * set with a new generation number for the owner to pick up.
 *
 * Errors are negative errno with a sentence in err; nothing here logs. */
#ifndef ARGUS_COMMON_COLLECTOR_SET_H
#define ARGUS_COMMON_COLLECTOR_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COLLECTOR_SET_MAX 64   /* members at most */
#define COLLECTOR_SET_NAME 256 /* bytes of a member's name or address, NUL included */

struct collector_member {
    char name[COLLECTOR_SET_NAME];    /* what placement hashes */
    char address[COLLECTOR_SET_NAME]; /* what gRPC dials: HOST:PORT or [IPv6]:PORT */
};

struct collector_set {
    size_t n;
    struct collector_member member[COLLECTOR_SET_MAX];
};

/* Parse a static list into *out (sorted, duplicates dropped). Returns 0;
 * -EINVAL when an item is not HOST:PORT, the list is empty, or it has more
 * than COLLECTOR_SET_MAX distinct members (err names the item). */
int collector_set_parse(const char *list, struct collector_set *out, char *err, size_t errlen);

/* Check a DNS spec "NAME:PORT" without resolving it. 0 or -EINVAL. */
int collector_set_check_dns(const char *spec, char *err, size_t errlen);

/* Resolve spec ("NAME:PORT") now, blocking, into *out. Returns 0 (at least
 * one address), -EINVAL for a bad spec, -ENOENT when the name has no
 * address, -EAGAIN when resolution failed for now (err says why). */
int collector_set_resolve(const char *spec, struct collector_set *out, char *err, size_t errlen);

struct config_option;

/* Config checks (config_check_fn, common/config.h) of a string option that
 * holds a static list (collector_set_parse) or a DNS spec
 * (collector_set_check_dns); "" passes both. 0, or -EINVAL with
 * "key: why" in err. The agent, the collector and argusctl use them. */
int collector_set_check_list_option(const struct config_option *o, const void *field, char *err,
                                    size_t errlen);
int collector_set_check_dns_option(const struct config_option *o, const void *field, char *err,
                                   size_t errlen);

/* Same members with the same addresses. */
bool collector_set_equal(const struct collector_set *a, const struct collector_set *b);

/* The index of the member named name, or -1. */
int collector_set_find(const struct collector_set *s, const char *name);

/* The index of the member that is self, or -1: a member whose name or
 * address equals self, or whose name is self followed by '.' or ':' (a
 * short host name matching a reverse name "host.svc...:PORT"). */
int collector_set_find_self(const struct collector_set *s, const char *self);

/* The job's primary (out[0]) and standby (out[1]) as member indexes.
 * Returns how many were written: 0 for an empty set, 1 for a set of one. */
size_t collector_set_place(const struct collector_set *s, const char *job, size_t out[2]);

/* Where a program gets its set: exactly one of list and dns is non-empty. */
struct collector_set_spec {
    const char *list;     /* static list, or NULL/"" */
    const char *dns;      /* NAME:PORT, or NULL/"" */
    uint64_t interval_ns; /* how often dns is resolved again */
};

struct collector_set_watch;

/* Start watching spec (strings copied). A static list is parsed once; a DNS
 * name is resolved once before returning (so the caller starts with a set
 * when DNS answers) and then every interval_ns on a thread. Returns 0 and
 * *out, or -EINVAL (bad list or DNS spec, both or neither given), -ENOMEM,
 * or the error of pthread_create. A first DNS failure is not an error:
 * the set stays empty until a resolution succeeds. */
int collector_set_watch_new(const struct collector_set_spec *spec, struct collector_set_watch **out,
                            char *err, size_t errlen);

/* Stop the thread and free. NULL is fine. */
void collector_set_watch_free(struct collector_set_watch *w);

/* The generation of the current set: it changes when the members do. Cheap
 * (an atomic load): poll it from a loop. 0 while no set was ever known. */
uint64_t collector_set_watch_generation(const struct collector_set_watch *w);

/* Copy the current set into *out; returns its generation. A failed
 * resolution keeps the last good set (a DNS outage must not move jobs). */
uint64_t collector_set_watch_get(struct collector_set_watch *w, struct collector_set *out);

/* What the last resolution said: "" when it succeeded, else the error. */
void collector_set_watch_error(struct collector_set_watch *w, char *buf, size_t len);

#endif
