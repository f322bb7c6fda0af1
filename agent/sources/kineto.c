/* Kineto (Chrome-trace JSON) reader: the text streamed through the pull
 * tokenizer of kineto_json.h, each traceEvents entry read into a small
 * struct kineto_event and kept only when it is a kernel, a launch, a step or a
 * phase annotation. See kineto.h. */
#include "agent/sources/kineto.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sources/kineto_event.h"
#include "agent/sources/kineto_json.h"
#include "common/array.h"
#include "common/name_id.h"
#include "common/work_id.h"

#define KINETO_STEP_PREFIX "ProfilerStep#"

/* A name table: distinct strings with their ids and an open-addressing
 * index (entry + 1, 0 = empty). Moved into the trace at the end. */
struct names {
    char **names;
    uint64_t *ids;
    size_t n, cap;
    uint32_t *slots;
    size_t mask;
};

/* The state of one parse: the trace being built and its tables. */
struct parse {
    const struct kineto_limits *lim;
    struct kineto_trace *t;
    struct kjson *j;
    size_t cap_spans, cap_steps, cap_annotations;
    struct names kernels, phases;
    struct kineto_event ev;
    uint64_t *launch_corr, *launch_ts; /* correlation -> host launch ts, 0 = empty */
    size_t launch_mask, n_launch;
    size_t n_events;
    bool in_events, seen_events;
    char *err;
    size_t errlen;
};

static int fail(struct parse *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parse *p, int code, const char *fmt, ...)
{
    va_list ap;

    if (p->errlen) {
        va_start(ap, fmt);
        vsnprintf(p->err, p->errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

void kineto_limits_default(struct kineto_limits *l)
{
    l->max_bytes = KINETO_DEFAULT_MAX_BYTES;
    l->max_events = KINETO_DEFAULT_MAX_EVENTS;
    l->max_names = KINETO_DEFAULT_MAX_NAMES;
    l->max_name_len = KINETO_DEFAULT_MAX_NAME_LEN;
}

void kineto_free(struct kineto_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_names; i++)
        free(t->names[i]);
    for (size_t i = 0; i < t->n_phase_names; i++)
        free(t->phase_names[i]);
    free(t->names);
    free(t->phase_names);
    free(t->name_ids);
    free(t->spans);
    free(t->steps);
    free(t->annotations);
    free(t);
}

/* Rehash table n to slots entries. */
static int names_rehash(struct names *n, size_t slots)
{
    uint32_t *t = calloc(slots, sizeof(*t));

    if (!t)
        return -ENOMEM;
    free(n->slots);
    n->slots = t;
    n->mask = slots - 1;
    for (size_t i = 0; i < n->n; i++) {
        size_t h = n->ids[i] & n->mask;

        while (t[h])
            h = (h + 1) & n->mask;
        t[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* The index of name (len bytes) in n, added when new; what names the table
 * in the limit's error. */
static int names_intern(struct parse *p, struct names *n, const char *what, const char *name,
                        size_t len, uint32_t *index)
{
    uint64_t id = name_id_n(name, len);
    size_t h;
    char *copy;

    if (!n->slots && names_rehash(n, 64) < 0)
        return fail(p, -ENOMEM, "out of memory");
    for (h = id & n->mask; n->slots[h]; h = (h + 1) & n->mask) {
        uint32_t i = n->slots[h] - 1;

        if (n->ids[i] == id && strlen(n->names[i]) == len && !memcmp(n->names[i], name, len)) {
            *index = i;
            return 0;
        }
    }
    if (n->n >= p->lim->max_names)
        return fail(p, -E2BIG, "more than %zu distinct %s names", p->lim->max_names, what);
    if (n->n == n->cap) {
        size_t cap = n->cap;
        uint64_t *ids = realloc(n->ids, (cap ? cap * 2 : 64) * sizeof(*ids));

        if (!ids)
            return fail(p, -ENOMEM, "out of memory");
        n->ids = ids;
        if (array_reserve((void **)&n->names, &cap, n->n + 1, sizeof(char *)) < 0)
            return fail(p, -ENOMEM, "out of memory");
        n->cap = cap;
    }
    copy = strndup(name, len);
    if (!copy)
        return fail(p, -ENOMEM, "out of memory");
    n->names[n->n] = copy;
    n->ids[n->n] = id;
    n->slots[h] = (uint32_t)++n->n;
    *index = (uint32_t)n->n - 1;
    if (n->n * 2 > n->mask + 1 && names_rehash(n, (n->mask + 1) * 2) < 0)
        return fail(p, -ENOMEM, "out of memory");
    return 0;
}

static int add_kernel(struct parse *p, const struct kineto_event *ev)
{
    struct kineto_trace *t = p->t;
    struct kineto_span sp = {.device = -1, .step = -1};
    int err;

    if (!ev->has_name || !ev->ts_ok || !ev->dur_ok) {
        t->skipped++;
        return 0;
    }
    sp.ts_ns = ev->ts_ns;
    sp.dur_ns = ev->dur_ns;
    if (ev->name_len > p->lim->max_name_len)
        return fail(p, -E2BIG, "kernel name of %zu bytes (limit %zu)", ev->name_len,
                    p->lim->max_name_len);
    err = names_intern(p, &p->kernels, "kernel", ev->name, ev->name_len, &sp.name);
    if (err < 0)
        return err;
    if (ev->has_args) {
        sp.stream = (uint32_t)ev->stream;
        sp.device = (int32_t)ev->device;
        sp.correlation = (uint64_t)ev->correlation;
        if (ev->has_grid && ev->has_block)
            sp.shape = work_id_shape(ev->grid[0], ev->grid[1], ev->grid[2], ev->block[0],
                                     ev->block[1], ev->block[2]);
    }
    if (array_reserve((void **)&t->spans, &p->cap_spans, t->n_spans + 1, sizeof(sp)) < 0)
        return fail(p, -ENOMEM, "out of memory");
    t->spans[t->n_spans++] = sp;
    return 0;
}

static int add_step(struct parse *p, const struct kineto_event *ev)
{
    struct kineto_trace *t = p->t;
    const char *digits = ev->name + strlen(KINETO_STEP_PREFIX);
    struct kineto_step st;
    char *end;

    errno = 0;
    st.number = strtoull(digits, &end, 10);
    if (errno || *end || end == digits || *digits == '-' || !ev->ts_ok || !ev->dur_ok)
        return 0;
    st.ts_ns = ev->ts_ns;
    st.dur_ns = ev->dur_ns;
    if (array_reserve((void **)&t->steps, &p->cap_steps, t->n_steps + 1, sizeof(st)) < 0)
        return fail(p, -ENOMEM, "out of memory");
    t->steps[t->n_steps++] = st;
    return 0;
}

/* The phase an annotation names: "## NAME ##" gives NAME; forward, backward
 * and optimizer give themselves; NULL otherwise. */
static const char *phase_of(const char *name, size_t len, size_t *plen)
{
    if (len > 6 && !strncmp(name, "## ", 3) && !strcmp(name + len - 3, " ##")) {
        *plen = len - 6;
        return name + 3;
    }
    if (!strcmp(name, "forward") || !strcmp(name, "backward") || !strcmp(name, "optimizer")) {
        *plen = len;
        return name;
    }
    return NULL;
}

static int add_annotation(struct parse *p, const struct kineto_event *ev, bool gpu)
{
    struct kineto_trace *t = p->t;
    struct kineto_annotation a = {.step = -1, .gpu = gpu};
    const char *phase;
    size_t plen;
    int err;

    if (!ev->ts_ok || !ev->dur_ok || ev->name_len > p->lim->max_name_len)
        return 0;
    phase = phase_of(ev->name, ev->name_len, &plen);
    if (!phase || plen == 0)
        return 0;
    if ((err = names_intern(p, &p->phases, "phase", phase, plen, &a.name)) < 0)
        return err;
    a.ts_ns = ev->ts_ns;
    a.dur_ns = ev->dur_ns;
    if (array_reserve((void **)&t->annotations, &p->cap_annotations, t->n_annotations + 1,
                      sizeof(a)) < 0)
        return fail(p, -ENOMEM, "out of memory");
    t->annotations[t->n_annotations++] = a;
    return 0;
}

/* Grow the launch table to slots entries. */
static int launch_rehash(struct parse *p, size_t slots)
{
    uint64_t *corr = calloc(slots, sizeof(*corr)), *ts = calloc(slots, sizeof(*ts));

    if (!corr || !ts) {
        free(corr);
        free(ts);
        return -ENOMEM;
    }
    for (size_t i = 0; p->launch_corr && i <= p->launch_mask; i++) {
        size_t h;

        if (!p->launch_corr[i])
            continue;
        for (h = (p->launch_corr[i] * 0x9e3779b97f4a7c15ULL >> 20) & (slots - 1); corr[h];
             h = (h + 1) & (slots - 1))
            ;
        corr[h] = p->launch_corr[i];
        ts[h] = p->launch_ts[i];
    }
    free(p->launch_corr);
    free(p->launch_ts);
    p->launch_corr = corr;
    p->launch_ts = ts;
    p->launch_mask = slots - 1;
    return 0;
}

/* Remember a runtime/driver call's host start by correlation id. */
static int add_launch(struct parse *p, const struct kineto_event *ev)
{
    uint64_t corr = (uint64_t)ev->correlation;
    size_t h;

    if (!ev->has_args || !ev->ts_ok || !corr)
        return 0;
    if ((!p->launch_corr || (p->n_launch + 1) * 2 > p->launch_mask + 1) &&
        launch_rehash(p, p->launch_corr ? (p->launch_mask + 1) * 2 : 1024) < 0)
        return fail(p, -ENOMEM, "out of memory");
    for (h = (corr * 0x9e3779b97f4a7c15ULL >> 20) & p->launch_mask; p->launch_corr[h];
         h = (h + 1) & p->launch_mask)
        if (p->launch_corr[h] == corr)
            return 0;
    p->launch_corr[h] = corr;
    p->launch_ts[h] = ev->ts_ns;
    p->n_launch++;
    return 0;
}

static bool launch_find(const struct parse *p, uint64_t corr, uint64_t *ts)
{
    if (!p->launch_corr)
        return false;
    for (size_t h = (corr * 0x9e3779b97f4a7c15ULL >> 20) & p->launch_mask; p->launch_corr[h];
         h = (h + 1) & p->launch_mask) {
        if (p->launch_corr[h] == corr) {
            *ts = p->launch_ts[h];
            return true;
        }
    }
    return false;
}

static int step_cmp(const void *a, const void *b)
{
    const struct kineto_step *x = a, *y = b;

    return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* The step whose range holds host time at, or -1. */
static int32_t step_at(const struct kineto_trace *t, uint64_t at)
{
    size_t lo = 0, hi = t->n_steps;

    while (lo < hi) { /* first step starting after at */
        size_t mid = lo + (hi - lo) / 2;

        if (t->steps[mid].ts_ns <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && at < t->steps[lo - 1].ts_ns + t->steps[lo - 1].dur_ns)
        return (int32_t)(lo - 1);
    return -1;
}

/* Mark the annotations no other one of their kind and step contains. */
static void mark_top(struct kineto_trace *t)
{
    for (size_t i = 0; i < t->n_annotations; i++) {
        struct kineto_annotation *a = &t->annotations[i];

        a->top = a->step >= 0;
        for (size_t k = 0; k < t->n_annotations && a->top; k++) {
            const struct kineto_annotation *b = &t->annotations[k];

            if (k == i || b->step != a->step || b->gpu != a->gpu)
                continue;
            if (b->ts_ns <= a->ts_ns && a->ts_ns + a->dur_ns <= b->ts_ns + b->dur_ns &&
                (b->dur_ns > a->dur_ns || (b->dur_ns == a->dur_ns && k < i)))
                a->top = false;
        }
    }
}

/* Put every kernel into the step that holds its launch (or its start), and
 * every annotation into the step that holds its start. */
static void assign_steps(struct parse *p)
{
    struct kineto_trace *t = p->t;

    if (t->n_steps > 1)
        qsort(t->steps, t->n_steps, sizeof(*t->steps), step_cmp);
    for (size_t i = 0; i < t->n_spans; i++) {
        struct kineto_span *sp = &t->spans[i];
        uint64_t at = sp->ts_ns;

        if (sp->correlation)
            launch_find(p, sp->correlation, &at);
        sp->step = step_at(t, at);
    }
    for (size_t i = 0; i < t->n_annotations; i++)
        t->annotations[i].step = step_at(t, t->annotations[i].ts_ns);
    mark_top(t);
}

/* Where step index s (not a or b) moves when steps a and b (-1 = none) go. */
static int32_t step_moved(int32_t s, int32_t a, int32_t b)
{
    return s - (a >= 0 && s > a) - (b >= 0 && s > b);
}

/* Drop steps a and b (indices, -1 = none) with their kernels and
 * annotations; the steps after them move down. */
static void drop_steps(struct kineto_trace *t, int32_t a, int32_t b)
{
    size_t n = 0;

    for (int32_t i = 0; i < (int32_t)t->n_steps; i++) {
        if (i != a && i != b) {
            t->steps[n++] = t->steps[i];
            continue;
        }
        if (!t->dropped_steps++ || t->steps[i].number < t->dropped_first)
            t->dropped_first = t->steps[i].number;
        t->dropped_last =
            t->steps[i].number > t->dropped_last ? t->steps[i].number : t->dropped_last;
    }
    t->n_steps = n;
    n = 0;
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].step < 0 || (t->spans[i].step != a && t->spans[i].step != b)) {
            t->spans[n] = t->spans[i];
            t->spans[n++].step = t->spans[i].step < 0 ? -1 : step_moved(t->spans[i].step, a, b);
        }
    t->dropped_spans = t->n_spans - n;
    t->n_spans = n;
    n = 0;
    for (size_t i = 0; i < t->n_annotations; i++)
        if (t->annotations[i].step < 0 ||
            (t->annotations[i].step != a && t->annotations[i].step != b)) {
            t->annotations[n] = t->annotations[i];
            t->annotations[n++].step =
                t->annotations[i].step < 0 ? -1 : step_moved(t->annotations[i].step, a, b);
        }
    t->dropped_annotations = t->n_annotations - n;
    t->n_annotations = n;
}

/* A trace read only in part (see kineto_read): the last step, and the step
 * of the last kernel read (the cut fell inside its run of kernels), go;
 * p->err says what went, after the reading error. */
static void drop_partial(struct parse *p)
{
    struct kineto_trace *t = p->t;
    int32_t last = (int32_t)t->n_steps - 1, cut = t->n_spans ? t->spans[t->n_spans - 1].step : -1;
    size_t used;
    char range[64];

    if (last < 0)
        return;
    drop_steps(t, last, cut == last ? -1 : cut);
    used = p->errlen ? strnlen(p->err, p->errlen) : 0;
    if (t->dropped_first == t->dropped_last)
        snprintf(range, sizeof(range), "step %" PRIu64, t->dropped_first);
    else
        snprintf(range, sizeof(range), "steps %" PRIu64 " and %" PRIu64, t->dropped_first,
                 t->dropped_last);
    if (used + 1 < p->errlen)
        snprintf(p->err + used, p->errlen - used,
                 "; dropped the partial %s (%zu kernels, %zu annotations)%s", range,
                 t->dropped_spans, t->dropped_annotations,
                 t->n_steps ? "; the steps kept may still miss kernels the file held after the cut"
                            : "");
}

/* One traceEvents entry. */
static int add_event(struct parse *p, const struct kineto_event *ev)
{
    const char *cat = ev->cat;

    if (!ev->has_cat || !ev->has_ph || strcmp(ev->ph, "X") != 0)
        return 0;
    if (!strcmp(cat, "kernel"))
        return add_kernel(p, ev);
    if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver"))
        return add_launch(p, ev);
    if (!ev->has_name)
        return 0;
    if ((!strcmp(cat, "user_annotation") || !strcmp(cat, "cpu_op")) &&
        !strncmp(ev->name, KINETO_STEP_PREFIX, strlen(KINETO_STEP_PREFIX)))
        return add_step(p, ev);
    if (!strcmp(cat, "user_annotation") || !strcmp(cat, "gpu_user_annotation"))
        return add_annotation(p, ev, cat[0] == 'g');
    return 0;
}

/* The traceEvents array, entry by entry. */
static int read_events(struct parse *p)
{
    struct kjson *j = p->j;
    bool first = true;
    int r;

    if (kjson_peek(j) != '[')
        return kjson_skip(j);
    if ((r = kjson_enter(j, '[')) < 0)
        return r;
    p->seen_events = p->in_events = true;
    while ((r = kjson_array_next(j, &first)) > 0) {
        if (++p->n_events > p->lim->max_events)
            return fail(p, -E2BIG, "at least %zu trace events (limit %zu)", p->n_events,
                        p->lim->max_events);
        if ((r = kineto_event_read(j, &p->ev)) < 0)
            return r;
        if ((r = add_event(p, &p->ev)) < 0)
            return r;
    }
    p->in_events = false;
    return r;
}

static int read_distributed_info(struct parse *p)
{
    struct kjson *j = p->j;
    bool first = true;
    int64_t v;
    int r;

    if (kjson_peek(j) != '{')
        return kjson_skip(j);
    if ((r = kjson_enter(j, '{')) < 0)
        return r;
    while ((r = kjson_object_next(j, &first)) > 0) {
        bool set = false;

        if (!strcmp(j->str, "rank") || !strcmp(j->str, "world_size")) {
            int32_t *dst = j->str[0] == 'r' ? &p->t->rank : &p->t->world_size;

            if ((r = kineto_event_read_int(j, &v, &set)) < 0)
                return r;
            if (set)
                *dst = (int32_t)v;
        } else if ((r = kjson_skip(j)) < 0) {
            return r;
        }
    }
    return r;
}

/* The whole document: the top-level object, member by member. */
static int read_document(struct parse *p)
{
    struct kjson *j = p->j;
    bool first = true;
    int c = kjson_peek(j), r;
    int64_t base = 0;

    if (c == '[')
        return fail(p, -EBADMSG, "not a Chrome trace: the top level is not a JSON object");
    if ((r = kjson_enter(j, '{')) < 0)
        return r;
    while ((r = kjson_object_next(j, &first)) > 0) {
        if (!strcmp(j->str, "traceEvents"))
            r = read_events(p);
        else if (!strcmp(j->str, "distributedInfo"))
            r = read_distributed_info(p);
        else if (!strcmp(j->str, "baseTimeNanoseconds") &&
                 (r = kineto_event_read_int(j, &base, NULL)) == 0)
            p->t->base_ns = base > 0 ? (uint64_t)base : 0;
        else if (strcmp(j->str, "baseTimeNanoseconds") != 0)
            r = kjson_skip(j);
        if (r < 0)
            return r;
    }
    if (r < 0)
        return r;
    if ((c = kjson_peek(j)) >= 0)
        return kjson_fail(j, -EBADMSG,
                          "not JSON: '%c' after the end of the document at byte %" PRIu64,
                          c >= 0x20 && c < 0x7f ? c : '?', kjson_offset(j));
    if (j->error)
        return j->error;
    if (!p->seen_events)
        return fail(p, -EINVAL, "not a Chrome trace: no traceEvents array");
    return 0;
}

/* Read the document from j into a new trace. keep_partial: on a reading
 * error inside traceEvents, keep what was read (see kineto_read). */
static int parse_stream(struct kjson *j, const struct kineto_limits *limits, bool keep_partial,
                        struct kineto_trace **out, char *err, size_t errlen)
{
    struct parse p = {.lim = limits, .j = j, .err = err, .errlen = errlen};
    int rc;

    p.t = calloc(1, sizeof(*p.t));
    p.ev.name = malloc(limits->max_name_len + 2);
    if (!p.t || !p.ev.name) {
        rc = fail(&p, -ENOMEM, "out of memory");
        goto out;
    }
    p.t->rank = p.t->world_size = -1;
    p.t->complete = true;
    rc = read_document(&p);
    if (rc < 0 && j->error == rc) /* a reading error: its sentence names the offset */
        fail(&p, rc, "%s", j->message);
    if (rc < 0 && !(keep_partial && j->error == rc && p.seen_events))
        goto out;
    if (rc < 0) {
        p.t->complete = false;
        p.t->error_offset = kjson_offset(j);
    }
    assign_steps(&p);
    if (!p.t->complete)
        drop_partial(&p);
out:
    if (p.t) { /* the tables move into the trace (freed with it) */
        p.t->names = p.kernels.names;
        p.t->name_ids = p.kernels.ids;
        p.t->n_names = p.kernels.n;
        p.t->phase_names = p.phases.names;
        p.t->n_phase_names = p.phases.n;
        free(p.phases.ids);
    }
    free(p.kernels.slots);
    free(p.phases.slots);
    free(p.launch_corr);
    free(p.launch_ts);
    free(p.ev.name);
    if (rc < 0 && !(keep_partial && p.t && !p.t->complete)) {
        kineto_free(p.t);
        p.t = NULL;
    }
    *out = p.t;
    return rc;
}

int kineto_parse(const char *buf, size_t len, const struct kineto_limits *limits,
                 struct kineto_trace **out, char *err, size_t errlen)
{
    struct kineto_limits defaults;
    struct kjson j;
    int rc;

    *out = NULL;
    if (!limits) {
        kineto_limits_default(&defaults);
        limits = &defaults;
    }
    if (len > limits->max_bytes) {
        if (errlen)
            snprintf(err, errlen, "%zu bytes of JSON (limit %zu)", len, limits->max_bytes);
        return -EFBIG;
    }
    rc = kjson_open_memory(&j, buf, len, limits->max_name_len + 1);
    if (rc == 0)
        rc = parse_stream(&j, limits, false, out, err, errlen);
    else if (errlen)
        snprintf(err, errlen, "%s", j.message);
    kjson_close(&j);
    return rc;
}

static int load_file(const char *path, const struct kineto_limits *limits, bool keep_partial,
                     struct kineto_trace **out, char *err, size_t errlen)
{
    struct kineto_limits defaults;
    struct kjson j;
    int rc;

    *out = NULL;
    if (!limits) {
        kineto_limits_default(&defaults);
        limits = &defaults;
    }
    rc = kjson_open_file(&j, path, limits->max_bytes, limits->max_name_len + 1);
    if (rc == 0)
        rc = parse_stream(&j, limits, keep_partial, out, err, errlen);
    else if (errlen)
        snprintf(err, errlen, "%s", j.message);
    kjson_close(&j);
    return rc;
}

int kineto_load(const char *path, const struct kineto_limits *limits, struct kineto_trace **out,
                char *err, size_t errlen)
{
    return load_file(path, limits, false, out, err, errlen);
}

int kineto_read(const char *path, const struct kineto_limits *limits, struct kineto_trace **out,
                char *err, size_t errlen)
{
    return load_file(path, limits, true, out, err, errlen);
}
