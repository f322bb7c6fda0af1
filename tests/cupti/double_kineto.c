/* Kineto (Chrome trace JSON, gzip'd) -> CUDA 13 CUPTI records for the test
 * double: "kernel" -> CUpti_ActivityKernel10, "gpu_memcpy" -> Memcpy6,
 * "gpu_memset" -> Memset4, "cuda_runtime" -> CUpti_ActivityAPI,
 * "user_annotation" -> a CUpti_ActivityMarker2 start and end pair. Times are
 * trace microseconds turned into ns; the player shifts them to now. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <zlib.h>

#include "tests/cupti/double_rec.h"

static char *gz_slurp(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    size_t cap = 1 << 20, n = 0;
    char *buf = NULL, *tmp;
    int r;

    if (!f)
        return NULL;
    while ((tmp = realloc(buf, cap + 1))) {
        buf = tmp;
        r = gzread(f, buf + n, (unsigned)(cap - n));
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == cap)
            cap *= 2;
    }
    gzclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static int64_t jint(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static uint64_t jns(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v)
               ? (uint64_t)llround(json_object_get_double(v) * 1000.0)
               : 0;
}

/* args[key] = [x, y, z] into d (left 0 when absent or short). */
static void jdims(json_object *o, const char *key, int32_t d[3])
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
        return;
    for (size_t i = 0; i < 3 && i < json_object_array_length(v); i++)
        d[i] = (int32_t)json_object_get_int64(json_object_array_get_idx(v, i));
}

static uint8_t copy_kind(const char *name)
{
    if (strstr(name, "HtoD"))
        return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    if (strstr(name, "DtoH"))
        return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    if (strstr(name, "DtoD"))
        return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
}

/* One trace event -> up to two records at r. Returns how many. */
static int kineto_event(json_object *e, struct rec *r, uint32_t *marker_id)
{
    json_object *v, *args = NULL;
    const char *cat, *name;
    uint64_t ts = jns(e, "ts"), end = ts + jns(e, "dur");

    if (!json_object_object_get_ex(e, "cat", &v) || !(cat = json_object_get_string(v)))
        return 0;
    if (!json_object_object_get_ex(e, "name", &v) || !(name = json_object_get_string(v)))
        return 0;
    json_object_object_get_ex(e, "args", &args);
    memset(r, 0, sizeof(*r));
    r->emit_ns = end;
    if (strcmp(cat, "kernel") == 0) {
        r->kind = r->u.k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r->size = sizeof(r->u.k);
        r->u.k.start = ts, r->u.k.end = end;
        r->u.k.deviceId = (uint32_t)jint(args, "device");
        r->u.k.contextId = (uint32_t)jint(args, "context");
        r->u.k.streamId = (uint32_t)jint(args, "stream");
        r->u.k.correlationId = (uint32_t)jint(args, "correlation");
        int32_t grid[3] = {0}, block[3] = {0};
        jdims(args, "grid", grid);
        jdims(args, "block", block);
        r->u.k.gridX = grid[0], r->u.k.gridY = grid[1], r->u.k.gridZ = grid[2];
        r->u.k.blockX = block[0], r->u.k.blockY = block[1], r->u.k.blockZ = block[2];
        r->u.k.name = strdup(name);
    } else if (strcmp(cat, "gpu_memcpy") == 0) {
        r->kind = r->u.c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r->size = sizeof(r->u.c);
        r->u.c.start = ts, r->u.c.end = end;
        r->u.c.copyKind = copy_kind(name);
        r->u.c.bytes = (uint64_t)jint(args, "bytes");
        r->u.c.streamId = (uint32_t)jint(args, "stream");
        r->u.c.correlationId = (uint32_t)jint(args, "correlation");
    } else if (strcmp(cat, "gpu_memset") == 0) {
        r->kind = r->u.s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r->size = sizeof(r->u.s);
        r->u.s.start = ts, r->u.s.end = end;
        r->u.s.bytes = (uint64_t)jint(args, "bytes");
        r->u.s.streamId = (uint32_t)jint(args, "stream");
        r->u.s.correlationId = (uint32_t)jint(args, "correlation");
    } else if (strcmp(cat, "cuda_runtime") == 0) {
        r->kind = r->u.a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
        r->size = sizeof(r->u.a);
        r->u.a.start = ts, r->u.a.end = end;
        r->u.a.cbid = (CUpti_CallbackId)jint(args, "cbid");
        r->u.a.processId = (uint32_t)jint(e, "pid");
        r->u.a.threadId = (uint32_t)jint(e, "tid");
        r->u.a.correlationId = (uint32_t)jint(args, "correlation");
    } else if (strcmp(cat, "user_annotation") == 0) {
        for (int i = 0; i < 2; i++) {
            r[i].kind = r[i].u.m.kind = CUPTI_ACTIVITY_KIND_MARKER;
            r[i].size = sizeof(r[i].u.m);
            r[i].u.m.id = *marker_id;
            r[i].u.m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
            r[i].u.m.objectId.pt.processId = (uint32_t)jint(e, "pid");
            r[i].u.m.objectId.pt.threadId = (uint32_t)jint(e, "tid");
        }
        (*marker_id)++;
        r[0].emit_ns = r[0].u.m.timestamp = ts;
        r[0].u.m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
        r[0].u.m.name = strdup(name);
        r[0].u.m.domain = "";
        r[1].emit_ns = r[1].u.m.timestamp = end;
        r[1].u.m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
        return 2;
    } else {
        return 0;
    }
    return 1;
}

static int rec_cmp(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;

    if (x->emit_ns != y->emit_ns)
        return x->emit_ns < y->emit_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq; /* qsort is not stable */
}

int kineto_load(const char *path, struct rec **out, size_t *n)
{
    size_t len, cnt = 0, nev;
    char *text = gz_slurp(path, &len);
    json_object *root, *evs;
    struct rec *recs;
    uint32_t marker_id = 1;

    if (!text)
        return -ENOENT;
    root = json_tokener_parse(text);
    free(text);
    if (!root || !json_object_object_get_ex(root, "traceEvents", &evs)) {
        json_object_put(root);
        return -EINVAL;
    }
    nev = json_object_array_length(evs);
    recs = calloc(nev * 2 + 1, sizeof(*recs));
    if (!recs) {
        json_object_put(root);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nev; i++) {
        int k = kineto_event(json_object_array_get_idx(evs, i), &recs[cnt], &marker_id);
        for (int j = 0; j < k; j++, cnt++)
            recs[cnt].seq = (uint32_t)cnt;
    }
    json_object_put(root);
    qsort(recs, cnt, sizeof(*recs), rec_cmp);
    *out = recs;
    *n = cnt;
    return (int)cnt;
}
