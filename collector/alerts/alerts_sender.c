/* collector/alerts/: the sender thread of one sink (alerts.h says what it
 * does; alerts_impl.h what it shares with alerts.c). */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/alerts/alert_json.h"
#include "collector/alerts/alerts_impl.h"
#include "collector/store/store.h"
#include "common/clock.h"
#include "common/log.h"

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

/* Deliver the head of k's queue and delete it. 0, 1 when the queue was
 * empty, or -errno (k->last_error set). */
static int alerts_send_head(struct alerts *a, struct alerts_sink *k)
{
    struct alerts_head h = {0};
    const char *events[1];
    char err[256] = "";
    int rc = store_scan_alerts(a->store, k->prefix, k->plen, alerts_take_head, &h);

    if (rc == 0 && !h.key)
        rc = 1;
    if (rc == 0) {
        pthread_mutex_lock(&a->lock);
        k->oldest_ns = h.queued_ns;
        pthread_mutex_unlock(&a->lock);
        events[0] = h.event;
        rc = alert_sink_deliver(&k->t, events, 1, clock_real_ns(), err, sizeof(err));
    }
    if (rc == -EINVAL) { /* never deliverable: dropped, not retried forever */
        log_error("alerts", "%s %s: dropped a queued alert: %s", alert_sink_kind_name(k->t.kind),
                  k->target, err);
        store_delete_alert(a->store, h.key, h.klen, NULL, 0);
    }
    if (rc == 0 && store_delete_alert(a->store, h.key, h.klen, err, sizeof(err)) < 0)
        rc = -EIO; /* sent, not deleted: sent again later (sinks see a repeat) */
    if (rc < 0)
        snprintf(k->last_error, sizeof(k->last_error), "%s", *err ? err : strerror(-rc));
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

/* Alertmanager: send every firing alert again. 0, 1 when none fires, or
 * -errno. */
static int alerts_resend(struct alerts *a, struct alerts_sink *k)
{
    struct alerts_snapshot s = {.report_url = a->report_url};
    char err[256] = "";
    int rc = 0;

    pthread_mutex_lock(&a->lock);
    alert_book_foreach(a->book, alerts_snap_one, &s);
    pthread_mutex_unlock(&a->lock);
    if (!s.n)
        rc = 1;
    else
        rc = alert_sink_deliver(&k->t, (const char *const *)s.events, s.n, clock_real_ns(), err,
                                sizeof(err));
    if (rc < 0)
        snprintf(k->last_error, sizeof(k->last_error), "%s", err);
    for (size_t i = 0; i < s.n; i++)
        free(s.events[i]);
    free(s.events);
    return rc;
}

/* Sleep on a->wake (a->lock held) until mono time t or a wake-up. */
static void alerts_wait_until(struct alerts *a, uint64_t t)
{
    uint64_t real = clock_real_ns(), mono = clock_mono_ns();
    uint64_t until = real + (t > mono ? t - mono : 0);
    struct timespec ts = {(time_t)(until / NSEC_PER_SEC), (long)(until % NSEC_PER_SEC)};

    pthread_cond_timedwait(&a->wake, &a->lock, &ts);
}

/* The next retry delay: 1 s doubling to backoff_max, jittered 50-100 %. */
static uint64_t alerts_backoff(struct alerts *a, uint64_t *backoff)
{
    *backoff = *backoff ? *backoff * 2 : NSEC_PER_SEC;
    if (*backoff > a->o.backoff_max_ns)
        *backoff = a->o.backoff_max_ns;
    return *backoff / 2 + (uint64_t)((double)(*backoff / 2) * ((double)random() / RAND_MAX));
}

/* One round of sink k (a->lock held, released around delivery): the head
 * of its queue, else (Alertmanager) the re-send when due, else a nap. */
static void alerts_sender_round(struct alerts *a, struct alerts_sink *k, uint64_t *backoff)
{
    uint64_t now = clock_mono_ns(), gen = k->enqueued;
    bool resend = k->t.kind == ALERT_SINK_ALERTMANAGER && now >= k->next_resend;
    bool head = true;
    int rc;

    pthread_mutex_unlock(&a->lock);
    rc = alerts_send_head(a, k);
    if (rc == 1 && resend) {
        head = false;
        rc = alerts_resend(a, k);
    }
    pthread_mutex_lock(&a->lock);
    if (!head && rc >= 0)
        k->next_resend = clock_mono_ns() + a->o.resend_ns;
    if (rc == 1) { /* nothing queued, nothing due */
        if (k->enqueued == gen) {
            k->queued = 0;
            k->oldest_ns = 0;
            uint64_t until = now + NSEC_PER_SEC; /* enqueue wakes it sooner */
            if (k->t.kind == ALERT_SINK_ALERTMANAGER && k->next_resend < until)
                until = k->next_resend;
            alerts_wait_until(a, until);
        }
        return;
    }
    if (rc < 0) {
        k->failed++;
        if (k->failed == 1 || k->failed % 100 == 0)
            log_warn("alerts", "%s %s: %s (%llu failures, retrying)",
                     alert_sink_kind_name(k->t.kind), k->target, k->last_error,
                     (unsigned long long)k->failed);
        alerts_wait_until(a, clock_mono_ns() + alerts_backoff(a, backoff));
        return;
    }
    *backoff = 0;
    k->sent++;
    if (head && k->queued)
        k->queued--;
}

void *alerts_sender(void *arg)
{
    struct alerts_sink *k = arg;
    struct alerts *a = k->owner;
    uint64_t backoff = 0;

    pthread_mutex_lock(&a->lock);
    while (!a->stop)
        alerts_sender_round(a, k, &backoff);
    pthread_mutex_unlock(&a->lock);
    return NULL;
}
