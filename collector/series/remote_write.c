#include "collector/series/remote_write.h"

#include <errno.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/series/series.h"
#include "common/clock.h"
#include "common/http_client.h"
#include "common/log.h"
#include "common/procstat.h"
#include "proto/remote_write.pb-c.h"

#define REMOTE_WRITE_BACKOFF_MIN_NS (500 * NSEC_PER_MSEC)
#define REMOTE_WRITE_BACKOFF_MAX_NS (30 * NSEC_PER_SEC)

struct remote_write_request { /* one collection, encoded */
    struct remote_write_request *next;
    void *data;
    size_t len;
    uint64_t samples;
};

struct remote_write {
    struct remote_write_options o;
    char *url;
    char *replica;   /* NULL: no replica label */
    char *collector; /* NULL: no collector label */
    char *auth;      /* "Authorization: Bearer ..." or NULL */
    char agent[96];
    remote_write_collect_fn collect;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t lock; /* stop, stats */
    pthread_cond_t wake;
    bool stop;
    struct remote_write_request *head, *tail; /* the sender thread's alone */
    unsigned attempt;                         /* failed sends of the head */
    struct remote_write_stats st;
};

/* --- encoding ----------------------------------------------------------------- */

static int remote_write_label_cmp(const void *a, const void *b)
{
    const Prometheus__Label *x = *(Prometheus__Label *const *)a;
    const Prometheus__Label *y = *(Prometheus__Label *const *)b;

    return strcmp(x->name, y->name);
}

/* Fill ts (with its label and sample storage) for sample x, replica=R
 * added when replica is set, else collector=C when collector is. */
static void remote_write_series(const struct series_sample *x, const char *collector,
                                const char *replica, int64_t ts_ms, Prometheus__TimeSeries *ts,
                                Prometheus__Label *lab, Prometheus__Label **labp,
                                Prometheus__Sample *smp, Prometheus__Sample **smpp)
{
    size_t n = (size_t)x->n_labels + 1;

    prometheus__time_series__init(ts);
    for (int l = 0; l <= x->n_labels; l++) {
        prometheus__label__init(&lab[l]);
        lab[l].name = l ? (char *)x->label_names[l - 1] : "__name__";
        lab[l].value = l ? x->label_values[l - 1] : (char *)series_metric_name(x->metric);
        labp[l] = &lab[l];
    }
    bool rep = replica && *replica;
    if (rep || (collector && *collector)) {
        prometheus__label__init(&lab[n]);
        lab[n].name = rep ? "replica" : "collector";
        lab[n].value = (char *)(rep ? replica : collector);
        labp[n] = &lab[n];
        n++;
    }
    qsort(labp, n, sizeof(*labp), remote_write_label_cmp);
    prometheus__sample__init(smp);
    smp->value = x->value;
    smp->timestamp = ts_ms;
    *smpp = smp;
    ts->labels = labp;
    ts->n_labels = n;
    ts->samples = smpp;
    ts->n_samples = 1;
}

/* Pack req and snappy-compress it into *out. 0 or -ENOMEM. */
static int remote_write_compress(const Prometheus__WriteRequest *req, void **out, size_t *len)
{
    size_t raw_len = prometheus__write_request__get_packed_size(req);
    uint8_t *raw = malloc(raw_len ? raw_len : 1);
    size_t max = snappy_max_compressed_length(raw_len);
    char *z = malloc(max);
    int err = raw && z ? 0 : -ENOMEM;

    if (!err) {
        prometheus__write_request__pack(req, raw);
        err = snappy_compress((const char *)raw, raw_len, z, &max) == SNAPPY_OK ? 0 : -ENOMEM;
    }
    free(raw);
    if (err) {
        free(z);
        return err;
    }
    *out = z;
    *len = max;
    return 0;
}

int remote_write_encode(const struct series_set *s, const char *collector, const char *replica,
                        int64_t timestamp_ms, void **out, size_t *len)
{
    const size_t nl = SERIES_MAX_LABELS + 2, n = s->n ? s->n : 1;
    Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
    Prometheus__TimeSeries *ts = calloc(n, sizeof(*ts));
    Prometheus__TimeSeries **tsp = calloc(n, sizeof(*tsp));
    Prometheus__Label *lab = calloc(n * nl, sizeof(*lab));
    Prometheus__Label **labp = calloc(n * nl, sizeof(*labp));
    Prometheus__Sample *smp = calloc(n, sizeof(*smp));
    Prometheus__Sample **smpp = calloc(n, sizeof(*smpp));
    int err = ts && tsp && lab && labp && smp && smpp ? 0 : -ENOMEM;

    for (size_t i = 0; !err && i < s->n; i++) {
        remote_write_series(&s->v[i], collector, replica, timestamp_ms, &ts[i], &lab[i * nl],
                            &labp[i * nl], &smp[i], &smpp[i]);
        tsp[i] = &ts[i];
    }
    req.timeseries = tsp;
    req.n_timeseries = s->n;
    err = err ? err : remote_write_compress(&req, out, len);
    free(ts);
    free(tsp);
    free(lab);
    free(labp);
    free(smp);
    free(smpp);
    return err;
}

enum remote_write_verdict remote_write_classify(bool transport_ok, long status)
{
    if (!transport_ok)
        return REMOTE_WRITE_RETRY;
    if (status >= 200 && status < 300)
        return REMOTE_WRITE_SENT;
    if (status >= 400 && status < 500 && status != 429)
        return REMOTE_WRITE_REJECT;
    return REMOTE_WRITE_RETRY;
}

uint64_t remote_write_backoff_ns(unsigned attempt)
{
    uint64_t ns = REMOTE_WRITE_BACKOFF_MIN_NS;

    for (unsigned i = 1; i < attempt && ns < REMOTE_WRITE_BACKOFF_MAX_NS; i++)
        ns *= 2;
    return ns < REMOTE_WRITE_BACKOFF_MAX_NS ? ns : REMOTE_WRITE_BACKOFF_MAX_NS;
}

/* --- the queue (the sender thread's) -------------------------------------------- */

static void remote_write_pop(struct remote_write *w)
{
    struct remote_write_request *r = w->head;

    w->head = r->next;
    if (!w->head)
        w->tail = NULL;
    pthread_mutex_lock(&w->lock);
    w->st.queued_requests--;
    w->st.queued_bytes -= r->len;
    pthread_mutex_unlock(&w->lock);
    free(r->data);
    free(r);
    w->attempt = 0;
}

/* Queue r, dropping the oldest requests while the queue is over its bytes. */
static void remote_write_push(struct remote_write *w, struct remote_write_request *r)
{
    if (w->tail)
        w->tail->next = r;
    else
        w->head = r;
    w->tail = r;
    pthread_mutex_lock(&w->lock);
    w->st.queued_requests++;
    w->st.queued_bytes += r->len;
    pthread_mutex_unlock(&w->lock);
    while (w->head && w->st.queued_bytes > w->o.queue_bytes) {
        pthread_mutex_lock(&w->lock);
        w->st.samples_dropped += w->head->samples;
        pthread_mutex_unlock(&w->lock);
        remote_write_pop(w);
    }
}

/* Collect and encode one request into the queue. */
static void remote_write_collect(struct remote_write *w)
{
    struct series_set s = {0};
    struct remote_write_request *r = calloc(1, sizeof(*r));
    int err = r ? w->collect(w->ctx, &s) : -ENOMEM;

    if (!err && !s.n) { /* no job: nothing to send */
        free(r);
        return;
    }
    err = err < 0
              ? err
              : remote_write_encode(&s, w->collector, w->replica,
                                    (int64_t)(clock_real_ns() / NSEC_PER_MSEC), &r->data, &r->len);
    if (err < 0) {
        log_warn("remote_write", "cannot build a request: %s", strerror(-err));
        free(r);
    } else {
        r->samples = s.n;
        remote_write_push(w, r);
    }
    series_set_clear(&s);
    pthread_mutex_lock(&w->lock);
    w->st.collections += err == 0;
    pthread_mutex_unlock(&w->lock);
}

/* POST the head; returns the wait before the next send (0: go on). */
static uint64_t remote_write_send(struct remote_write *w)
{
    const char *headers[] = {"Content-Encoding: snappy", "X-Prometheus-Remote-Write-Version: 0.1.0",
                             w->agent, w->auth, NULL};
    struct http_response resp;
    char err[256];
    int r = http_post(w->url, "application/x-protobuf", headers, w->head->data, w->head->len,
                      w->o.timeout_ns / NSEC_PER_MSEC, &resp, err, sizeof(err));
    enum remote_write_verdict v = remote_write_classify(r == 0, resp.status);
    uint64_t samples = w->head->samples, wait = 0;

    pthread_mutex_lock(&w->lock);
    w->st.last_status = r == 0 ? resp.status : 0;
    w->st.requests_sent += v == REMOTE_WRITE_SENT;
    w->st.samples_sent += v == REMOTE_WRITE_SENT ? samples : 0;
    w->st.samples_rejected += v == REMOTE_WRITE_REJECT ? samples : 0;
    w->st.requests_failed += v == REMOTE_WRITE_RETRY;
    if (v == REMOTE_WRITE_SENT)
        w->st.last_success_unix = (double)clock_real_ns() / 1e9;
    pthread_mutex_unlock(&w->lock);
    if (v == REMOTE_WRITE_RETRY) {
        wait = remote_write_backoff_ns(++w->attempt);
        if (w->attempt == 1 || w->attempt % 10 == 0) /* rate-limited */
            log_warn("remote_write", "%s (attempt %u): %s; retrying in %.1f s", w->url, w->attempt,
                     r == 0 ? "server error" : err, (double)wait / 1e9);
    } else {
        if (v == REMOTE_WRITE_REJECT)
            log_warn("remote_write", "%s refused %llu samples with HTTP %ld: %.200s", w->url,
                     (unsigned long long)samples, resp.status, resp.body ? resp.body : "");
        remote_write_pop(w);
    }
    http_response_free(&resp);
    return wait;
}

/* Sleep until mono deadline or stop; true when stopping. */
static bool remote_write_sleep(struct remote_write *w, uint64_t until_mono)
{
    uint64_t now = clock_mono_ns();
    struct timespec ts;
    bool stop;

    clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
    uint64_t wake = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec +
                    (until_mono > now ? until_mono - now : 0);
    ts.tv_sec = (time_t)(wake / NSEC_PER_SEC);
    ts.tv_nsec = (long)(wake % NSEC_PER_SEC);
    pthread_mutex_lock(&w->lock);
    if (!w->stop && until_mono > now)
        pthread_cond_timedwait(&w->wake, &w->lock, &ts);
    stop = w->stop;
    pthread_mutex_unlock(&w->lock);
    return stop;
}

static void *remote_write_main(void *arg)
{
    struct remote_write *w = arg;
    uint64_t next_collect = clock_mono_ns(), next_send = 0;

    for (;;) {
        uint64_t now = clock_mono_ns();
        if (now >= next_collect) {
            remote_write_collect(w);
            next_collect = now + w->o.interval_ns;
        }
        if (w->head && now >= next_send)
            next_send = clock_mono_ns() + remote_write_send(w);
        uint64_t until = w->head && next_send < next_collect ? next_send : next_collect;
        if (remote_write_sleep(w, until))
            break;
    }
    return NULL;
}

/* --- life cycle ------------------------------------------------------------------- */

/* "Authorization: Bearer <first line of path>" into *out. 0 or -errno. */
static int remote_write_token(const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    char line[4096] = "";

    if (!f) {
        int e = errno;
        snprintf(err, errlen, "remote_write.bearer_token_file %s: %s", path, strerror(e));
        return -e;
    }
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) {
        snprintf(err, errlen,
                 "remote_write.bearer_token_file %s: empty (want the token on its "
                 "first line)",
                 path);
        return -EINVAL;
    }
    if (asprintf(out, "Authorization: Bearer %s", line) < 0) {
        *out = NULL;
        return -ENOMEM;
    }
    return 0;
}

struct remote_write *remote_write_new(const struct remote_write_options *o,
                                      remote_write_collect_fn collect, void *ctx, char *err,
                                      size_t errlen)
{
    struct remote_write *w = calloc(1, sizeof(*w));
    int r = 0;

    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->o = *o;
    w->collect = collect;
    w->ctx = ctx;
    w->url = strdup(o->url);
    w->replica = o->replica && *o->replica ? strdup(o->replica) : NULL;
    w->collector = o->collector && *o->collector ? strdup(o->collector) : NULL;
    snprintf(w->agent, sizeof(w->agent), "User-Agent: argus-collector/%s", procstat_version());
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0) {
        snprintf(err, errlen, "remote_write.url %s: want an http:// or https:// URL", o->url);
        r = -EINVAL;
    }
    if (!r && o->bearer_token_file && *o->bearer_token_file)
        r = remote_write_token(o->bearer_token_file, &w->auth, err, errlen);
    if (!r && (!w->url || (o->replica && *o->replica && !w->replica) ||
               (o->collector && *o->collector && !w->collector))) {
        snprintf(err, errlen, "out of memory");
        r = -ENOMEM;
    }
    if (!r && (r = -pthread_create(&w->thread, NULL, remote_write_main, w)) < 0)
        snprintf(err, errlen, "cannot start the remote write thread: %s", strerror(-r));
    if (r < 0) {
        w->stop = true; /* no thread to join */
        remote_write_free(w);
        return NULL;
    }
    return w;
}

void remote_write_free(struct remote_write *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    bool started = !w->stop;
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    if (started)
        pthread_join(w->thread, NULL);
    while (w->head)
        remote_write_pop(w);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    free(w->auth);
    free(w->url);
    free(w->replica);
    free(w->collector);
    free(w);
}

void remote_write_get_stats(struct remote_write *w, struct remote_write_stats *out)
{
    pthread_mutex_lock(&w->lock);
    *out = w->st;
    pthread_mutex_unlock(&w->lock);
}
