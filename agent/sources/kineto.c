/* Kineto (Chrome-trace JSON) reader: zlib for the bytes, json-c for the
 * tree, then one walk over traceEvents. See kineto.h. */
#include "agent/sources/kineto.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <zlib.h>

#include "common/array.h"
#include "common/name_id.h"

#define KINETO_READ_CHUNK (1u << 20)
#define KINETO_JSON_DEPTH 64
#define KINETO_STEP_PREFIX "ProfilerStep#"

/* The state of one parse: the trace being built and two hash tables. */
struct parse {
    const struct kineto_limits *lim;
    struct kineto_trace *t;
    size_t cap_spans, cap_steps, cap_names;
    uint32_t *name_slots; /* name index + 1, 0 = empty */
    size_t name_mask;
    uint64_t *launch_corr, *launch_ts; /* correlation -> host launch ts, 0 = empty */
    size_t launch_mask, n_launch;
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
    free(t->names);
    free(t->name_ids);
    free(t->spans);
    free(t->steps);
    free(t);
}

/* A JSON number as ns from microseconds; false when absent, not a number,
 * negative or out of range. Integers are exact; doubles keep ns precision. */
static bool get_us_as_ns(json_object *obj, const char *key, uint64_t *ns)
{
    json_object *v;
    double d, whole;

    if (!json_object_object_get_ex(obj, key, &v))
        return false;
    if (json_object_is_type(v, json_type_int)) {
        int64_t us = json_object_get_int64(v);

        if (us < 0 || us > INT64_MAX / 1000)
            return false;
        *ns = (uint64_t)us * 1000;
        return true;
    }
    if (!json_object_is_type(v, json_type_double))
        return false;
    d = json_object_get_double(v);
    if (!(d >= 0 && d < 9.2e15))
        return false;
    whole = floor(d);
    *ns = (uint64_t)whole * 1000 + (uint64_t)llround((d - whole) * 1000);
    return true;
}

static int64_t get_int(json_object *obj, const char *key, int64_t absent)
{
    json_object *v;

    if (!obj || !json_object_object_get_ex(obj, key, &v))
        return absent;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return absent;
    return json_object_get_int64(v);
}

static const char *get_str(json_object *obj, const char *key, size_t *len)
{
    json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

/* Rehash the name table to slots entries. */
static int names_rehash(struct parse *p, size_t slots)
{
    uint32_t *t = calloc(slots, sizeof(*t));

    if (!t)
        return -ENOMEM;
    free(p->name_slots);
    p->name_slots = t;
    p->name_mask = slots - 1;
    for (size_t i = 0; i < p->t->n_names; i++) {
        size_t h = p->t->name_ids[i] & p->name_mask;

        while (t[h])
            h = (h + 1) & p->name_mask;
        t[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* The index of name (len bytes) in the trace's names, added when new. */
static int names_intern(struct parse *p, const char *name, size_t len, uint32_t *index)
{
    struct kineto_trace *t = p->t;
    uint64_t id = name_id_n(name, len);
    size_t h = id & p->name_mask;
    char *copy;

    for (; p->name_slots[h]; h = (h + 1) & p->name_mask) {
        uint32_t i = p->name_slots[h] - 1;

        if (t->name_ids[i] == id && strlen(t->names[i]) == len && !memcmp(t->names[i], name, len)) {
            *index = i;
            return 0;
        }
    }
    if (t->n_names >= p->lim->max_names)
        return fail(p, -E2BIG, "more than %zu distinct kernel names", p->lim->max_names);
    if (t->n_names == p->cap_names) {
        size_t cap = p->cap_names;
        uint64_t *ids = realloc(t->name_ids, (cap ? cap * 2 : 64) * sizeof(*ids));

        if (!ids)
            return fail(p, -ENOMEM, "out of memory");
        t->name_ids = ids;
        if (array_reserve((void **)&t->names, &cap, t->n_names + 1, sizeof(char *)) < 0)
            return fail(p, -ENOMEM, "out of memory");
        p->cap_names = cap;
    }
    copy = strndup(name, len);
    if (!copy)
        return fail(p, -ENOMEM, "out of memory");
    t->names[t->n_names] = copy;
    t->name_ids[t->n_names] = id;
    p->name_slots[h] = (uint32_t)++t->n_names;
    *index = (uint32_t)t->n_names - 1;
    if (t->n_names * 2 > p->name_mask + 1 && names_rehash(p, (p->name_mask + 1) * 2) < 0)
        return fail(p, -ENOMEM, "out of memory");
    return 0;
}

static int add_kernel(struct parse *p, json_object *ev)
{
    struct kineto_trace *t = p->t;
    struct kineto_span sp = {.device = -1, .step = -1};
    json_object *args = NULL;
    const char *name;
    size_t len = 0;
    int err;

    name = get_str(ev, "name", &len);
    if (!name || !get_us_as_ns(ev, "ts", &sp.ts_ns) || !get_us_as_ns(ev, "dur", &sp.dur_ns)) {
        t->skipped++;
        return 0;
    }
    if (len > p->lim->max_name_len)
        return fail(p, -E2BIG, "kernel name of %zu bytes (limit %zu)", len, p->lim->max_name_len);
    err = names_intern(p, name, len, &sp.name);
    if (err < 0)
        return err;
    if (json_object_object_get_ex(ev, "args", &args) &&
        json_object_is_type(args, json_type_object)) {
        sp.stream = (uint32_t)get_int(args, "stream", 0);
        sp.device = (int32_t)get_int(args, "device", -1);
        sp.correlation = (uint64_t)get_int(args, "correlation", 0);
    }
    if (array_reserve((void **)&t->spans, &p->cap_spans, t->n_spans + 1, sizeof(sp)) < 0)
        return fail(p, -ENOMEM, "out of memory");
    t->spans[t->n_spans++] = sp;
    return 0;
}

static int add_step(struct parse *p, json_object *ev, const char *name)
{
    struct kineto_trace *t = p->t;
    struct kineto_step st;
    char *end;

    errno = 0;
    st.number = strtoull(name + strlen(KINETO_STEP_PREFIX), &end, 10);
    if (errno || *end || end == name + strlen(KINETO_STEP_PREFIX) ||
        !get_us_as_ns(ev, "ts", &st.ts_ns) || !get_us_as_ns(ev, "dur", &st.dur_ns))
        return 0;
    if (array_reserve((void **)&t->steps, &p->cap_steps, t->n_steps + 1, sizeof(st)) < 0)
        return fail(p, -ENOMEM, "out of memory");
    t->steps[t->n_steps++] = st;
    return 0;
}

/* Remember a runtime/driver call's host start by correlation id. */
static int add_launch(struct parse *p, json_object *ev)
{
    json_object *args;
    uint64_t ts, corr;
    size_t h;

    if (!json_object_object_get_ex(ev, "args", &args) || !get_us_as_ns(ev, "ts", &ts))
        return 0;
    corr = (uint64_t)get_int(args, "correlation", 0);
    if (!corr)
        return 0;
    for (h = (corr * 0x9e3779b97f4a7c15ULL >> 20) & p->launch_mask; p->launch_corr[h];
         h = (h + 1) & p->launch_mask)
        if (p->launch_corr[h] == corr)
            return 0;
    p->launch_corr[h] = corr;
    p->launch_ts[h] = ts;
    p->n_launch++;
    return 0;
}

static bool launch_find(const struct parse *p, uint64_t corr, uint64_t *ts)
{
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

/* Put every kernel into the step that holds its launch (or its start). */
static void assign_steps(struct parse *p)
{
    struct kineto_trace *t = p->t;

    if (t->n_steps > 1)
        qsort(t->steps, t->n_steps, sizeof(*t->steps), step_cmp);
    for (size_t i = 0; i < t->n_spans; i++) {
        struct kineto_span *sp = &t->spans[i];
        uint64_t at = sp->ts_ns;
        size_t lo = 0, hi = t->n_steps;

        if (sp->correlation)
            launch_find(p, sp->correlation, &at);
        while (lo < hi) { /* first step starting after at */
            size_t mid = lo + (hi - lo) / 2;

            if (t->steps[mid].ts_ns <= at)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && at < t->steps[lo - 1].ts_ns + t->steps[lo - 1].dur_ns)
            sp->step = (int32_t)(lo - 1);
    }
}

/* One traceEvents entry. */
static int add_event(struct parse *p, json_object *ev)
{
    const char *cat, *name, *ph;
    size_t cat_len = 0, name_len = 0, ph_len = 0;

    if (!json_object_is_type(ev, json_type_object))
        return 0;
    cat = get_str(ev, "cat", &cat_len);
    ph = get_str(ev, "ph", &ph_len);
    if (!cat || !ph || strcmp(ph, "X") != 0)
        return 0;
    if (!strcmp(cat, "kernel"))
        return add_kernel(p, ev);
    if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver"))
        return add_launch(p, ev);
    name = get_str(ev, "name", &name_len);
    if (name && (!strcmp(cat, "user_annotation") || !strcmp(cat, "cpu_op")) &&
        !strncmp(name, KINETO_STEP_PREFIX, strlen(KINETO_STEP_PREFIX)))
        return add_step(p, ev, name);
    return 0;
}

/* Walk the parsed document into p->t. */
static int walk(struct parse *p, json_object *root)
{
    json_object *events, *info;
    size_t n, slots = 64;
    int err = 0;

    if (!json_object_is_type(root, json_type_object))
        return fail(p, -EBADMSG, "not a Chrome trace: the top level is not a JSON object");
    if (!json_object_object_get_ex(root, "traceEvents", &events) ||
        !json_object_is_type(events, json_type_array))
        return fail(p, -EINVAL, "not a Chrome trace: no traceEvents array");
    n = json_object_array_length(events);
    if (n > p->lim->max_events)
        return fail(p, -E2BIG, "%zu trace events (limit %zu)", n, p->lim->max_events);
    if (json_object_object_get_ex(root, "distributedInfo", &info) &&
        json_object_is_type(info, json_type_object)) {
        p->t->rank = (int32_t)get_int(info, "rank", -1);
        p->t->world_size = (int32_t)get_int(info, "world_size", -1);
    }
    while (slots < 2 * n)
        slots *= 2;
    p->launch_mask = slots - 1;
    p->launch_corr = calloc(slots, sizeof(uint64_t));
    p->launch_ts = calloc(slots, sizeof(uint64_t));
    p->name_mask = 63;
    p->name_slots = calloc(p->name_mask + 1, sizeof(uint32_t));
    if (!p->launch_corr || !p->launch_ts || !p->name_slots)
        return fail(p, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n && err == 0; i++)
        err = add_event(p, json_object_array_get_idx(events, i));
    if (err == 0)
        assign_steps(p);
    return err;
}

int kineto_parse(const char *buf, size_t len, const struct kineto_limits *limits,
                 struct kineto_trace **out, char *err, size_t errlen)
{
    struct kineto_limits defaults;
    struct parse p = {.err = err, .errlen = errlen};
    json_tokener *tok = NULL;
    json_object *root = NULL;
    int rc;

    *out = NULL;
    if (!limits) {
        kineto_limits_default(&defaults);
        limits = &defaults;
    }
    p.lim = limits;
    if (len > limits->max_bytes || len > INT32_MAX) {
        rc = fail(&p, -EFBIG, "%zu bytes of JSON (limit %zu)", len, limits->max_bytes);
        goto out;
    }
    p.t = calloc(1, sizeof(*p.t));
    tok = json_tokener_new_ex(KINETO_JSON_DEPTH);
    if (!p.t || !tok) {
        rc = fail(&p, -ENOMEM, "out of memory");
        goto out;
    }
    p.t->rank = p.t->world_size = -1;
    root = json_tokener_parse_ex(tok, buf, (int)len);
    if (!root || json_tokener_get_error(tok) != json_tokener_success) {
        enum json_tokener_error e = json_tokener_get_error(tok);

        rc = fail(&p, -EBADMSG, "not JSON: %s at byte %zu",
                  e == json_tokener_continue ? "unexpected end of input"
                                             : json_tokener_error_desc(e),
                  json_tokener_get_parse_end(tok));
        goto out;
    }
    rc = walk(&p, root);
out:
    json_object_put(root);
    if (tok)
        json_tokener_free(tok);
    free(p.name_slots);
    free(p.launch_corr);
    free(p.launch_ts);
    if (rc < 0) {
        kineto_free(p.t);
        p.t = NULL;
    }
    *out = p.t;
    return rc;
}

/* The whole file, decompressed when gzip'd (zlib reads plain files as is).
 * *buf is malloc'd (NULL for an empty file). */
static int read_all(const char *path, size_t max, char **buf, size_t *len, char *err, size_t errlen)
{
    struct parse p = {.err = err, .errlen = errlen};
    gzFile f;
    size_t cap = 0, n = 0;
    char *data = NULL;
    int rc = 0, got, zerr;

    errno = 0;
    f = gzopen(path, "rb");
    if (!f)
        return fail(&p, errno ? -errno : -ENOMEM, "%s: cannot open: %s", path,
                    errno ? strerror(errno) : "out of memory");
    do {
        if (n + KINETO_READ_CHUNK > cap) {
            size_t c = cap ? cap * 2 : 4 * KINETO_READ_CHUNK;
            char *tmp = realloc(data, c);

            if (!tmp) {
                rc = fail(&p, -ENOMEM, "out of memory");
                break;
            }
            data = tmp;
            cap = c;
        }
        got = gzread(f, data + n, KINETO_READ_CHUNK);
        if (got < 0)
            rc = fail(&p, -EIO, "%s: read error: %s", path, gzerror(f, &zerr));
        else if ((n += (size_t)got) > max)
            rc = fail(&p, -EFBIG, "%s: more than %zu bytes of JSON", path, max);
    } while (rc == 0 && got > 0);
    gzclose(f);
    if (rc < 0) {
        free(data);
        return rc;
    }
    *buf = data;
    *len = n;
    return 0;
}

int kineto_load(const char *path, const struct kineto_limits *limits, struct kineto_trace **out,
                char *err, size_t errlen)
{
    struct kineto_limits defaults;
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    if (!limits) {
        kineto_limits_default(&defaults);
        limits = &defaults;
    }
    rc = read_all(path, limits->max_bytes, &buf, &len, err, errlen);
    if (rc == 0)
        rc = kineto_parse(buf ? buf : "", len, limits, out, err, errlen);
    free(buf);
    return rc;
}
