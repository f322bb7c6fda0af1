#include "collector/trace/trace_capture.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "common/clock.h"
#include "common/log.h"

struct trace_request {
    char *report_id, *job;
    uint32_t rank;
    uint64_t from_ns, to_ns;
    uint64_t queued_ns, sent_ns; /* monotonic; sent_ns 0 = not sent yet */
};

struct trace_capture {
    struct store *store;
    pthread_mutex_t lock;
    struct trace_request *req;
    size_t n, cap;
    struct trace_capture_stats stats;
};

struct trace_capture *trace_capture_new(struct store *store)
{
    struct trace_capture *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->store = store;
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

static void trace_request_clear(struct trace_request *r)
{
    free(r->report_id);
    free(r->job);
}

void trace_capture_free(struct trace_capture *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        trace_request_clear(&t->req[i]);
    free(t->req);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Remove request i (t->lock held). */
static void trace_remove(struct trace_capture *t, size_t i)
{
    trace_request_clear(&t->req[i]);
    t->req[i] = t->req[--t->n];
}

/* Queue a request (copied). 0 or -ENOMEM / -ENOSPC. */
static int trace_queue(struct trace_capture *t, const char *id, const char *job, uint32_t rank,
                       uint64_t from_ns, uint64_t to_ns)
{
    struct trace_request r = {.report_id = strdup(id),
                              .job = strdup(job),
                              .rank = rank,
                              .from_ns = from_ns,
                              .to_ns = to_ns,
                              .queued_ns = clock_mono_ns()};
    int rc = -ENOMEM;

    pthread_mutex_lock(&t->lock);
    if (t->n >= TRACE_MAX_PENDING) {
        rc = -ENOSPC;
    } else if (r.report_id && r.job && t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct trace_request *grown = realloc(t->req, cap * sizeof(*grown));
        if (grown) {
            t->req = grown;
            t->cap = cap;
        }
    }
    if (rc != -ENOSPC && r.report_id && r.job && t->n < t->cap) {
        t->req[t->n++] = r;
        t->stats.requested++;
        rc = 0;
    } else {
        t->stats.failed++;
        trace_request_clear(&r);
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* The time span of a rank's step records. */
struct trace_span {
    uint64_t from, to;
};

static int trace_step_span(void *ctx, const void *value, size_t len)
{
    struct trace_span *w = ctx;
    Argus__V1__StepRecord *s = argus__v1__step_record__unpack(NULL, len, value);

    if (!s)
        return 0;
    if (!w->from || s->start_unix_ns < w->from)
        w->from = s->start_unix_ns;
    if (s->start_unix_ns + s->duration_ns > w->to)
        w->to = s->start_unix_ns + s->duration_ns;
    argus__v1__step_record__free_unpacked(s, NULL);
    return 0;
}

/* The window of rank's steps [from_step, to_step], padded by a tenth;
 * false when the store has none of them. */
static bool trace_window(struct trace_capture *t, const char *job, uint32_t rank,
                         uint64_t from_step, uint64_t to_step, struct trace_span *w)
{
    uint64_t pad;

    *w = (struct trace_span){0};
    if (store_scan_steps(t->store, job, rank, from_step, to_step, trace_step_span, w) < 0 || !w->to)
        return false;
    pad = (w->to - w->from) / 10;
    w->from -= pad < w->from ? pad : 0;
    w->to += pad;
    return true;
}

/* Ranks of a job, for the healthy peer. */
struct trace_ranks {
    const Argus__V1__Report *r;
    int64_t peer;
};

static bool trace_is_suspect(const Argus__V1__Report *r, uint32_t rank)
{
    for (size_t i = 0; i < r->n_suspects; i++)
        if (r->suspects[i]->rank == rank)
            return true;
    return false;
}

static int trace_pick_peer(void *ctx, const void *value, size_t len)
{
    struct trace_ranks *p = ctx;
    Argus__V1__Resource *res = argus__v1__resource__unpack(NULL, len, value);

    if (!res)
        return 0;
    if (p->peer < 0 && !trace_is_suspect(p->r, res->rank))
        p->peer = res->rank;
    argus__v1__resource__free_unpacked(res, NULL);
    return p->peer >= 0 ? 1 : 0;
}

static void trace_queue_rank(struct trace_capture *t, const Argus__V1__Report *r, uint32_t rank,
                             uint64_t from_step, const struct trace_span *fallback)
{
    struct trace_span w;

    if (!trace_window(t, r->job, rank, from_step, r->to_step, &w)) {
        if (!fallback)
            return;
        w = *fallback;
    }
    if (trace_queue(t, r->id, r->job, rank, w.from, w.to) < 0)
        log_warn("trace", "report %s: capture of rank %u not queued (%d pending at most)", r->id,
                 rank, TRACE_MAX_PENDING);
}

void trace_capture_report(void *ctx, const Argus__V1__Report *r)
{
    struct trace_capture *t = ctx;
    uint64_t from = r->to_step >= TRACE_WINDOW_STEPS ? r->to_step - TRACE_WINDOW_STEPS + 1 : 0;
    struct trace_ranks peer = {r, -1};
    struct trace_span first = {0};

    if (from < r->from_step)
        from = r->from_step;
    for (size_t i = 0; i < r->n_suspects; i++) {
        const Argus__V1__Suspect *s = r->suspects[i];
        if (!s->pages || s->level == ARGUS__V1__LEVEL__LEVEL_SILENT)
            continue; /* a silent rank has no spans to send */
        if (!first.to)
            trace_window(t, r->job, s->rank, from, r->to_step, &first);
        trace_queue_rank(t, r, s->rank, from, NULL);
    }
    if (!first.to)
        return;
    store_scan_ranks(t->store, r->job, trace_pick_peer, &peer);
    if (peer.peer >= 0)
        trace_queue_rank(t, r, (uint32_t)peer.peer, from, &first);
    log_info("trace", "report %s: drill-down captures queued for steps %" PRIu64 "-%" PRIu64, r->id,
             from, r->to_step);
}

/* Does batch b carry steps or the resource of (job, rank)? */
static bool trace_batch_has(const Argus__V1__Batch *b, const char *job, uint32_t rank)
{
    for (size_t i = 0; i < b->n_steps; i++)
        if (b->steps[i]->rank == rank && strcmp(b->steps[i]->job, job) == 0)
            return true;
    for (size_t i = 0; i < b->n_resources; i++)
        if (b->resources[i]->rank == rank && strcmp(b->resources[i]->job, job) == 0)
            return true;
    return false;
}

/* Fail requests older than TRACE_EXPIRE_NS (t->lock held). */
static void trace_expire(struct trace_capture *t, uint64_t now)
{
    for (size_t i = 0; i < t->n;) {
        if (now - t->req[i].queued_ns > TRACE_EXPIRE_NS) {
            log_warn("trace", "report %s: no capture of rank %u of job %s arrived; given up",
                     t->req[i].report_id, t->req[i].rank, t->req[i].job);
            t->stats.failed++;
            trace_remove(t, i);
        } else {
            i++;
        }
    }
}

void trace_capture_ack(struct trace_capture *t, const Argus__V1__Batch *b, Argus__V1__Ack *ack)
{
    uint64_t now = clock_mono_ns();

    pthread_mutex_lock(&t->lock);
    trace_expire(t, now);
    for (size_t i = 0; i < t->n && ack->n_captures < TRACE_MAX_PER_ACK; i++) {
        struct trace_request *q = &t->req[i];
        Argus__V1__CaptureRequest *c;
        if ((q->sent_ns && now - q->sent_ns < TRACE_RETRY_NS) ||
            !trace_batch_has(b, q->job, q->rank))
            continue;
        if (!ack->captures && !(ack->captures = calloc(TRACE_MAX_PER_ACK, sizeof(c))))
            break;
        if (!(c = malloc(sizeof(*c))))
            break;
        argus__v1__capture_request__init(c);
        c->report_id = strdup(q->report_id);
        c->job = strdup(q->job);
        c->rank = q->rank;
        c->from_unix_ns = q->from_ns;
        c->to_unix_ns = q->to_ns;
        ack->captures[ack->n_captures++] = c;
        q->sent_ns = now;
        t->stats.sent++;
    }
    pthread_mutex_unlock(&t->lock);
}

void trace_capture_ack_done(Argus__V1__Ack *ack)
{
    for (size_t i = 0; i < ack->n_captures; i++) {
        free(ack->captures[i]->report_id);
        free(ack->captures[i]->job);
        free(ack->captures[i]);
    }
    free(ack->captures);
    ack->captures = NULL;
    ack->n_captures = 0;
}

/* Store one window; 0, or -EINVAL (refused) / -EIO. */
static int trace_store_window(struct trace_capture *t, const Argus__V1__TraceWindow *w)
{
    size_t len = argus__v1__trace_window__get_packed_size(w);
    uint8_t *buf;
    char err[256];
    int rc;

    if (!w->report_id || !*w->report_id || !w->job || w->n_spans > TRACE_MAX_SPANS)
        return -EINVAL;
    buf = malloc(len ? len : 1);
    if (!buf)
        return -ENOMEM;
    argus__v1__trace_window__pack(w, buf);
    rc = store_put_trace(t->store, w->report_id, w->rank, buf, len, err, sizeof(err));
    if (rc < 0)
        log_error("trace", "window of report %s rank %u not stored: %s", w->report_id, w->rank,
                  err);
    free(buf);
    return rc;
}

void trace_capture_ingest(struct trace_capture *t, const Argus__V1__Batch *b)
{
    for (size_t i = 0; i < b->n_traces; i++) {
        const Argus__V1__TraceWindow *w = b->traces[i];
        int rc = trace_store_window(t, w);

        if (rc == -EINVAL)
            log_warn("trace", "a capture from %s refused: no report id or over %d spans",
                     b->agent_id, TRACE_MAX_SPANS);
        pthread_mutex_lock(&t->lock);
        if (rc == -EINVAL)
            t->stats.refused++;
        else if (rc < 0)
            t->stats.store_errors++;
        else
            t->stats.received++;
        for (size_t j = 0; rc == 0 && j < t->n; j++)
            if (t->req[j].rank == w->rank && strcmp(t->req[j].report_id, w->report_id) == 0) {
                trace_remove(t, j);
                break;
            }
        pthread_mutex_unlock(&t->lock);
    }
}

void trace_capture_get_stats(struct trace_capture *t, struct trace_capture_stats *out)
{
    pthread_mutex_lock(&t->lock);
    *out = t->stats;
    out->pending = t->n;
    pthread_mutex_unlock(&t->lock);
}
