/* CUDA 13 activity records: hand-built buffers walk through the REAL
 * cuptiActivityGetNextRecord (libcupti.so.13 parses without a GPU), and each
 * record translates (agent/cupti/records.c) into the right span. Also the
 * ring helpers: names across the wrap, phase-name classification. */
#if __has_include(<cupti.h>)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agent/cupti/records.c"

typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);

static next_fn real_next(void)
{
    void *h = dlopen("/usr/local/cuda/lib64/libcupti.so.13", RTLD_NOW | RTLD_LOCAL);

    if (!h)
        h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    return h ? (next_fn)dlsym(h, "cuptiActivityGetNextRecord") : NULL;
}

static size_t put(uint8_t *buf, size_t off, const void *rec, size_t size)
{
    memcpy(buf + off, rec, size);
    return off + ((size + 7) & ~(size_t)7);
}

static void test_real_parser_walks_hand_built_buffer(void **state)
{
    static _Alignas(8) uint8_t buf[8192];
    next_fn next = real_next();
    CUpti_ActivityKernel10 k = {0};
    CUpti_ActivityAPI a = {0};
    CUpti_ActivityMarker2 m = {0};
    CUpti_ActivityMemcpy6 c = {0};
    CUpti_ActivityMemset4 s = {0};
    CUpti_Activity *rec = NULL;
    struct lib_record r;
    size_t off = 0;
    int n = 0, kernels = 0;
    CUptiResult res;

    if (!next) {
        printf("skip: no libcupti.so.13 (/usr/local/cuda/lib64)\n");
        skip();
    }
    for (int i = 0; i < 3; i++) {
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = 1000 + (uint64_t)i * 100;
        k.end = k.start + 50 + (uint64_t)i;
        k.streamId = 7 + (uint32_t)i;
        k.correlationId = 100 + (uint32_t)i;
        k.name = i == 2 ? "ampere_sgemm_128x64_tn" : "vectorAdd";
        k.gridX = 64 << i, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
        off = put(buf, off, &k, sizeof(k));
    }
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = 900, a.end = 950, a.threadId = 4242, a.correlationId = 100;
    off = put(buf, off, &a, sizeof(a));
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
    m.timestamp = 800, m.id = 5, m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.threadId = 4242, m.name = "ProfilerStep#12";
    off = put(buf, off, &m, sizeof(m));
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END, m.timestamp = 2000, m.name = NULL;
    off = put(buf, off, &m, sizeof(m));
    c.kind = CUPTI_ACTIVITY_KIND_MEMCPY, c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    c.start = 3000, c.end = 3400, c.streamId = 9, c.correlationId = 200, c.bytes = 4096;
    off = put(buf, off, &c, sizeof(c));
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET, s.start = 5000, s.end = 5010, s.streamId = 3;
    s.correlationId = 201;
    off = put(buf, off, &s, sizeof(s));

    while ((res = next(buf, off, &rec)) == CUPTI_SUCCESS) {
        assert_int_equal(records_translate(rec, &r), 1);
        switch (n) {
        case 0:
        case 1:
        case 2:
            assert_int_equal(r.span.kind, CUPTI_SPAN_KERNEL);
            assert_int_equal(r.span.start_ns, 1000 + n * 100);
            assert_int_equal(r.span.dur_ns, 50 + n);
            assert_int_equal(r.span.stream, 7 + n);
            assert_int_equal(r.span.correlation, 100 + n);
            assert_string_equal(r.name, n == 2 ? "ampere_sgemm_128x64_tn" : "vectorAdd");
            assert_true(r.name_stable);
            /* the launch shape, what KernelGroup.work_id sums */
            assert_int_equal(r.span.aux, work_id_shape(64u << n, 1, 1, 256, 1, 1));
            kernels++;
            break;
        case 3:
            assert_int_equal(r.span.kind, CUPTI_SPAN_API);
            assert_int_equal(r.span.stream, 4242);
            assert_int_equal(r.span.correlation, 100);
            assert_int_equal(r.span.aux, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
            break;
        case 4:
            assert_int_equal(r.span.kind, CUPTI_SPAN_MARKER);
            assert_string_equal(r.name, "ProfilerStep#12");
            assert_int_equal(r.span.stream, 4242);
            assert_int_equal(r.span.aux, 5);
            break;
        case 5:
            assert_int_equal(r.span.kind, CUPTI_SPAN_RANGE_END);
            assert_int_equal(r.span.start_ns, 2000);
            assert_int_equal(r.span.aux, 5);
            break;
        case 6:
            assert_int_equal(r.span.kind, CUPTI_SPAN_MEMCPY);
            assert_string_equal(r.name, "Memcpy HtoD");
            assert_int_equal(r.span.dur_ns, 400);
            assert_int_equal(r.span.stream, 9);
            break;
        case 7:
            assert_int_equal(r.span.kind, CUPTI_SPAN_MEMSET);
            assert_int_equal(r.span.dur_ns, 10);
            assert_int_equal(r.span.correlation, 201);
            break;
        }
        n++;
    }
    assert_int_equal(res, CUPTI_ERROR_MAX_LIMIT_REACHED);
    assert_int_equal(n, 8);
    assert_int_equal(kernels, 3);
}

static void test_translate_skips_other_kinds(void **state)
{
    CUpti_ActivityMarker2 m = {.kind = CUPTI_ACTIVITY_KIND_MARKER,
                               .flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS,
                               .name = "mark"};
    CUpti_Activity other = {.kind = CUPTI_ACTIVITY_KIND_NVLINK};
    CUpti_ActivityKernel10 k = {
        .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, .start = 10, .end = 5};
    struct lib_record r;

    assert_int_equal(records_translate((CUpti_Activity *)&m, &r), 0);
    assert_int_equal(records_translate(&other, &r), 0);
    assert_int_equal(records_translate((CUpti_Activity *)&k, &r), 1);
    assert_int_equal(r.span.dur_ns, 0); /* end before start: no negative duration */
    assert_string_equal(r.name, "unknown_kernel");
    assert_false(r.name_stable);
}

static void test_ring_names_wrap(void **state)
{
    size_t bytes = cupti_ring_bytes(64);
    struct cupti_ring_header *h = calloc(1, bytes);
    char name[300], out[CUPTI_RING_NAME_MAX + 1];

    h->slots = 64;
    for (size_t i = 0; i < sizeof(name) - 1; i++)
        name[i] = (char)('a' + i % 26);
    name[sizeof(name) - 1] = '\0';
    /* 299 bytes = 8 string slots, starting 3 before the end of the ring */
    assert_int_equal(cupti_ring_name_slots(299), 1 + 8);
    cupti_ring_put_bytes(h, 61, name, 299);
    cupti_ring_get_bytes(h, 61, out, 299);
    assert_string_equal(out, name);
    free(h);
}

static void test_phase_names(void **state)
{
    assert_true(cupti_ring_is_phase("ProfilerStep#551"));
    assert_true(cupti_ring_is_phase("forward"));
    assert_true(cupti_ring_is_phase("## backward ##"));
    assert_true(cupti_ring_is_phase("optimizer"));
    assert_true(cupti_ring_is_phase("step"));
    assert_false(cupti_ring_is_phase("## data_load ##"));
    assert_false(cupti_ring_is_phase("forwarder"));
    assert_false(cupti_ring_is_phase("nccl:all_reduce"));
    assert_true(cupti_ring_is_step("ProfilerStep#1"));
    assert_true(cupti_ring_is_step("## step ##"));
    assert_false(cupti_ring_is_step("forward"));
    assert_string_equal(records_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "Memcpy DtoH");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_parser_walks_hand_built_buffer),
        cmocka_unit_test(test_translate_skips_other_kinds),
        cmocka_unit_test(test_ring_names_wrap),
        cmocka_unit_test(test_phase_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
#include <stdio.h>
int main(void)
{
    printf("skip: no CUDA headers (cupti.h)\n");
    return 77;
}
#endif
