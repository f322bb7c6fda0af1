#include "collector/alerts/alerts_sender.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/alerts/alert_json.h"
#include "collector/store/store.h"
#include "common/clock.h"
#include "common/log.h"

struct alerts_sender {
    struct alerts_sender_options o;
    struct alert_sink sink;
    char *target;
    char *prefix; /* "q:" name ":" target \0 */
    size_t plen;  /* with its \0 */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stop;
    uint64_t sent, failed, queued;
    uint64_t oldest_ns;   /* enqueue time of the head, 0 when empty */
    uint64_t next_resend; /* mono ns */
    uint64_t enqueued;    /* events queued, ever (a sender's nap sees new ones) */
    char last_error[256];
};

struct alerts_sender *alerts_sender_new(const struct alerts_sender_options *o)
{
    struct alerts_sender *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->o = *o;
    s->target = strdup(o->target);
    if (!s->target || asprintf(&s->prefix, "q:%s:%s", o->ops->name, o->target) < 0) {
        free(s->target);
        free(s);
        return NULL;
    }
    s->o.target = s->target; /* o->target is the caller's, freed after this */
    s->plen = strlen(s->prefix) + 1;
    s->sink = (struct alert_sink){o->ops, s->target, o->settings};
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    return s;
}

bool alerts_sender_owns(const struct alerts_sender *s, const void *key, size_t klen)
{
    return s->plen + 8 == klen && memcmp(s->prefix, key, s->plen) == 0;
}

void alerts_sender_restore(struct alerts_sender *s, uint64_t queued_ns)
{
    pthread_mutex_lock(&s->lock);
    if (s->queued++ == 0)
        s->oldest_ns = queued_ns;
    pthread_mutex_unlock(&s->lock);
}

int alerts_sender_enqueue(struct alerts_sender *s, uint64_t seq, const char *event, uint64_t now_ns,
                          char *err, size_t errlen)
{
    size_t elen = strlen(event), klen = s->plen + 8;
    uint8_t *key = malloc(klen), *val = malloc(8 + elen);
    uint64_t be;
    int rc = key && val ? 0 : -ENOMEM;

    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    if (rc == 0) {
        memcpy(key, s->prefix, s->plen);
        be = htobe64(seq);
        memcpy(key + s->plen, &be, 8);
        be = htobe64(now_ns);
        memcpy(val, &be, 8);
        memcpy(val + 8, event, elen);
        rc = store_put_alert(s->o.store, key, klen, val, 8 + elen, err, errlen) < 0 ? -EIO : 0;
    }
    if (rc == 0) {
        pthread_mutex_lock(&s->lock);
        s->enqueued++;
        if (s->queued++ == 0)
            s->oldest_ns = now_ns;
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
    }
    free(key);
    free(val);
    return rc;
}

void alerts_sender_stats(struct alerts_sender *s, struct alerts_sender_stats *st)
{
    pthread_mutex_lock(&s->lock);
    *st = (struct alerts_sender_stats){
        .kind = s->o.ops->name,
        .target = s->target,
        .sent = s->sent,
        .failed = s->failed,
        .queued = s->queued,
        .oldest_ns = s->oldest_ns,
    };
    pthread_mutex_unlock(&s->lock);
}

/* ---- the thread ------------------------------------------------------------ */

struct alerts_head {
    uint8_t *key;
    size_t klen;
    char *event;
    uint64_t queued_ns;
};

static int alerts_take_head(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct alerts_head *h = ctx;
    uint64_t be;

    if (vlen < 8)
        return 0; /* not ours: skipped */
    h->key = malloc(klen);
    h->event = malloc(vlen - 8 + 1);
    if (!h->key || !h->event)
        return -ENOMEM;
    memcpy(h->key, key, klen);
    h->klen = klen;
    memcpy(&be, val, 8);
    h->queued_ns = be64toh(be);
    memcpy(h->event, (const char *)val + 8, vlen - 8);
    h->event[vlen - 8] = '\0';
    return 1;
}

/* Deliver the head of s's queue and delete it. 0, 1 when the queue was
 * empty, or -errno (s->last_error set). s->lock not held. */
static int alerts_send_head(struct alerts_sender *s)
{
    struct alerts_head h = {0};
    const char *events[1];
    char err[256] = "";
    int rc = store_scan_alerts(s->o.store, s->prefix, s->plen, alerts_take_head, &h);

    if (rc == 0 && !h.key)
        rc = 1;
    if (rc == 0) {
        pthread_mutex_lock(&s->lock);
        s->oldest_ns = h.queued_ns;
        pthread_mutex_unlock(&s->lock);
        events[0] = h.event;
        rc = s->sink.ops->deliver(&s->sink, &(struct alert_sink_batch){events, 1, clock_real_ns()},
                                  err, sizeof(err));
    }
    if (rc == -EINVAL) { /* never deliverable: dropped, not retried forever */
        log_error("alerts", "%s %s: dropped a queued alert: %s", s->sink.ops->name, s->target, err);
        store_delete_alert(s->o.store, h.key, h.klen, NULL, 0);
    }
    if (rc == 0 && store_delete_alert(s->o.store, h.key, h.klen, err, sizeof(err)) < 0)
        rc = -EIO; /* sent, not deleted: sent again later (sinks see a repeat) */
    if (rc < 0)
        snprintf(s->last_error, sizeof(s->last_error), "%s", *err ? err : strerror(-rc));
    free(h.key);
    free(h.event);
    return rc;
}

struct alerts_snapshot {
    char **events;
    size_t n, cap;
    const char *report_url;
};

static void alerts_snap_one(void *ctx, const struct alert *al, bool forgotten)
{
    struct alerts_snapshot *s = ctx;
    char **grown;

    if (al->status != ALERT_FIRING)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        grown = realloc(s->events, s->cap * sizeof(*grown));
        if (!grown)
            return;
        s->events = grown;
    }
    s->events[s->n] = alert_event_json(al, s->report_url);
    if (s->events[s->n])
        s->n++;
}

/* Send every firing alert again. 0, 1 when none fires, or -errno.
 * s->lock not held. */
static int alerts_resend(struct alerts_sender *s)
{
    struct alerts_snapshot snap = {.report_url = s->o.report_url};
    char err[256] = "";
    int rc = 0;

    pthread_mutex_lock(s->o.book_lock);
    alert_book_foreach(s->o.book, alerts_snap_one, &snap);
    pthread_mutex_unlock(s->o.book_lock);
    if (!snap.n)
        rc = 1;
    else
        rc = s->sink.ops->deliver(
            &s->sink,
            &(struct alert_sink_batch){(const char *const *)snap.events, snap.n, clock_real_ns()},
            err, sizeof(err));
    if (rc < 0)
        snprintf(s->last_error, sizeof(s->last_error), "%s", err);
    for (size_t i = 0; i < snap.n; i++)
        free(snap.events[i]);
    free(snap.events);
    return rc;
}

/* Sleep on s->wake (s->lock held) until mono time t or a wake-up. */
static void alerts_wait_until(struct alerts_sender *s, uint64_t t)
{
    uint64_t real = clock_real_ns(), mono = clock_mono_ns();
    uint64_t until = real + (t > mono ? t - mono : 0);
    struct timespec ts = {(time_t)(until / NSEC_PER_SEC), (long)(until % NSEC_PER_SEC)};

    pthread_cond_timedwait(&s->wake, &s->lock, &ts);
}

/* The next retry delay: 1 s doubling to backoff_max, jittered 50-100 %. */
static uint64_t alerts_backoff(struct alerts_sender *s, uint64_t *backoff)
{
    *backoff = *backoff ? *backoff * 2 : NSEC_PER_SEC;
    if (*backoff > s->o.backoff_max_ns)
        *backoff = s->o.backoff_max_ns;
    return *backoff / 2 + (uint64_t)((double)(*backoff / 2) * ((double)random() / RAND_MAX));
}

/* After a round that found nothing to do (s->lock held): unless something
 * was queued meanwhile, the queue is empty; nap until the next re-send or
 * for a second (an enqueue wakes it sooner). */
static void alerts_sender_nap(struct alerts_sender *s, uint64_t now, uint64_t gen)
{
    uint64_t until = now + NSEC_PER_SEC;

    if (s->enqueued != gen)
        return;
    s->queued = 0;
    s->oldest_ns = 0;
    if (s->sink.ops->resends && s->next_resend < until)
        until = s->next_resend;
    alerts_wait_until(s, until);
}

/* One round (s->lock held, released around delivery): the head of the
 * queue, else the re-send when due, else a nap. */
static void alerts_sender_round(struct alerts_sender *s, uint64_t *backoff)
{
    uint64_t now = clock_mono_ns(), gen = s->enqueued;
    bool resend = s->sink.ops->resends && now >= s->next_resend;
    bool head = true;
    int rc;

    pthread_mutex_unlock(&s->lock);
    rc = alerts_send_head(s);
    if (rc == 1 && resend) {
        head = false;
        rc = alerts_resend(s);
    }
    pthread_mutex_lock(&s->lock);
    if (!head && rc >= 0)
        s->next_resend = clock_mono_ns() + s->o.settings->resend_ns;
    if (rc == 1) { /* nothing queued, nothing due */
        alerts_sender_nap(s, now, gen);
        return;
    }
    if (rc < 0) {
        s->failed++;
        if (s->failed == 1 || s->failed % 100 == 0)
            log_warn("alerts", "%s %s: %s (%llu failures, retrying)", s->sink.ops->name, s->target,
                     s->last_error, (unsigned long long)s->failed);
        alerts_wait_until(s, clock_mono_ns() + alerts_backoff(s, backoff));
        return;
    }
    *backoff = 0;
    s->sent++;
    if (head && s->queued)
        s->queued--;
}

static void *alerts_sender_main(void *arg)
{
    struct alerts_sender *s = arg;
    uint64_t backoff = 0;

    pthread_mutex_lock(&s->lock);
    while (!s->stop)
        alerts_sender_round(s, &backoff);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int alerts_sender_start(struct alerts_sender *s)
{
    int rc = -pthread_create(&s->thread, NULL, alerts_sender_main, s);

    s->started = rc == 0;
    return rc;
}

void alerts_sender_stop(struct alerts_sender *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

void alerts_sender_free(struct alerts_sender *s)
{
    if (!s)
        return;
    alerts_sender_stop(s);
    if (s->started)
        pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    free(s->target);
    free(s->prefix);
    free(s);
}
