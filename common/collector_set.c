/* The collector set and its DNS watch (see collector_set.h). */
#include "common/collector_set.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/config.h"
#include "common/config_value.h"
#include "common/placement.h"

static int member_cmp(const void *a, const void *b)
{
    const struct collector_member *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : strcmp(x->address, y->address);
}

/* Sort by name and drop a member whose name repeats the previous one. */
static void set_normalize(struct collector_set *s)
{
    size_t m = 0;

    qsort(s->member, s->n, sizeof(s->member[0]), member_cmp);
    for (size_t i = 0; i < s->n; i++)
        if (m == 0 || strcmp(s->member[m - 1].name, s->member[i].name) != 0)
            s->member[m++] = s->member[i];
    s->n = m;
}

static int set_add(struct collector_set *s, const char *name, const char *address)
{
    if (collector_set_find(s, name) >= 0)
        return 0;
    if (s->n == COLLECTOR_SET_MAX)
        return -E2BIG;
    snprintf(s->member[s->n].name, COLLECTOR_SET_NAME, "%s", name);
    snprintf(s->member[s->n].address, COLLECTOR_SET_NAME, "%s", address);
    s->n++;
    return 0;
}

int collector_set_parse(const char *list, struct collector_set *out, char *err, size_t errlen)
{
    const char *p = list ? list : "";

    out->n = 0;
    while (*p) {
        size_t len = strcspn(p, ", \t");
        char item[COLLECTOR_SET_NAME];
        if (len == 0) {
            p++;
            continue;
        }
        if (len >= sizeof(item)) {
            snprintf(err, errlen, "collector '%.40s...' is longer than %d bytes", p,
                     COLLECTOR_SET_NAME - 1);
            return -EINVAL;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        p += len;
        if (!config_is_host_port(item)) {
            snprintf(err, errlen, "collector '%s' is not HOST:PORT (or [IPv6]:PORT)", item);
            return -EINVAL;
        }
        if (set_add(out, item, item) < 0) {
            snprintf(err, errlen, "more than %d collectors in the list (at '%s')",
                     COLLECTOR_SET_MAX, item);
            return -EINVAL;
        }
    }
    if (out->n == 0) {
        snprintf(err, errlen, "the collector list is empty");
        return -EINVAL;
    }
    set_normalize(out);
    return 0;
}

/* Split "NAME:PORT" into host and port. */
static int dns_split(const char *spec, char *host, size_t hlen, char *port, size_t plen, char *err,
                     size_t errlen)
{
    const char *colon = spec ? strrchr(spec, ':') : NULL;

    if (!spec || !config_is_host_port(spec) || spec[0] == '[' || colon == spec ||
        (size_t)(colon - spec) >= hlen || strlen(colon + 1) >= plen) {
        snprintf(err, errlen,
                 "'%s' is not NAME:PORT (a DNS name whose addresses are the collectors)",
                 spec ? spec : "");
        return -EINVAL;
    }
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    snprintf(port, plen, "%s", colon + 1);
    return 0;
}

int collector_set_check_dns(const char *spec, char *err, size_t errlen)
{
    char host[COLLECTOR_SET_NAME], port[8];

    return dns_split(spec, host, sizeof(host), port, sizeof(port), err, errlen);
}

/* One resolved address as a member: named by its reverse name when it has
 * one, else by its address. */
static int dns_member(const struct addrinfo *ai, const char *port, struct collector_set *out)
{
    char ip[INET6_ADDRSTRLEN], ptr[NI_MAXHOST], name[COLLECTOR_SET_NAME],
        address[COLLECTOR_SET_NAME];

    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, ip, sizeof(ip), NULL, 0, NI_NUMERICHOST) != 0)
        return 0;
    if (ai->ai_family == AF_INET6)
        snprintf(address, sizeof(address), "[%s]:%s", ip, port);
    else
        snprintf(address, sizeof(address), "%s:%s", ip, port);
    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, ptr, sizeof(ptr), NULL, 0, NI_NAMEREQD) == 0 &&
        strlen(ptr) + strlen(port) + 2 <= sizeof(name)) {
        size_t l = strlen(ptr);
        if (l && ptr[l - 1] == '.')
            ptr[l - 1] = '\0';
        snprintf(name, sizeof(name), "%s:%s", ptr, port);
    } else {
        snprintf(name, sizeof(name), "%s", address);
    }
    return set_add(out, name, address);
}

int collector_set_resolve(const char *spec, struct collector_set *out, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char host[COLLECTOR_SET_NAME], port[8];
    int rc = dns_split(spec, host, sizeof(host), port, sizeof(port), err, errlen);

    out->n = 0;
    if (rc < 0)
        return rc;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "resolving %s: %s", host, gai_strerror(rc));
        return rc == EAI_NONAME || rc == EAI_NODATA ? -ENOENT : -EAGAIN;
    }
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (dns_member(ai, port, out) < 0)
            break; /* more than COLLECTOR_SET_MAX: the first ones */
    freeaddrinfo(res);
    if (out->n == 0) {
        snprintf(err, errlen, "resolving %s: no address", host);
        return -ENOENT;
    }
    set_normalize(out);
    return 0;
}

int collector_set_check_list_option(const struct config_option *o, const void *field, char *err,
                                    size_t errlen)
{
    const char *v = *(char *const *)field;
    struct collector_set *s;
    char why[300];
    int r = 0;

    if (!v || !*v)
        return 0;
    s = malloc(sizeof(*s)); /* 32 KiB: not on a caller's stack */
    if (!s)
        return -ENOMEM;
    if (collector_set_parse(v, s, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s: %s", o->key, why);
        r = -EINVAL;
    }
    free(s);
    return r;
}

int collector_set_check_dns_option(const struct config_option *o, const void *field, char *err,
                                   size_t errlen)
{
    const char *v = *(char *const *)field;
    char why[300];

    if (!v || !*v || collector_set_check_dns(v, why, sizeof(why)) == 0)
        return 0;
    snprintf(err, errlen, "%s: %s", o->key, why);
    return -EINVAL;
}

bool collector_set_equal(const struct collector_set *a, const struct collector_set *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->member[i].name, b->member[i].name) != 0 ||
            strcmp(a->member[i].address, b->member[i].address) != 0)
            return false;
    return true;
}

int collector_set_find(const struct collector_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->member[i].name, name) == 0)
            return (int)i;
    return -1;
}

int collector_set_find_self(const struct collector_set *s, const char *self)
{
    size_t l = self ? strlen(self) : 0;

    if (l == 0)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct collector_member *m = &s->member[i];
        if (strcmp(m->name, self) == 0 || strcmp(m->address, self) == 0 ||
            (strncmp(m->name, self, l) == 0 && (m->name[l] == '.' || m->name[l] == ':')))
            return (int)i;
    }
    return -1;
}

size_t collector_set_place(const struct collector_set *s, const char *job, size_t out[2])
{
    const char *names[COLLECTOR_SET_MAX];

    for (size_t i = 0; i < s->n; i++)
        names[i] = s->member[i].name;
    return placement_pick(job ? job : "", names, s->n, out, 2);
}

/* The watch: one thread re-resolving a DNS name. */
struct collector_set_watch {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool threaded, stop;
    char *dns;
    uint64_t interval_ns;
    struct collector_set set; /* under lock */
    _Atomic uint64_t generation;
    char error[256]; /* under lock */
};

static void watch_publish(struct collector_set_watch *w, const struct collector_set *s, int rc,
                          const char *err)
{
    pthread_mutex_lock(&w->lock);
    snprintf(w->error, sizeof(w->error), "%s", rc < 0 ? err : "");
    if (rc == 0 && (!collector_set_equal(&w->set, s) || atomic_load(&w->generation) == 0)) {
        w->set = *s;
        atomic_fetch_add(&w->generation, 1);
    }
    pthread_mutex_unlock(&w->lock);
}

static void watch_resolve(struct collector_set_watch *w)
{
    struct collector_set *s = malloc(sizeof(*s));
    char err[256] = "";
    int rc;

    if (!s)
        return;
    rc = collector_set_resolve(w->dns, s, err, sizeof(err));
    watch_publish(w, s, rc, err);
    free(s);
}

static void *watch_main(void *arg)
{
    struct collector_set_watch *w = arg;

    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(w->interval_ns / 1000000000u);
        until.tv_nsec += (long)(w->interval_ns % 1000000000u);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&w->lock);
        while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
            ;
        bool stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        if (stop)
            return NULL;
        watch_resolve(w);
    }
}

static int watch_thread(struct collector_set_watch *w)
{
    pthread_condattr_t ca;
    int rc;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    rc = pthread_create(&w->thread, NULL, watch_main, w);
    if (rc != 0) {
        pthread_cond_destroy(&w->wake);
        return -rc;
    }
    w->threaded = true;
    return 0;
}

static int watch_check_spec(const struct collector_set_spec *spec, char *err, size_t errlen)
{
    bool list = spec->list && spec->list[0], dns = spec->dns && spec->dns[0];

    if (list == dns) {
        snprintf(err, errlen,
                 list ? "both a collector list and a DNS name are given; use one"
                      : "no collector list and no DNS name given");
        return -EINVAL;
    }
    return dns ? collector_set_check_dns(spec->dns, err, errlen) : 0;
}

int collector_set_watch_new(const struct collector_set_spec *spec, struct collector_set_watch **out,
                            char *err, size_t errlen)
{
    struct collector_set_watch *w;
    int rc = watch_check_spec(spec, err, errlen);

    if (rc < 0)
        return rc;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    pthread_mutex_init(&w->lock, NULL);
    w->interval_ns = spec->interval_ns ? spec->interval_ns : UINT64_C(30000000000);
    if (spec->list && spec->list[0]) {
        rc = collector_set_parse(spec->list, &w->set, err, errlen);
        if (rc == 0)
            atomic_store(&w->generation, 1);
    } else {
        w->dns = strdup(spec->dns);
        rc = w->dns ? 0 : -ENOMEM;
        if (rc == 0) {
            watch_resolve(w);
            rc = watch_thread(w);
        }
    }
    if (rc < 0) {
        collector_set_watch_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void collector_set_watch_free(struct collector_set_watch *w)
{
    if (!w)
        return;
    if (w->threaded) {
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        pthread_cond_destroy(&w->wake);
    }
    pthread_mutex_destroy(&w->lock);
    free(w->dns);
    free(w);
}

uint64_t collector_set_watch_generation(const struct collector_set_watch *w)
{
    return atomic_load(&((struct collector_set_watch *)w)->generation);
}

uint64_t collector_set_watch_get(struct collector_set_watch *w, struct collector_set *out)
{
    uint64_t g;

    pthread_mutex_lock(&w->lock);
    *out = w->set;
    g = atomic_load(&w->generation);
    pthread_mutex_unlock(&w->lock);
    return g;
}

void collector_set_watch_error(struct collector_set_watch *w, char *buf, size_t len)
{
    pthread_mutex_lock(&w->lock);
    snprintf(buf, len, "%s", w->error);
    pthread_mutex_unlock(&w->lock);
}
