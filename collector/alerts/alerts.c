#include "collector/alerts/alerts.h"

#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "collector/alerts/alert_json.h"
#include "collector/alerts/alerts_sender.h"
#include "collector/store/store.h"
#include "common/causes.h"
#include "common/clock.h"
#include "common/log.h"

#define ALERTS_MAX_TARGETS 32 /* targets in all */

/* a->lock guards the book, seq and the error counts; each sender guards
 * its own counters. Order: a->lock, then a sender's lock (a sender takes
 * a->lock, to read the book, only without its own: alerts_sender.h). */
struct alerts {
    struct store *store;
    struct alerts_options o;
    char *report_url;
    char *token;
    struct alert_sink_settings settings; /* what the sinks read */
    pthread_mutex_t lock;
    struct alert_book *book;
    struct alerts_sender *senders[ALERTS_MAX_TARGETS];
    size_t n_senders;
    uint64_t seq;
    uint64_t store_errors, observe_errors;
};

/* ---- the queue in the store ----------------------------------------------- */

/* Count a store error and log it (1 in 100). a->lock held. */
static void alerts_store_fail(struct alerts *a, const char *what, const char *err)
{
    if (a->store_errors++ % 100 == 0)
        log_error("alerts", "%s: %s (%llu store errors so far)", what, err,
                  (unsigned long long)a->store_errors);
}

/* Queue event text for every sender (a->lock held). */
static void alerts_enqueue(struct alerts *a, const char *event, uint64_t now)
{
    char err[256];

    for (size_t i = 0; i < a->n_senders; i++)
        if (alerts_sender_enqueue(a->senders[i], ++a->seq, event, now, err, sizeof(err)) < 0)
            alerts_store_fail(a, "queue an alert", err);
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
    alerts_enqueue(a, event, now);
    free(event);
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

void alerts_resolve(struct alerts *a, const char *job, int cause, int keep)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    alert_book_resolve(a->book, job, cause, keep, clock_real_ns());
    pthread_mutex_unlock(&a->lock);
}

void alerts_recovered(struct alerts *a, const char *job, uint32_t rank, uint32_t causes)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    alert_book_recovered(a->book, job, rank, causes, clock_real_ns());
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

/* Add a sender per target of the comma-separated list of sink ops (config
 * key alerts.NAME). 0 or -EINVAL/-ENOMEM with err naming the key. */
static int alerts_add_sinks(struct alerts *a, const struct alert_sink_ops *ops, const char *list,
                            char *err, size_t errlen)
{
    char *copy = strdup(list ? list : ""), *save = NULL, e[300];
    int rc = copy ? 0 : -ENOMEM;
    struct alerts_sender_options so = {
        .store = a->store,
        .ops = ops,
        .settings = &a->settings,
        .backoff_max_ns = a->o.backoff_max_ns,
        .book = a->book,
        .book_lock = &a->lock,
        .report_url = a->report_url,
    };

    /* entries between commas, blanks around them trimmed: one with blanks
     * inside ("not a url") is judged, and quoted, whole */
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && rc == 0;
         t = strtok_r(NULL, ",", &save)) {
        char *end = t + strlen(t);
        while (*t == ' ' || *t == '\t')
            t++;
        while (end > t && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (!*t)
            continue;
        if (a->n_senders == ALERTS_MAX_TARGETS) {
            snprintf(err, errlen, "alerts.%s: more than %d sinks in all", ops->name,
                     ALERTS_MAX_TARGETS);
            rc = -EINVAL;
        } else if (ops->check(t, e, sizeof(e)) < 0) {
            snprintf(err, errlen, "alerts.%s: %s", ops->name, e);
            rc = -EINVAL;
        } else {
            so.target = t;
            a->senders[a->n_senders] = alerts_sender_new(&so);
            rc = a->senders[a->n_senders] ? 0 : -ENOMEM;
            a->n_senders += rc == 0;
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
    for (size_t i = 0; i < a->n_senders; i++) {
        if (alerts_sender_owns(a->senders[i], key, klen)) {
            if (vlen >= 8)
                memcpy(&be, val, 8);
            alerts_sender_restore(a->senders[i], vlen >= 8 ? be64toh(be) : 0);
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
    for (size_t i = 0; i < alert_sinks_count && rc == 0; i++)
        rc = alerts_add_sinks(a, alert_sinks[i], o->targets[i], err, errlen);
    if (rc == 0)
        rc = alerts_read_token(a, o->webhook_token_file, err, errlen);
    a->settings = (struct alert_sink_settings){
        .token = a->token,
        .http_timeout_ns = o->http_timeout_ns,
        .exec_timeout_ns = o->exec_timeout_ns,
        .resend_ns = o->resend_ns,
    };
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
    rc = alerts_configure(a, &a->o, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        rc = alerts_load(a, err, errlen);
    for (size_t i = 0; i < a->n_senders && rc == 0; i++) {
        rc = alerts_sender_start(a->senders[i]);
        if (rc < 0)
            snprintf(err, errlen, "cannot start an alert sender: %s", strerror(-rc));
    }
    if (rc < 0) {
        alerts_free(a);
        return rc;
    }
    for (size_t i = 0; i < a->n_senders; i++) {
        struct alerts_sender_stats st;
        alerts_sender_stats(a->senders[i], &st);
        log_info("alerts", "sink %s %s (%llu queued)", st.kind, st.target,
                 (unsigned long long)st.queued);
    }
    *out = a;
    return 0;
}

int alerts_check(const struct alerts_options *o, char *err, size_t errlen)
{
    struct alerts *a = calloc(1, sizeof(*a));
    int rc = -ENOMEM;

    if (a) {
        pthread_mutex_init(&a->lock, NULL);
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
    for (size_t i = 0; i < a->n_senders; i++) /* all told first: they stop together */
        alerts_sender_stop(a->senders[i]);
    for (size_t i = 0; i < a->n_senders; i++)
        alerts_sender_free(a->senders[i]);
    alert_book_free(a->book);
    pthread_mutex_destroy(&a->lock);
    free(a->report_url);
    free(a->token);
    free(a);
}

void alerts_foreach_sink(struct alerts *a, alerts_sink_fn fn, void *ctx)
{
    uint64_t now = clock_real_ns();

    if (!a)
        return;
    for (size_t i = 0; i < a->n_senders; i++) { /* fixed since alerts_new: no lock */
        struct alerts_sender_stats k;
        alerts_sender_stats(a->senders[i], &k);
        struct alerts_sink_stats st = {
            .kind = k.kind,
            .target = k.target,
            .sent = k.sent,
            .failed = k.failed,
            .queued = k.queued,
            .oldest_age_s =
                k.oldest_ns && now > k.oldest_ns ? (double)(now - k.oldest_ns) / 1e9 : 0,
        };
        fn(ctx, &st);
    }
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
