/* The collector's place in the collector set: see membership.h. */
#include "collector/membership.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/store/store.h"
#include "common/collector_set.h"
#include "common/log.h"
#include "proto/argus.pb-c.h"

struct membership {
    struct collector_set_watch *watch; /* NULL: no set, a collector on its own */
    char self[COLLECTOR_SET_NAME];     /* cluster.self, "" when not given */
    char listen[COLLECTOR_SET_NAME];
    char host[COLLECTOR_SET_NAME];
    _Atomic uint64_t warned; /* generation of the set last warned about */
};

int membership_new(const struct membership_options *o, struct membership **out, char *err,
                   size_t errlen)
{
    struct collector_set_spec spec = {o->set, o->dns, o->interval_ns};
    struct membership *m = calloc(1, sizeof(*m));
    int r = 0;

    *out = NULL;
    if (!m)
        return -ENOMEM;
    snprintf(m->self, sizeof(m->self), "%s", o->self ? o->self : "");
    snprintf(m->listen, sizeof(m->listen), "%s", o->grpc_listen ? o->grpc_listen : "");
    if (gethostname(m->host, sizeof(m->host) - 1) < 0)
        m->host[0] = '\0';
    if ((o->set && *o->set) || (o->dns && *o->dns))
        r = collector_set_watch_new(&spec, &m->watch, err, errlen);
    if (r < 0) {
        free(m);
        return r;
    }
    *out = m;
    return 0;
}

void membership_free(struct membership *m)
{
    if (!m)
        return;
    collector_set_watch_free(m->watch);
    free(m);
}

const char *membership_role_name(enum membership_role role)
{
    static const char *const names[] = {"primary", "standby", "other"};

    return role < MEMBERSHIP_ROLES ? names[role] : "other";
}

/* This collector's index in s, or -1: cluster.self, else grpc.listen, else
 * the host name (collector_set_find_self). */
static int membership_self(const struct membership *m, const struct collector_set *s)
{
    int i;

    if (m->self[0])
        return collector_set_find_self(s, m->self);
    i = collector_set_find_self(s, m->listen);
    return i >= 0 ? i : collector_set_find_self(s, m->host);
}

/* The role of member self (-1: not a member) for job in s. */
static enum membership_role membership_role_in(const struct collector_set *s, int self,
                                               const char *job)
{
    size_t at[2];
    size_t n = collector_set_place(s, job, at);

    if (self >= 0 && n > 0 && at[0] == (size_t)self)
        return MEMBERSHIP_PRIMARY;
    if (self >= 0 && n > 1 && at[1] == (size_t)self)
        return MEMBERSHIP_STANDBY;
    return MEMBERSHIP_OTHER;
}

/* The current set into *s and this collector's index in it; no set: a set
 * of one holding this collector. Warns once per set that misses it. */
static int membership_current(struct membership *m, struct collector_set *s)
{
    uint64_t gen;
    int self;

    if (!m->watch) {
        s->n = 1;
        snprintf(s->member[0].name, COLLECTOR_SET_NAME, "%s", m->listen);
        snprintf(s->member[0].address, COLLECTOR_SET_NAME, "%s", m->listen);
        return 0;
    }
    gen = collector_set_watch_get(m->watch, s);
    self = membership_self(m, s);
    if (self < 0 && s->n > 0 && atomic_exchange(&m->warned, gen) != gen)
        log_warn(
            "membership",
            "this collector (cluster.self '%s', grpc.listen %s, host %s) is not one of the %zu "
            "members of the collector set: it owns no job (set cluster.self to its member "
            "name)",
            m->self, m->listen, m->host, s->n);
    return self;
}

enum membership_role membership_role(struct membership *m, const char *job)
{
    struct collector_set *s = malloc(sizeof(*s));
    enum membership_role role = MEMBERSHIP_OTHER;

    if (s)
        role = membership_role_in(s, membership_current(m, s), job);
    free(s);
    return role;
}

struct membership_scan {
    const struct collector_set *set;
    int self;
    struct membership_counts *out;
    membership_job_fn fn;
    void *ctx;
};

static int membership_scan_job(void *ctx, const void *value, size_t len)
{
    struct membership_scan *sc = ctx;
    Argus__V1__JobInfo *j = argus__v1__job_info__unpack(NULL, len, value);

    if (!j)
        return 0; /* a record the store could not give back whole: not a job */
    enum membership_role role = membership_role_in(sc->set, sc->self, j->job);
    sc->out->jobs[role]++;
    if (sc->fn)
        sc->fn(sc->ctx, j->job, role);
    argus__v1__job_info__free_unpacked(j, NULL);
    return 0;
}

int membership_count(struct membership *m, struct store *store, struct membership_counts *out)
{
    return membership_count_each(m, store, out, NULL, NULL);
}

int membership_count_each(struct membership *m, struct store *store, struct membership_counts *out,
                          membership_job_fn fn, void *ctx)
{
    struct collector_set *s = malloc(sizeof(*s));
    struct membership_scan sc = {s, -1, out, fn, ctx};
    int r;

    memset(out, 0, sizeof(*out));
    if (!s)
        return -ENOMEM;
    sc.self = membership_current(m, s);
    out->members = s->n;
    out->self_found = sc.self >= 0;
    r = store_scan_jobs(store, membership_scan_job, &sc);
    free(s);
    return r < 0 ? r : 0;
}
