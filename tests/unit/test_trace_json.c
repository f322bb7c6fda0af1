/* The drill-down export (collector/trace/trace_json.c) from a real store in
 * a temporary directory: every pid and every pid/tid an event uses has its
 * process_name / thread_name metadata event, and kernel events carry their
 * stream, correlation id and launch shape as args. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "collector/trace/trace_json.h"
#include "tests/unit/store_fixture.h"

static void put_window(struct store *s, const char *id, uint32_t rank, Argus__V1__Span *sp,
                       size_t n)
{
    Argus__V1__TraceWindow w = ARGUS__V1__TRACE_WINDOW__INIT;
    Argus__V1__Span *ptrs[8];
    char err[256];

    for (size_t i = 0; i < n; i++)
        ptrs[i] = &sp[i];
    w.report_id = (char *)id;
    w.job = "j";
    w.rank = rank;
    w.from_unix_ns = T0;
    w.to_unix_ns = T0 + 1000000000ull;
    w.spans = ptrs;
    w.n_spans = n;
    size_t len = argus__v1__trace_window__get_packed_size(&w);
    uint8_t *buf = malloc(len);
    argus__v1__trace_window__pack(&w, buf);
    assert_int_equal(store_put_trace(s, id, rank, buf, len, err, sizeof(err)), 0);
    free(buf);
}

static Argus__V1__Span span(Argus__V1__SpanKind kind, uint32_t stream, uint32_t tid, uint64_t at)
{
    Argus__V1__Span s = ARGUS__V1__SPAN__INIT;

    s.kind = kind;
    s.stream = stream;
    s.tid = tid;
    s.start_unix_ns = T0 + at * 1000;
    s.duration_ns = 500;
    s.name_id = 0x1234;
    return s;
}

/* The metadata event named meta ("thread_name", "process_name") of pid
 * (and tid, when tid >= 0), or NULL. */
static json_object *find_meta(json_object *ev, const char *meta, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
        json_object *e = json_object_array_get_idx(ev, i), *v;
        if (strcmp(json_object_get_string(json_object_object_get(e, "ph")), "M") != 0 ||
            strcmp(json_object_get_string(json_object_object_get(e, "name")), meta) != 0 ||
            json_object_get_int64(json_object_object_get(e, "pid")) != pid)
            continue;
        if (tid < 0 || (json_object_object_get_ex(e, "tid", &v) && json_object_get_int64(v) == tid))
            return e;
    }
    return NULL;
}

static void test_names_and_args(void **state)
{
    struct fix *f = *state;
    Argus__V1__Span a[5] = {
        span(ARGUS__V1__SPAN_KIND__SPAN_KERNEL, 7, 0, 1),
        span(ARGUS__V1__SPAN_KIND__SPAN_KERNEL, 9, 0, 2),
        span(ARGUS__V1__SPAN_KIND__SPAN_PHASE, 0, 4321, 3),
        span(ARGUS__V1__SPAN_KIND__SPAN_COLLECTIVE, 7, 0, 4),
        span(ARGUS__V1__SPAN_KIND__SPAN_STEP, 0, 0, 5),
    };
    Argus__V1__Span b[2] = {span(ARGUS__V1__SPAN_KIND__SPAN_KERNEL, 7, 0, 1),
                            span(ARGUS__V1__SPAN_KIND__SPAN_STEP, 0, 0, 2)}; /* pid 0 tid 0 */
    char *json = NULL, err[256] = "";
    size_t len = 0, kernels = 0, used = 0;
    uint32_t windows = 0;

    a[0].correlation = 42, a[0].value = 0xabc; /* a kernel's launch shape id */
    a[3].value = 1 << 20;
    put_report(f->s, "rep-1", "j", T0);
    put_window(f->s, "rep-1", 3, a, 5);
    put_window(f->s, "rep-1", 0, b, 2); /* rank 0, stream 7: pid 0 */
    assert_int_equal(trace_json_export(f->s, "rep-1", -1, &json, &len, &windows, err, sizeof(err)),
                     0);
    assert_int_equal(windows, 2);
    json_object *root = json_tokener_parse(json), *ev = json_object_object_get(root, "traceEvents");
    assert_non_null(ev);
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
        json_object *e = json_object_array_get_idx(ev, i), *args;
        const char *ph = json_object_get_string(json_object_object_get(e, "ph"));
        if (strcmp(ph, "M") == 0)
            continue;
        int64_t pid = json_object_get_int64(json_object_object_get(e, "pid"));
        int64_t tid = json_object_get_int64(json_object_object_get(e, "tid"));
        used++;
        if (!find_meta(ev, "process_name", pid, -1) || !find_meta(ev, "thread_name", pid, tid))
            fail_msg("pid %lld tid %lld has no process_name or thread_name", (long long)pid,
                     (long long)tid);
        if (strcmp(json_object_get_string(json_object_object_get(e, "cat")), "kernel") != 0)
            continue;
        kernels++;
        assert_true(json_object_object_get_ex(e, "args", &args));
        assert_int_equal(json_object_get_int64(json_object_object_get(args, "stream")), tid);
        if (pid == 3 && tid == 7) {
            assert_int_equal(json_object_get_int64(json_object_object_get(args, "correlation")),
                             42);
            assert_string_equal(json_object_get_string(json_object_object_get(args, "shape")),
                                "0x00000abc");
        }
    }
    assert_int_equal(kernels, 3);
    assert_int_equal(used, 7);
    json_object *m = find_meta(ev, "thread_name", 3, 9);
    assert_string_equal(
        json_object_get_string(json_object_object_get(json_object_object_get(m, "args"), "name")),
        "stream 9");
    m = find_meta(ev, "thread_name", 3, 4321);
    assert_string_equal(
        json_object_get_string(json_object_object_get(json_object_object_get(m, "args"), "name")),
        "thread 4321");
    json_object_put(root);
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_names_and_args, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
