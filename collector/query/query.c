#include "collector/query/query.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/alerts/alerts.h"
#include "collector/store/store.h"
#include "collector/trace/trace_json.h"
#include "common/heatmap_wire.h"
#include "common/rpc_paths.h"
#include "common/u64set.h"
#include "proto/argus.pb-c.h"

/* A growing array of unpacked messages of one type. */
struct query_list {
    ProtobufCMessage **items;
    size_t n, cap;
    size_t bytes; /* packed bytes seen */
    size_t limit; /* 0 = none */
    bool truncated;
    const ProtobufCMessageDescriptor *type;
};

static int query_collect(void *ctx, const void *value, size_t len)
{
    struct query_list *l = ctx;
    ProtobufCMessage *m;

    if ((l->limit && l->n >= l->limit) || l->bytes + len > QUERY_MAX_REPLY_BYTES) {
        l->truncated = true;
        return 1;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        ProtobufCMessage **items = realloc(l->items, cap * sizeof(*items));
        if (!items)
            return -ENOMEM;
        l->items = items;
        l->cap = cap;
    }
    m = protobuf_c_message_unpack(l->type, NULL, len, value);
    if (!m)
        return 0; /* a record we cannot read is skipped, not fatal */
    l->items[l->n++] = m;
    l->bytes += len;
    return 0;
}

static void query_list_free(struct query_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        protobuf_c_message_free_unpacked(l->items[i], NULL);
    free(l->items);
}

__attribute__((format(printf, 3, 4))) static void query_fail(struct transport_reply *reply,
                                                             int status, const char *fmt, ...)
{
    va_list ap;

    reply->status = status;
    va_start(ap, fmt);
    vsnprintf(reply->message, sizeof(reply->message), fmt, ap);
    va_end(ap);
}

/* Pack msg into reply. */
static void query_reply(struct transport_reply *reply, const ProtobufCMessage *msg)
{
    reply->len = protobuf_c_message_get_packed_size(msg);
    reply->data = malloc(reply->len ? reply->len : 1);
    if (!reply->data) {
        query_fail(reply, TRANSPORT_INTERNAL, "%s", "out of memory");
        return;
    }
    protobuf_c_message_pack(msg, reply->data);
}

/* store_get_job's callback when only whether the job is there matters. */
static int query_job_there(void *ctx, const void *value, size_t len)
{
    (void)ctx, (void)value, (void)len;
    return 0;
}

/* True when the store knows job; else reply NOT_FOUND. */
static bool query_job_known(struct store *s, const char *job, struct transport_reply *reply)
{
    bool found;

    if (!job || !*job) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "request needs a job id");
        return false;
    }
    found = store_get_job(s, job, query_job_there, NULL) == 0;
    if (!found)
        query_fail(reply, TRANSPORT_NOT_FOUND, "no job '%.200s' in this collector", job);
    return found;
}

static void query_jobs(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__JobsRequest *req = argus__v1__jobs_request__unpack(NULL, len, data);
    Argus__V1__JobsResponse resp = ARGUS__V1__JOBS_RESPONSE__INIT;
    struct query_list l = {.type = &argus__v1__job_info__descriptor};

    if (!req) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not a JobsRequest");
        return;
    }
    l.limit = req->limit;
    if (store_scan_jobs(ctx, query_collect, &l) < 0) {
        query_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "store read failed");
    } else {
        resp.n_jobs = l.n;
        resp.jobs = (Argus__V1__JobInfo **)l.items;
        query_reply(reply, &resp.base);
    }
    query_list_free(&l);
    argus__v1__jobs_request__free_unpacked(req, NULL);
}

static void query_add_names(struct u64set *ids, const Argus__V1__StepRecord *s)
{
    for (size_t i = 0; i < s->n_phases; i++)
        u64set_add(ids, s->phases[i]->name_id);
    for (size_t i = 0; i < s->n_kernels; i++)
        u64set_add(ids, s->kernels[i]->name_id);
    for (size_t i = 0; i < s->n_collectives; i++)
        u64set_add(ids, s->collectives[i]->name_id);
    for (size_t i = 0; i < s->n_top_frames; i++)
        u64set_add(ids, s->top_frames[i]->name_id);
}

/* Fill resp->names with the names the steps reference. */
static int query_names(struct store *st, const char *job, struct query_list *steps,
                       Argus__V1__StepsResponse *resp)
{
    struct u64set ids = {0};
    size_t n = 0;

    for (size_t i = 0; i < steps->n; i++)
        query_add_names(&ids, (Argus__V1__StepRecord *)steps->items[i]);
    resp->names = calloc(ids.count ? ids.count : 1, sizeof(*resp->names));
    if (!resp->names) {
        u64set_clear(&ids);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ids.cap; i++) {
        char *name = ids.keys[i] ? store_get_name(st, job, ids.keys[i]) : NULL;
        Argus__V1__NameEntry *e = name ? malloc(sizeof(*e)) : NULL;
        if (!e) {
            free(name);
            continue;
        }
        argus__v1__name_entry__init(e);
        e->job = (char *)job;
        e->id = ids.keys[i];
        e->name = name;
        resp->names[n++] = e;
    }
    resp->n_names = n;
    u64set_clear(&ids);
    return 0;
}

static void query_steps(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__StepsRequest *req = argus__v1__steps_request__unpack(NULL, len, data);
    Argus__V1__StepsResponse resp = ARGUS__V1__STEPS_RESPONSE__INIT;
    struct query_list l = {.type = &argus__v1__step_record__descriptor};

    if (!req) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not a StepsRequest");
        return;
    }
    if (!query_job_known(ctx, req->job, reply))
        goto out;
    l.limit = req->limit ? req->limit : QUERY_DEFAULT_STEP_LIMIT;
    if (l.limit > QUERY_MAX_STEP_LIMIT)
        l.limit = QUERY_MAX_STEP_LIMIT;
    if (store_scan_steps(ctx, req->job, req->rank, req->from_step, req->to_step, query_collect,
                         &l) < 0) {
        query_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "store read failed");
        goto out;
    }
    resp.n_steps = l.n;
    resp.steps = (Argus__V1__StepRecord **)l.items;
    resp.truncated = l.truncated;
    if (query_names(ctx, req->job, &l, &resp) < 0)
        query_fail(reply, TRANSPORT_INTERNAL, "%s", "out of memory");
    else
        query_reply(reply, &resp.base);
    for (size_t i = 0; i < resp.n_names; i++) {
        free(resp.names[i]->name);
        free(resp.names[i]);
    }
    free(resp.names);
out:
    query_list_free(&l);
    argus__v1__steps_request__free_unpacked(req, NULL);
}

static void query_ranks(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__RanksRequest *req = argus__v1__ranks_request__unpack(NULL, len, data);
    Argus__V1__RanksResponse resp = ARGUS__V1__RANKS_RESPONSE__INIT;
    struct query_list l = {.type = &argus__v1__resource__descriptor};

    if (!req) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not a RanksRequest");
        return;
    }
    if (query_job_known(ctx, req->job, reply)) {
        if (store_scan_ranks(ctx, req->job, query_collect, &l) < 0) {
            query_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "store read failed");
        } else {
            resp.n_ranks = l.n;
            resp.ranks = (Argus__V1__Resource **)l.items;
            query_reply(reply, &resp.base);
        }
    }
    query_list_free(&l);
    argus__v1__ranks_request__free_unpacked(req, NULL);
}

static void query_stragglers(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__StragglersRequest *req = argus__v1__stragglers_request__unpack(NULL, len, data);
    Argus__V1__StragglersResponse resp = ARGUS__V1__STRAGGLERS_RESPONSE__INIT;
    struct query_list l = {.type = &argus__v1__report__descriptor, .limit = 10000};

    if (!req) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not a StragglersRequest");
        return;
    }
    if (query_job_known(ctx, req->job, reply)) {
        if (store_scan_reports(ctx, req->job, req->from_unix_ns, req->to_unix_ns, query_collect,
                               &l) < 0) {
            query_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "store read failed");
        } else {
            resp.n_reports = l.n;
            resp.reports = (Argus__V1__Report **)l.items;
            query_reply(reply, &resp.base);
        }
    }
    query_list_free(&l);
    argus__v1__stragglers_request__free_unpacked(req, NULL);
}

static void query_report(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__ReportRequest *req = argus__v1__report_request__unpack(NULL, len, data);
    Argus__V1__ReportResponse resp = ARGUS__V1__REPORT_RESPONSE__INIT;
    struct query_list l = {.type = &argus__v1__report__descriptor, .limit = 1};
    int r;

    if (!req || !req->id[0]) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "request needs a report id");
        goto out;
    }
    r = store_get_report(ctx, req->id, query_collect, &l);
    if (r == -ENOENT || (r == 0 && l.n == 0)) {
        query_fail(reply, TRANSPORT_NOT_FOUND, "no report '%.200s'", req->id);
    } else if (r < 0) {
        query_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "store read failed");
    } else {
        resp.report = (Argus__V1__Report *)l.items[0];
        query_reply(reply, &resp.base);
    }
out:
    query_list_free(&l);
    if (req)
        argus__v1__report_request__free_unpacked(req, NULL);
}

/* The cells of a heatmap query, growing parallel arrays. */
struct query_cells {
    uint32_t *ranks;
    uint64_t *steps, *values;
    size_t n, cap;
    bool step_time, truncated;
};

static int query_cell(void *ctx, const void *value, size_t len)
{
    struct query_cells *c = ctx;
    struct heatmap_wire_cell cell;

    if (c->n == QUERY_MAX_HEATMAP_CELLS) {
        c->truncated = true;
        return 1;
    }
    if (heatmap_wire_cell(value, len, &cell) < 0)
        return 0; /* a record we cannot read is skipped, as in Steps */
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4096;
        uint32_t *r = realloc(c->ranks, cap * sizeof(*r));
        if (r)
            c->ranks = r;
        uint64_t *s = r ? realloc(c->steps, cap * sizeof(*s)) : NULL;
        if (s)
            c->steps = s;
        uint64_t *v = s ? realloc(c->values, cap * sizeof(*v)) : NULL;
        if (!v)
            return -ENOMEM;
        c->values = v;
        c->cap = cap;
    }
    c->ranks[c->n] = cell.rank;
    c->steps[c->n] = cell.step;
    c->values[c->n++] = c->step_time ? cell.duration_ns : cell.own_ns;
    return 0;
}

static void query_heatmap(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__HeatmapRequest *req = argus__v1__heatmap_request__unpack(NULL, len, data);
    Argus__V1__HeatmapResponse resp = ARGUS__V1__HEATMAP_RESPONSE__INIT;
    struct query_cells c = {0};

    if (!req) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not a HeatmapRequest");
        return;
    }
    c.step_time = req->step_time;
    if (query_job_known(ctx, req->job, reply)) {
        if (store_scan_steps(ctx, req->job, -1, req->from_step, req->to_step, query_cell, &c) < 0) {
            query_fail(reply, TRANSPORT_UNAVAILABLE, "%s", "store read failed");
        } else {
            resp.n_ranks = resp.n_steps = resp.n_values_ns = c.n;
            resp.ranks = c.ranks;
            resp.steps = c.steps;
            resp.values_ns = c.values;
            resp.truncated = c.truncated;
            query_reply(reply, &resp.base);
        }
    }
    free(c.ranks);
    free(c.steps);
    free(c.values);
    argus__v1__heatmap_request__free_unpacked(req, NULL);
}

/* The captured windows of a report as Chrome-trace JSON (trace_json.h). */
static void query_trace(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__TraceRequest *req = argus__v1__trace_request__unpack(NULL, len, data);
    Argus__V1__TraceResponse resp = ARGUS__V1__TRACE_RESPONSE__INIT;
    char *json = NULL, err[320];
    uint32_t windows = 0;
    size_t n = 0;
    int r;

    if (!req || !req->report_id || !*req->report_id) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not a TraceRequest with a report id");
    } else {
        r = trace_json_export(ctx, req->report_id, req->rank, &json, &n, &windows, err,
                              sizeof(err));
        if (r < 0) {
            query_fail(reply, r == -ENOENT ? TRANSPORT_NOT_FOUND : TRANSPORT_UNAVAILABLE, "%s",
                       err);
        } else {
            resp.chrome_json.data = (uint8_t *)json;
            resp.chrome_json.len = n;
            resp.windows = windows;
            query_reply(reply, &resp.base);
        }
    }
    free(json);
    if (req)
        argus__v1__trace_request__free_unpacked(req, NULL);
}

/* The transport_unary_fn of handler fn: callers need the query role (a
 * certificate with OU=query; in plaintext anyone). */
#define QUERY_AUTHORIZED(fn, path)                                                                 \
    static void fn##_authorized(void *ctx, const struct transport_peer *peer, const void *data,    \
                                size_t len, struct transport_reply *reply)                         \
    {                                                                                              \
        if (transport_peer_may(peer, TLS_ROLE_QUERY, path, reply))                                 \
            fn(ctx, data, len, reply);                                                             \
    }

QUERY_AUTHORIZED(query_jobs, RPC_QUERY_JOBS)
QUERY_AUTHORIZED(query_steps, RPC_QUERY_STEPS)
QUERY_AUTHORIZED(query_ranks, RPC_QUERY_RANKS)
QUERY_AUTHORIZED(query_stragglers, RPC_QUERY_STRAGGLERS)
QUERY_AUTHORIZED(query_report, RPC_QUERY_REPORT)
QUERY_AUTHORIZED(query_heatmap, RPC_QUERY_HEATMAP)
QUERY_AUTHORIZED(query_trace, RPC_QUERY_TRACE)

int query_register(struct transport_server *t, struct store *store)
{
    int r = 0;

    r |= transport_add_unary(t, RPC_QUERY_JOBS, query_jobs_authorized, store);
    r |= transport_add_unary(t, RPC_QUERY_STEPS, query_steps_authorized, store);
    r |= transport_add_unary(t, RPC_QUERY_RANKS, query_ranks_authorized, store);
    r |= transport_add_unary(t, RPC_QUERY_STRAGGLERS, query_stragglers_authorized, store);
    r |= transport_add_unary(t, RPC_QUERY_REPORT, query_report_authorized, store);
    r |= transport_add_unary(t, RPC_QUERY_HEATMAP, query_heatmap_authorized, store);
    r |= transport_add_unary(t, RPC_QUERY_TRACE, query_trace_authorized, store);
    return r ? -EINVAL : 0;
}

/* ---- Query/Alerts ------------------------------------------------------------- */

struct query_alerts {
    const Argus__V1__AlertsRequest *req;
    Argus__V1__Alert **items;
    size_t n, cap;
    bool failed;
};

/* A copy of a as a message (strings malloc'd; query_alert_free). */
static Argus__V1__Alert *query_alert_of(const struct alert *a)
{
    Argus__V1__Alert *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    argus__v1__alert__init(m);
    m->id = strdup(a->id);
    m->job = strdup(a->job);
    m->subject = strdup(a->subject);
    m->node = strdup(a->node);
    m->group = strdup(a->group);
    m->where = strdup(a->where);
    m->summary = strdup(a->summary);
    m->evidence = strdup(a->evidence);
    m->report_id = strdup(a->report_id);
    m->ranks = malloc((a->n_ranks ? a->n_ranks : 1) * sizeof(*m->ranks));
    if (m->ranks) {
        memcpy(m->ranks, a->ranks, a->n_ranks * sizeof(*m->ranks));
        m->n_ranks = a->n_ranks;
    }
    m->cause = (Argus__V1__Cause)a->cause;
    m->level = (Argus__V1__Level)a->level;
    m->status = (Argus__V1__AlertStatus)(a->status + 1); /* enum alert_status + 1 */
    m->gpu = a->gpu;
    m->score = a->score;
    m->created_unix_ns = a->created_ns;
    m->firing_unix_ns = a->firing_ns;
    m->resolved_unix_ns = a->resolved_ns;
    return m;
}

static void query_alert_free(Argus__V1__Alert *m)
{
    if (!m)
        return;
    free(m->id);
    free(m->job);
    free(m->subject);
    free(m->node);
    free(m->group);
    free(m->where);
    free(m->summary);
    free(m->evidence);
    free(m->report_id);
    free(m->ranks);
    free(m);
}

static bool query_alert_complete(const Argus__V1__Alert *m)
{
    return m->id && m->job && m->subject && m->node && m->group && m->where && m->summary &&
           m->evidence && m->report_id && m->ranks;
}

/* alert_change_fn: the alerts the request asks for, copied. */
static void query_alert_one(void *ctx, const struct alert *a, bool forgotten)
{
    struct query_alerts *q = ctx;
    Argus__V1__Alert *m;

    if ((a->status == ALERT_RESOLVED && !q->req->include_resolved) ||
        (q->req->job[0] && strcmp(q->req->job, a->job) != 0) || q->failed)
        return;
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 32;
        Argus__V1__Alert **grown = realloc(q->items, cap * sizeof(*grown));
        if (!grown) {
            q->failed = true;
            return;
        }
        q->items = grown;
        q->cap = cap;
    }
    m = query_alert_of(a);
    if (!m || !query_alert_complete(m)) {
        query_alert_free(m);
        q->failed = true;
        return;
    }
    q->items[q->n++] = m;
}

static void query_alerts(void *ctx, const void *data, size_t len, struct transport_reply *reply)
{
    Argus__V1__AlertsRequest *req = argus__v1__alerts_request__unpack(NULL, len, data);
    Argus__V1__AlertsResponse resp = ARGUS__V1__ALERTS_RESPONSE__INIT;
    struct query_alerts q = {.req = req};

    if (!req) {
        query_fail(reply, TRANSPORT_INVALID_ARGUMENT, "%s", "not an AlertsRequest");
        return;
    }
    alerts_foreach(ctx, query_alert_one, &q);
    if (q.failed) {
        query_fail(reply, TRANSPORT_INTERNAL, "%s", "out of memory");
    } else {
        resp.n_alerts = q.n;
        resp.alerts = q.items;
        query_reply(reply, &resp.base);
    }
    for (size_t i = 0; i < q.n; i++)
        query_alert_free(q.items[i]);
    free(q.items);
    argus__v1__alerts_request__free_unpacked(req, NULL);
}

QUERY_AUTHORIZED(query_alerts, RPC_QUERY_ALERTS)

int query_register_alerts(struct transport_server *t, struct alerts *a)
{
    return transport_add_unary(t, RPC_QUERY_ALERTS, query_alerts_authorized, a) ? -EINVAL : 0;
}
