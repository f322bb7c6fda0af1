#include "collector/alerts/alerts_impl.h"

#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "collector/alerts/alert_json.h"
#include "collector/alerts/alert_sink.h"
#include "collector/store/store.h"
#include "common/causes.h"
#include "common/clock.h"
#include "common/log.h"

/* ---- the queue in the store ----------------------------------------------- */

void alerts_store_fail(struct alerts *a, const char *what, const char *err)
{
    if (a->store_errors++ % 100 == 0)
        log_error("alerts", "%s: %s (%llu store errors so far)", what, err,
                  (unsigned long long)a->store_errors);
}

/* Queue event text for sink k (a->lock held). */
static void alerts_enqueue(struct alerts *a, struct alerts_sink *k, const char *event, uint64_t now)
{
    size_t elen = strlen(event), klen = k->plen + 8;
    uint8_t *key = malloc(klen), *val = malloc(8 + elen);
    uint64_t be;
    char err[256];

    if (!key || !val) {
        alerts_store_fail(a, "queue an alert", "out of memory");
        goto out;
    }
    memcpy(key, k->prefix, k->plen);
    be = htobe64(++a->seq);
    memcpy(key + k->plen, &be, 8);
    be = htobe64(now);
    memcpy(val, &be, 8);
    memcpy(val + 8, event, elen);
    if (store_put_alert(a->store, key, klen, val, 8 + elen, err, sizeof(err)) < 0) {
        alerts_store_fail(a, "queue an alert", err);
        goto out;
    }
    k->enqueued++;
    if (k->queued++ == 0)
        k->oldest_ns = now;
out:
    free(key);
    free(val);
}

/* Write a's state ("s:" id), or delete it when forgotten. */
static void alerts_put_state(struct alerts *a, const struct alert *al, bool forgotten)
{
    char key[64], err[256];
    int rc;

    snprintf(key, sizeof(key), "s:%s", al->id);
    if (forgotten) {
        rc = store_delete_alert(a->store, key, strlen(key), err, sizeof(err));
    } else {
        struct json_object *o = alert_to_json(al);
        const char *text = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;
        rc = text
                 ? store_put_alert(a->store, key, strlen(key), text, strlen(text), err, sizeof(err))
                 : -ENOMEM;
        if (!text)
            snprintf(err, sizeof(err), "out of memory");
        json_object_put(o);
    }
    if (rc < 0)
        alerts_store_fail(a, "store an alert state", err);
}

/* alert_change_fn (a->lock held): keep the state; queue what sinks hear. */
static void alerts_changed(void *ctx, const struct alert *al, bool forgotten)
{
    struct alerts *a = ctx;
    char *event;
    uint64_t now = clock_real_ns();

    alerts_put_state(a, al, forgotten);
    if (forgotten || !al->fired || al->status == ALERT_PENDING)
        return;
    log_warn("alerts", "alert %s %s: job %s %s cause %s ranks %s", al->id,
             alert_status_name(al->status), al->job, al->subject, causes_get(al->cause)->label,
             al->fired_ranks);
    event = alert_event_json(al, a->report_url);
    if (!event) {
        alerts_store_fail(a, "queue an alert", "out of memory");
        return;
    }
    for (size_t i = 0; i < a->n_sinks; i++)
        alerts_enqueue(a, &a->sinks[i], event, now);
    free(event);
    pthread_cond_broadcast(&a->wake);
}

void alerts_observe(struct alerts *a, const char *job, Argus__V1__Report *const *reports, size_t n,
                    uint64_t steps_closed)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    if (alert_book_observe(a->book, job, reports, n, steps_closed, clock_real_ns()) < 0 &&
        a->observe_errors++ % 100 == 0)
        log_error("alerts", "job %s: out of memory tracking alerts", job);
    pthread_mutex_unlock(&a->lock);
}

void alerts_tick(struct alerts *a, uint64_t now_unix_ns)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    alert_book_sweep(a->book, now_unix_ns);
    pthread_mutex_unlock(&a->lock);
}

/* ---- set-up ---------------------------------------------------------------------- */

/* Add the sinks of the comma-separated list (kind). 0 or -EINVAL/-ENOMEM
 * with err naming key. */
static int alerts_add_sinks(struct alerts *a, enum alert_sink_kind kind, const char *list,
                            const char *key, char *err, size_t errlen)
{
    char *copy = strdup(list ? list : ""), *save = NULL;
    int rc = copy ? 0 : -ENOMEM;

    for (char *t = copy ? strtok_r(copy, ", \t", &save) : NULL; t && rc == 0;
         t = strtok_r(NULL, ", \t", &save)) {
        struct alerts_sink *k = &a->sinks[a->n_sinks];
        size_t scheme = strncmp(t, "http://", 7) == 0 ? 7 : strncmp(t, "https://", 8) == 0 ? 8 : 0;
        if (a->n_sinks == ALERTS_MAX_SINKS) {
            snprintf(err, errlen, "%s: more than %d sinks in all", key, ALERTS_MAX_SINKS);
            rc = -EINVAL;
        } else if (kind != ALERT_SINK_EXEC && (!scheme || !t[scheme])) {
            snprintf(err, errlen, "%s: '%s' is not an http:// or https:// URL", key, t);
            rc = -EINVAL;
        } else if (kind == ALERT_SINK_EXEC && (t[0] != '/' || access(t, X_OK) < 0)) {
            snprintf(err, errlen, "%s: '%s' is not an absolute path to an executable file%s%s", key,
                     t, t[0] == '/' ? ": " : "", t[0] == '/' ? strerror(errno) : "");
            rc = -EINVAL;
        } else {
            k->owner = a;
            k->target = strdup(t);
            if (k->target && asprintf(&k->prefix, "q:%s:%s", alert_sink_kind_name(kind), t) < 0)
                k->prefix = NULL;
            if (!k->target || !k->prefix)
                rc = -ENOMEM;
            k->plen = k->prefix ? strlen(k->prefix) + 1 : 0; /* with its \0 */
            k->t = (struct alert_sink_target){kind, k->target, NULL, 0, 0};
            a->n_sinks++;
        }
    }
    free(copy);
    return rc;
}

/* The bearer token from path ("": none), whitespace trimmed. */
static int alerts_read_token(struct alerts *a, const char *path, char *err, size_t errlen)
{
    char buf[1024];
    size_t n;
    FILE *f;

    if (!path || !*path)
        return 0;
    f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "alerts.webhook_token_file: cannot read %s: %s", path,
                 strerror(errno));
        return -EINVAL;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    if (!n || strpbrk(buf, "\r\n")) {
        snprintf(err, errlen, "alerts.webhook_token_file: %s %s", path,
                 n ? "holds more than one line" : "is empty");
        return -EINVAL;
    }
    a->token = strdup(buf);
    return a->token ? 0 : -ENOMEM;
}

struct alerts_load {
    struct alerts *a;
    uint8_t **orphans;
    size_t *orphan_len, n_orphans, cap;
    uint64_t restored, bad;
};

static int alerts_load_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct alerts_load *l = ctx;
    struct alerts *a = l->a;

    if (klen > 2 && memcmp(key, "s:", 2) == 0) {
        char *text = strndup(val, vlen);
        struct json_object *o;
        struct alert al;

        o = text ? json_tokener_parse(text) : NULL;
        if (o && alert_from_json(o, &al) == 0) {
            l->restored += alert_book_restore(a->book, &al, clock_real_ns()) == 0;
            free(al.job);
        } else {
            l->bad++;
        }
        json_object_put(o);
        free(text);
        return 0;
    }
    if (klen < 8 + 3 || memcmp(key, "q:", 2) != 0)
        return 0;
    uint64_t be, seq;
    memcpy(&be, (const uint8_t *)key + klen - 8, 8);
    seq = be64toh(be);
    if (seq > a->seq)
        a->seq = seq;
    for (size_t i = 0; i < a->n_sinks; i++) {
        struct alerts_sink *k = &a->sinks[i];
        if (k->plen + 8 == klen && memcmp(k->prefix, key, k->plen) == 0) {
            if (k->queued++ == 0 && vlen >= 8) {
                memcpy(&be, val, 8);
                k->oldest_ns = be64toh(be);
            }
            return 0;
        }
    }
    if (l->n_orphans == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        uint8_t **ko = realloc(l->orphans, cap * sizeof(*ko));
        size_t *kl = ko ? realloc(l->orphan_len, cap * sizeof(*kl)) : NULL;
        if (ko)
            l->orphans = ko;
        if (!kl)
            return -ENOMEM;
        l->orphan_len = kl;
        l->cap = cap;
    }
    l->orphans[l->n_orphans] = malloc(klen);
    if (!l->orphans[l->n_orphans])
        return -ENOMEM;
    memcpy(l->orphans[l->n_orphans], key, klen);
    l->orphan_len[l->n_orphans++] = klen;
    return 0;
}

/* Take back the states and the queue of the last run. */
static int alerts_load(struct alerts *a, char *err, size_t errlen)
{
    struct alerts_load l = {.a = a};
    char e[256];
    int rc = store_scan_alerts(a->store, NULL, 0, alerts_load_one, &l);

    for (size_t i = 0; i < l.n_orphans; i++) {
        if (rc == 0 &&
            store_delete_alert(a->store, l.orphans[i], l.orphan_len[i], e, sizeof(e)) < 0)
            alerts_store_fail(a, "drop a queued alert", e);
        free(l.orphans[i]);
    }
    if (l.n_orphans)
        log_warn("alerts", "dropped %zu queued alert deliveries of sinks no longer configured",
                 l.n_orphans);
    if (l.restored || l.bad)
        log_info("alerts", "took back %llu alerts from the store (%llu unreadable)",
                 (unsigned long long)l.restored, (unsigned long long)l.bad);
    free(l.orphans);
    free(l.orphan_len);
    if (rc < 0)
        snprintf(err, errlen, "cannot read the alerts queue from the store: %s", strerror(-rc));
    return rc;
}

static int alerts_configure(struct alerts *a, const struct alerts_options *o, char *err,
                            size_t errlen)
{
    struct alert_book_options bo = {
        .clear_steps = o->window + o->resolve_after,
        .job_idle_ns = o->job_idle_ns,
        .rate_limit = o->rate_limit,
        .rate_window_ns = 3600 * NSEC_PER_SEC,
    };
    int rc = 0;

    a->book = alert_book_new(&bo, alerts_changed, a);
    a->report_url = strdup(o->report_url ? o->report_url : "");
    if (!a->book || !a->report_url)
        return -ENOMEM;
    rc = alerts_add_sinks(a, ALERT_SINK_ALERTMANAGER, o->alertmanager, "alerts.alertmanager", err,
                          errlen);
    if (rc == 0)
        rc = alerts_add_sinks(a, ALERT_SINK_WEBHOOK, o->webhook, "alerts.webhook", err, errlen);
    if (rc == 0)
        rc = alerts_add_sinks(a, ALERT_SINK_EXEC, o->exec, "alerts.exec", err, errlen);
    if (rc == 0)
        rc = alerts_read_token(a, o->webhook_token_file, err, errlen);
    for (size_t i = 0; i < a->n_sinks; i++) {
        struct alert_sink_target *t = &a->sinks[i].t;
        t->token = t->kind == ALERT_SINK_WEBHOOK ? a->token : NULL;
        t->timeout_ns = t->kind == ALERT_SINK_EXEC ? o->exec_timeout_ns : o->http_timeout_ns;
        t->ends_ahead_ns = 4 * o->resend_ns;
    }
    return rc;
}

int alerts_new(struct store *s, const struct alerts_options *o, struct alerts **out, char *err,
               size_t errlen)
{
    struct alerts *a = calloc(1, sizeof(*a));
    int rc = a ? 0 : -ENOMEM;

    *out = NULL;
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    a->store = s;
    a->o = *o;
    if (!a->o.backoff_max_ns)
        a->o.backoff_max_ns = 60 * NSEC_PER_SEC;
    if (!a->o.resend_ns)
        a->o.resend_ns = 60 * NSEC_PER_SEC;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->wake, NULL);
    rc = alerts_configure(a, &a->o, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = alerts_load(a, err, errlen);
    for (size_t i = 0; i < a->n_sinks && rc == 0; i++) {
        rc = -pthread_create(&a->sinks[i].thread, NULL, alerts_sender, &a->sinks[i]);
        a->sinks[i].started = rc == 0;
        if (rc < 0)
            snprintf(err, errlen, "cannot start an alert sender: %s", strerror(-rc));
    }
    if (rc < 0) {
        alerts_free(a);
        return rc;
    }
    for (size_t i = 0; i < a->n_sinks; i++)
        log_info("alerts", "sink %s %s (%llu queued)", alert_sink_kind_name(a->sinks[i].t.kind),
                 a->sinks[i].target, (unsigned long long)a->sinks[i].queued);
    *out = a;
    return 0;
}

int alerts_check(const struct alerts_options *o, char *err, size_t errlen)
{
    struct alerts *a = calloc(1, sizeof(*a));
    int rc = -ENOMEM;

    if (a) {
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->wake, NULL);
        rc = alerts_configure(a, o, err, errlen);
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    alerts_free(a); /* no thread started: nothing to join */
    return rc;
}

void alerts_free(struct alerts *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = true;
    pthread_cond_broadcast(&a->wake);
    pthread_mutex_unlock(&a->lock);
    for (size_t i = 0; i < a->n_sinks; i++) {
        if (a->sinks[i].started)
            pthread_join(a->sinks[i].thread, NULL);
        free(a->sinks[i].target);
        free(a->sinks[i].prefix);
    }
    alert_book_free(a->book);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->wake);
    free(a->report_url);
    free(a->token);
    free(a);
}

void alerts_foreach_sink(struct alerts *a, alerts_sink_fn fn, void *ctx)
{
    uint64_t now = clock_real_ns();

    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n_sinks; i++) {
        struct alerts_sink *k = &a->sinks[i];
        struct alerts_sink_stats st = {
            .kind = alert_sink_kind_name(k->t.kind),
            .target = k->target,
            .sent = k->sent,
            .failed = k->failed,
            .queued = k->queued,
            .oldest_age_s =
                k->oldest_ns && now > k->oldest_ns ? (double)(now - k->oldest_ns) / 1e9 : 0,
        };
        fn(ctx, &st);
    }
    pthread_mutex_unlock(&a->lock);
}

void alerts_foreach(struct alerts *a, alert_change_fn fn, void *ctx)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    alert_book_foreach(a->book, fn, ctx);
    pthread_mutex_unlock(&a->lock);
}

void alerts_get_counts(struct alerts *a, uint64_t *rate_limited, uint64_t *store_errors)
{
    *rate_limited = *store_errors = 0;
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    *rate_limited = alert_book_rate_limited(a->book);
    *store_errors = a->store_errors;
    pthread_mutex_unlock(&a->lock);
}
