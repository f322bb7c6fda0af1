#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* tdestroy, twalk_r */
#endif
#include "collector/ingest/stream_clock.h"

#include <pthread.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

#define STREAM_CLOCK_IDLE_NS (3600 * NSEC_PER_SEC)

/* One bucket of the filter: the largest sample, and the first and last
 * (created, received) pair, to tell a stream catching up. */
struct bucket {
    int64_t best; /* largest created - received */
    uint64_t first_created, first_recv, last_created, last_recv;
    bool used;
};

struct stream {
    char *agent;
    struct bucket cur, prev;
    uint64_t last_seen; /* collector clock */
    bool prev_steady;   /* the last full bucket was not a catch-up */
    bool flagged;
};

struct stream_clock {
    struct stream_clock_options o;
    pthread_mutex_t lock;
    void *root; /* tsearch tree of struct stream, by agent */
    struct stream_clock_stats stats;
};

static int stream_cmp(const void *a, const void *b)
{
    return strcmp(((const struct stream *)a)->agent, ((const struct stream *)b)->agent);
}

static void stream_free(void *p)
{
    struct stream *s = p;

    free(s->agent);
    free(s);
}

struct stream_clock *stream_clock_new(const struct stream_clock_options *o)
{
    struct stream_clock *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->o = *o;
    if (!c->o.window_ns)
        c->o.window_ns = 120 * NSEC_PER_SEC;
    if (!c->o.max_streams)
        c->o.max_streams = 65536;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void stream_clock_free(struct stream_clock *c)
{
    if (!c)
        return;
    tdestroy(c->root, stream_free);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* The stream of agent, created when new and there is room. */
static struct stream *stream_get(struct stream_clock *c, const char *agent)
{
    struct stream key = {.agent = (char *)agent}, *s, **slot;

    slot = tfind(&key, &c->root, stream_cmp);
    if (slot)
        return *slot;
    if (c->stats.streams >= c->o.max_streams)
        return NULL;
    s = calloc(1, sizeof(*s));
    if (!s || !(s->agent = strdup(agent)) || !tsearch(s, &c->root, stream_cmp)) {
        if (s)
            free(s->agent);
        free(s);
        return NULL;
    }
    c->stats.streams++;
    return s;
}

/* True when the bucket's created times ran no more than 1.5x faster than
 * its receive times (plus a second): a live stream, not a spool replay. */
static bool bucket_steady(const struct bucket *b)
{
    uint64_t created = b->last_created - b->first_created, recv = b->last_recv - b->first_recv;

    return b->last_created >= b->first_created && created <= recv + recv / 2 + NSEC_PER_SEC;
}

static void bucket_add(struct bucket *b, uint64_t created, uint64_t recv)
{
    int64_t sample = (int64_t)(created - recv);

    if (!b->used || sample > b->best)
        b->best = sample;
    if (!b->used) {
        b->first_created = created;
        b->first_recv = recv;
    }
    b->last_created = created;
    b->last_recv = recv;
    b->used = true;
}

/* Add a sample; rotate the buckets every window/2 of receive time. */
static void stream_sample(struct stream_clock *c, struct stream *s, uint64_t created, uint64_t recv)
{
    uint64_t half = c->o.window_ns / 2;

    if (s->cur.used && recv - s->cur.first_recv >= half) {
        bool gap = recv - s->cur.first_recv >= 2 * half;
        s->prev_steady = bucket_steady(&s->cur);
        s->prev = gap ? (struct bucket){0} : s->cur;
        s->cur = (struct bucket){0};
    }
    bucket_add(&s->cur, created, recv);
    s->last_seen = recv;
}

static int64_t stream_estimate(const struct stream *s)
{
    return s->prev.used && s->prev.best > s->cur.best ? s->prev.best : s->cur.best;
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

enum stream_clock_event stream_clock_observe(struct stream_clock *c, const char *agent,
                                             uint64_t created_unix_ns, uint64_t recv_unix_ns,
                                             int64_t *offset_ns)
{
    enum stream_clock_event ev = STREAM_CLOCK_NONE;
    struct stream *s;
    int64_t est = 0;

    pthread_mutex_lock(&c->lock);
    s = stream_get(c, agent);
    if (!s) {
        c->stats.untracked++;
    } else {
        stream_sample(c, s, created_unix_ns, recv_unix_ns);
        est = stream_estimate(s);
        /* flag only from a full window of a live stream */
        if (!s->flagged && s->prev.used && s->prev_steady && magnitude(est) > c->o.skew_warn_ns) {
            s->flagged = true;
            c->stats.flagged++;
            c->stats.flags_total++;
            ev = STREAM_CLOCK_FLAGGED;
        } else if (s->flagged && magnitude(est) <= c->o.skew_warn_ns / 2) {
            s->flagged = false;
            c->stats.flagged--;
            ev = STREAM_CLOCK_RECOVERED;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (offset_ns)
        *offset_ns = est;
    return ev;
}

struct tick_walk {
    struct stream **idle;
    size_t n, cap;
    uint64_t before;
};

static void tick_visit(const void *node, VISIT which, void *ctx)
{
    struct stream *s = *(struct stream *const *)node;
    struct tick_walk *w = ctx;

    if ((which != postorder && which != leaf) || s->last_seen >= w->before)
        return;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        struct stream **grown = realloc(w->idle, cap * sizeof(*grown));
        if (!grown)
            return; /* forgotten at a later tick */
        w->idle = grown;
        w->cap = cap;
    }
    w->idle[w->n++] = s;
}

void stream_clock_tick(struct stream_clock *c, uint64_t now_unix_ns)
{
    struct tick_walk w = {0};

    w.before = now_unix_ns > STREAM_CLOCK_IDLE_NS ? now_unix_ns - STREAM_CLOCK_IDLE_NS : 0;
    pthread_mutex_lock(&c->lock);
    twalk_r(c->root, tick_visit, &w);
    for (size_t i = 0; i < w.n; i++) {
        struct stream *s = w.idle[i];

        tdelete(s, &c->root, stream_cmp);
        c->stats.streams--;
        c->stats.flagged -= s->flagged;
        stream_free(s);
    }
    pthread_mutex_unlock(&c->lock);
    free(w.idle);
}

struct each_walk {
    stream_clock_fn fn;
    void *ctx;
};

static void each_visit(const void *node, VISIT which, void *ctx)
{
    const struct stream *s = *(struct stream *const *)node;
    struct each_walk *w = ctx;

    if (which == postorder || which == leaf)
        w->fn(w->ctx, s->agent, stream_estimate(s), s->flagged);
}

void stream_clock_foreach(struct stream_clock *c, stream_clock_fn fn, void *ctx)
{
    struct each_walk w = {fn, ctx};

    pthread_mutex_lock(&c->lock);
    twalk_r(c->root, each_visit, &w);
    pthread_mutex_unlock(&c->lock);
}

void stream_clock_get_stats(struct stream_clock *c, struct stream_clock_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
}
