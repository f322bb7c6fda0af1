#include "collector/trace/trace_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "collector/store/store.h"
#include "common/strmap.h"
#include "proto/argus.pb-c.h"

struct trace_json {
    struct store *store;
    const char *job;
    uint64_t from_step, to_step;
    int64_t rank;
    json_object *events, *windows;
    struct strmap names;
    struct strmap named; /* pid/tid pairs named already (trace_json_meta) */
    uint32_t nwindows;
    int rc;
};

/* The name of id in the job's dictionary, or its hex (valid until the next
 * call). */
static const char *trace_json_name(struct trace_json *t, uint64_t id, char *hex, size_t hexlen)
{
    const char *n = strmap_get(&t->names, id);
    char *fresh;

    if (n)
        return n;
    fresh = id ? store_get_name(t->store, t->job, id) : NULL;
    if (fresh) {
        strmap_put(&t->names, id, fresh);
        free(fresh);
        n = strmap_get(&t->names, id);
    }
    if (n)
        return n;
    snprintf(hex, hexlen, "0x%016" PRIx64, id);
    return hex;
}

static json_object *trace_json_event(const char *name, const char *ph, uint32_t pid, uint32_t tid,
                                     uint64_t start_ns, uint64_t dur_ns)
{
    json_object *e = json_object_new_object();

    json_object_object_add(e, "name", json_object_new_string(name));
    json_object_object_add(e, "ph", json_object_new_string(ph));
    json_object_object_add(e, "pid", json_object_new_int64(pid));
    json_object_object_add(e, "tid", json_object_new_int64(tid));
    json_object_object_add(e, "ts", json_object_new_double((double)start_ns / 1e3));
    if (ph[0] == 'X')
        json_object_object_add(e, "dur", json_object_new_double((double)dur_ns / 1e3));
    if (ph[0] == 'i')
        json_object_object_add(e, "s", json_object_new_string("t"));
    return e;
}

/* A metadata event (ph "M") naming process pid (tid < 0) or its thread tid,
 * once per pid and tid. */
static void trace_json_meta(struct trace_json *t, uint32_t pid, int64_t tid, const char *name)
{
    /* + 1: the map keeps no id 0 (rank 0's tid 0) */
    uint64_t key = ((uint64_t)pid << 32 | (tid < 0 ? 1ull << 31 : (uint32_t)tid)) + 1;
    json_object *e, *args;

    if (strmap_get(&t->named, key) || strmap_put(&t->named, key, "") < 0)
        return; /* named already (or no memory to remember it: left unnamed) */
    e = json_object_new_object();
    args = json_object_new_object();
    json_object_object_add(args, "name", json_object_new_string(name));
    json_object_object_add(e, "name",
                           json_object_new_string(tid < 0 ? "process_name" : "thread_name"));
    json_object_object_add(e, "ph", json_object_new_string("M"));
    json_object_object_add(e, "pid", json_object_new_int64(pid));
    if (tid >= 0)
        json_object_object_add(e, "tid", json_object_new_int64(tid));
    json_object_object_add(e, "args", args);
    json_object_array_add(t->events, e);
}

/* The name of the track a span goes on: its stream, else its host thread. */
static void trace_json_track(struct trace_json *t, uint32_t rank, const Argus__V1__Span *s)
{
    char name[48];

    if (s->stream)
        snprintf(name, sizeof(name), "stream %u", s->stream);
    else if (s->tid)
        snprintf(name, sizeof(name), "thread %u", s->tid);
    else
        snprintf(name, sizeof(name), "steps"); /* tid 0, with the ProfilerStep spans */
    trace_json_meta(t, rank, s->stream ? s->stream : s->tid, name);
}

/* The args of a span: its stream; a kernel's correlation id and launch
 * shape; a collective's bytes; a counter's increment. */
static json_object *trace_json_args(const Argus__V1__Span *s, uint32_t kind)
{
    json_object *args = json_object_new_object();
    char shape[16];

    if (s->stream)
        json_object_object_add(args, "stream", json_object_new_int64(s->stream));
    if (s->tid)
        json_object_object_add(args, "tid", json_object_new_int64(s->tid));
    if (kind == ARGUS__V1__SPAN_KIND__SPAN_KERNEL && s->correlation)
        json_object_object_add(args, "correlation", json_object_new_int64(s->correlation));
    if (kind == ARGUS__V1__SPAN_KIND__SPAN_KERNEL && s->value) {
        snprintf(shape, sizeof(shape), "0x%08" PRIx32, (uint32_t)s->value);
        json_object_object_add(args, "shape", json_object_new_string(shape));
    }
    if (kind == ARGUS__V1__SPAN_KIND__SPAN_COUNTER)
        json_object_object_add(args, "value", json_object_new_int64((int64_t)s->value));
    if (kind == ARGUS__V1__SPAN_KIND__SPAN_COLLECTIVE)
        json_object_object_add(args, "bytes", json_object_new_int64((int64_t)s->value));
    return args;
}

static const char *const trace_json_cat[] = {
    "unknown", "kernel", "phase", "phase", "phase", "collective", "counter", "step",
};

static void trace_json_span(struct trace_json *t, uint32_t rank, const Argus__V1__Span *s)
{
    static const char *const ph[] = {"X", "X", "X", "B", "E", "X", "i", "i"};
    uint32_t kind = (uint32_t)s->kind < 8 ? (uint32_t)s->kind : 0;
    uint32_t tid = s->stream ? s->stream : s->tid;
    char hex[24], label[64];
    const char *name = trace_json_name(t, s->name_id, hex, sizeof(hex));
    json_object *e;

    if (kind == ARGUS__V1__SPAN_KIND__SPAN_STEP) {
        snprintf(label, sizeof(label), "step %" PRIu64 " begins", s->value);
        name = label;
    } else if (kind == ARGUS__V1__SPAN_KIND__SPAN_COUNTER) {
        snprintf(label, sizeof(label), "host counter %" PRIu64, s->name_id);
        name = label;
    }
    trace_json_track(t, rank, s);
    e = trace_json_event(name, ph[kind], rank, tid, s->start_unix_ns, s->duration_ns);
    json_object_object_add(e, "cat", json_object_new_string(trace_json_cat[kind]));
    json_object_object_add(e, "args", trace_json_args(s, kind));
    json_object_array_add(t->events, e);
}

/* The rank's step records inside the window, as ProfilerStep#N spans. */
struct trace_json_steps {
    struct trace_json *t;
    const Argus__V1__TraceWindow *w;
};

static int trace_json_step(void *ctx, const void *value, size_t len)
{
    struct trace_json_steps *c = ctx;
    Argus__V1__StepRecord *s = argus__v1__step_record__unpack(NULL, len, value);
    char name[64];

    if (!s)
        return 0;
    if (s->start_unix_ns <= c->w->to_unix_ns &&
        s->start_unix_ns + s->duration_ns >= c->w->from_unix_ns) {
        snprintf(name, sizeof(name), "ProfilerStep#%" PRIu64, s->step);
        trace_json_meta(c->t, s->rank, 0, "steps");
        json_object *e = trace_json_event(name, "X", s->rank, 0, s->start_unix_ns, s->duration_ns);
        json_object_object_add(e, "cat", json_object_new_string("step"));
        json_object_array_add(c->t->events, e);
    }
    argus__v1__step_record__free_unpacked(s, NULL);
    return 0;
}

static void trace_json_summary(struct trace_json *t, const Argus__V1__TraceWindow *w)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "rank", json_object_new_int64(w->rank));
    json_object_object_add(o, "from_unix_ns", json_object_new_int64((int64_t)w->from_unix_ns));
    json_object_object_add(o, "to_unix_ns", json_object_new_int64((int64_t)w->to_unix_ns));
    json_object_object_add(o, "spans", json_object_new_int64((int64_t)w->n_spans));
    json_object_object_add(o, "spans_in_window",
                           json_object_new_int64((int64_t)w->spans_in_window));
    json_object_object_add(o, "error", json_object_new_string(w->error ? w->error : ""));
    json_object_array_add(t->windows, o);
}

static int trace_json_window(void *ctx, const void *value, size_t len)
{
    struct trace_json *t = ctx;
    Argus__V1__TraceWindow *w = argus__v1__trace_window__unpack(NULL, len, value);
    struct trace_json_steps steps = {t, w};
    char name[32];

    if (!w)
        return 0; /* an unreadable window is left out */
    t->nwindows++;
    snprintf(name, sizeof(name), "rank %u", w->rank);
    trace_json_meta(t, w->rank, -1, name);
    trace_json_summary(t, w);
    store_scan_steps(t->store, t->job, w->rank, t->from_step, t->to_step, trace_json_step, &steps);
    for (size_t i = 0; i < w->n_spans; i++)
        trace_json_span(t, w->rank, w->spans[i]);
    argus__v1__trace_window__free_unpacked(w, NULL);
    return 0;
}

/* store_get_report callback: the report's job and step range. */
static int trace_json_report(void *ctx, const void *value, size_t len)
{
    struct trace_json *t = ctx;
    Argus__V1__Report *r = argus__v1__report__unpack(NULL, len, value);

    if (!r)
        return -EBADMSG;
    t->job = strdup(r->job ? r->job : "");
    t->from_step = r->from_step > 2 ? r->from_step - 2 : 0; /* steps around the window too */
    t->to_step = r->to_step + 2;
    argus__v1__report__free_unpacked(r, NULL);
    return t->job ? 0 : -ENOMEM;
}

static int trace_json_render(struct trace_json *t, const char *report_id, char **json, size_t *len)
{
    json_object *root = json_object_new_object(), *other = json_object_new_object();
    const char *s;
    int rc;

    t->events = json_object_new_array();
    t->windows = json_object_new_array();
    rc = store_scan_traces(t->store, report_id, t->rank, trace_json_window, t);
    json_object_object_add(root, "traceEvents", t->events);
    json_object_object_add(root, "displayTimeUnit", json_object_new_string("ms"));
    json_object_object_add(other, "report", json_object_new_string(report_id));
    json_object_object_add(other, "job", json_object_new_string(t->job));
    json_object_object_add(other, "windows", t->windows);
    json_object_object_add(root, "otherData", other);
    s = rc < 0 ? NULL : json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    if (s) {
        *len = strlen(s);
        *json = strdup(s);
        rc = *json ? 0 : -ENOMEM;
    }
    json_object_put(root);
    return rc < 0 ? rc : 0;
}

int trace_json_export(struct store *store, const char *report_id, int64_t rank, char **json,
                      size_t *len, uint32_t *windows, char *err, size_t errlen)
{
    struct trace_json t = {.store = store, .rank = rank};
    int rc = store_get_report(store, report_id, trace_json_report, &t);

    if (rc == -ENOENT)
        snprintf(err, errlen, "no report %s", report_id);
    else if (rc < 0)
        snprintf(err, errlen, "store read failed: %s", strerror(-rc));
    if (rc == 0) {
        rc = trace_json_render(&t, report_id, json, len);
        if (rc < 0)
            snprintf(err, errlen, "trace export failed: %s", strerror(-rc));
    }
    *windows = t.nwindows;
    strmap_clear(&t.names);
    strmap_clear(&t.named);
    free((char *)t.job);
    return rc;
}

bool trace_json_http(struct store *store, const char *path, struct http_response *resp)
{
    size_t n = strlen(path), len = 0;
    char id[256], err[320];
    uint32_t windows;
    char *json = NULL;
    int rc;

    if (strncmp(path, "/trace/", 7) != 0 || n < 13 || strcmp(path + n - 5, ".json") != 0)
        return false;
    if (n - 12 >= sizeof(id)) {
        snprintf(err, sizeof(err), "report id too long\n");
        rc = -ENOENT;
    } else {
        memcpy(id, path + 7, n - 12);
        id[n - 12] = '\0';
        rc = trace_json_export(store, id, -1, &json, &len, &windows, err, sizeof(err) - 1);
        strcat(err, "\n");
    }
    resp->status = rc == 0 ? 200 : rc == -ENOENT ? 404 : 500;
    resp->content_type = rc == 0 ? "application/json" : "text/plain";
    resp->body = rc == 0 ? json : strdup(err);
    resp->len = rc == 0 ? len : strlen(err);
    return true;
}
