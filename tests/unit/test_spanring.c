/* The span ring (agent/spans/spanring.h) and the agent's set of rings
 * (spans.h): chunks wrap, the age and the byte cap drop the oldest chunks
 * (counted), a window returns exactly the spans overlapping it, a corrupt
 * chunk is refused, a capture packs a TraceWindow in real time, every field
 * of a span comes back exactly, and what the ring holds is what it counts,
 * a few bytes a kernel span. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <malloc.h>
#include <math.h>

#include "agent/spans/spanring.h"
#include "agent/spans/spans.h"
#include "common/clock.h"
#include "tests/lib/rng.h"

#define MS NSEC_PER_MSEC

static struct spanring_span span_at(uint64_t start, uint64_t dur, uint64_t name)
{
    return (struct spanring_span){.start_ns = start,
                                  .duration_ns = dur,
                                  .name_id = name,
                                  .kind = ARGUS__V1__SPAN_KIND__SPAN_KERNEL,
                                  .stream = 7};
}

struct got {
    uint64_t n, first, last, names;
};

static int count_span(void *ctx, const struct spanring_span *s)
{
    struct got *g = ctx;

    if (!g->n)
        g->first = s->start_ns;
    g->last = s->start_ns;
    g->names += s->name_id;
    g->n++;
    return 0;
}

/* Spans 1 ms apart, each 0.5 ms long, starting at 1 s. */
static void add_n(struct spanring *r, uint64_t from, uint64_t n)
{
    for (uint64_t i = from; i < from + n; i++) {
        struct spanring_span s = span_at(NSEC_PER_SEC + i * MS, MS / 2, i);
        assert_int_equal(spanring_add(r, &s), 0);
    }
}

static void test_window_across_chunks(void **state)
{
    struct spanring *r =
        spanring_new(&(struct spanring_options){NSEC_PER_SEC * 100, NSEC_PER_SEC * 3600});
    struct spanring_stats st;
    struct got g = {0};

    (void)state;
    assert_non_null(r);
    add_n(r, 0, 3 * SPANRING_CHUNK_SPANS + 10); /* three sealed chunks, ten open spans */
    spanring_get_stats(r, &st);
    assert_int_equal(st.chunks, 3);
    assert_int_equal(st.spans, 3 * SPANRING_CHUNK_SPANS + 10);
    /* [1000 ms, 2100 ms] after the 1 s base: spans 1000..2100 inclusive (the
     * span starting 0.5 ms before from overlaps from by its end: 999 ends at
     * 999.5, so not) */
    assert_int_equal(
        spanring_window(r, NSEC_PER_SEC + 1000 * MS, NSEC_PER_SEC + 2100 * MS, count_span, &g), 0);
    assert_int_equal(g.n, 1101);
    assert_int_equal(g.first, NSEC_PER_SEC + 1000 * MS);
    assert_int_equal(g.last, NSEC_PER_SEC + 2100 * MS);
    /* the open chunk is part of the window too */
    g = (struct got){0};
    spanring_window(r, NSEC_PER_SEC + 3 * SPANRING_CHUNK_SPANS * MS, UINT64_MAX, count_span, &g);
    assert_int_equal(g.n, 10);
    spanring_free(r);
}

static void test_age_drops_oldest(void **state)
{
    struct spanring *r = spanring_new(&(struct spanring_options){NSEC_PER_SEC, 2 * NSEC_PER_SEC});
    struct spanring_stats st;
    struct got g = {0};

    (void)state;
    add_n(r, 0, 10000); /* 10 s of spans, keep 2 s */
    spanring_get_stats(r, &st);
    assert_true(st.dropped_age > 0);
    assert_int_equal(st.spans, 10000);
    /* what is held starts no earlier than 2 s (+ a chunk) before the newest */
    assert_true(st.oldest_ns + 2 * NSEC_PER_SEC + 2 * SPANRING_CHUNK_SPANS * MS >=
                NSEC_PER_SEC + 9999 * MS);
    assert_true(st.oldest_ns > NSEC_PER_SEC + 5000 * MS);
    spanring_window(r, 0, UINT64_MAX, count_span, &g);
    assert_int_equal(g.n + st.dropped_age, 10000);
    assert_int_equal(g.last, NSEC_PER_SEC + 9999 * MS);
    /* a quiet ring ages from the tick */
    spanring_tick(r, NSEC_PER_SEC * 60);
    spanring_get_stats(r, &st);
    assert_int_equal(st.chunks, 0);
    assert_int_equal(st.dropped_age, 10000);
    spanring_free(r);
}

static void test_corrupt_chunk_refused(void **state)
{
    struct spanring *r =
        spanring_new(&(struct spanring_options){NSEC_PER_SEC * 100, NSEC_PER_SEC * 3600});
    struct spanring_stats st;
    struct got g = {0};
    size_t len;
    uint8_t *b;

    (void)state;
    add_n(r, 0, 2 * SPANRING_CHUNK_SPANS);
    b = spanring_chunk_bytes(r, 0, &len);
    assert_non_null(b);
    assert_true(len > 16);
    b[len / 2] ^= 0x5a;
    assert_int_equal(spanring_window(r, 0, UINT64_MAX, count_span, &g), 1);
    assert_int_equal(g.n, SPANRING_CHUNK_SPANS); /* the second chunk only */
    assert_int_equal(g.first, NSEC_PER_SEC + SPANRING_CHUNK_SPANS * MS);
    spanring_get_stats(r, &st);
    assert_int_equal(st.corrupt_chunks, 1);
    assert_null(spanring_chunk_bytes(r, 2, &len));
    spanring_free(r);
}

static void test_drop_oldest_for_cap(void **state)
{
    struct spanring *r =
        spanring_new(&(struct spanring_options){NSEC_PER_SEC * 100, NSEC_PER_SEC * 3600});
    struct spanring_stats st;
    uint64_t first = 0;

    (void)state;
    add_n(r, 0, 2 * SPANRING_CHUNK_SPANS);
    first = spanring_oldest_chunk_ns(r);
    assert_int_equal(first, NSEC_PER_SEC);
    assert_true(spanring_drop_oldest(r) > 0);
    assert_int_equal(spanring_oldest_chunk_ns(r), NSEC_PER_SEC + SPANRING_CHUNK_SPANS * MS);
    spanring_get_stats(r, &st);
    assert_int_equal(st.dropped_cap, SPANRING_CHUNK_SPANS);
    assert_true(spanring_drop_oldest(r) > 0);
    assert_int_equal(spanring_drop_oldest(r), 0);
    assert_int_equal(spanring_oldest_chunk_ns(r), UINT64_MAX);
    spanring_free(r);
}

static void kernel_event(struct spans *s, uint32_t pid, uint64_t ts, uint64_t name)
{
    struct agent_event ev = {.kind = AGENT_EVENT_KERNEL, .pid = pid, .ts_ns = ts};

    ev.kernel.name_id = name;
    ev.kernel.duration_ns = MS / 2;
    ev.kernel.stream = 3;
    ev.kernel.correlation = (uint32_t)name * 2;
    ev.kernel.shape = 0xbeef;
    spans_event(s, &ev);
}

/* The agent's set: a cap shared by two ranks keeps the newest chunks, and a
 * capture is packed with real times, for the right rank only. */
static void test_spans_cap_and_capture(void **state)
{
    static struct clock_offset clock = {.n = 1, .at[0] = {0, (int64_t)(1000 * NSEC_PER_SEC)}};
    struct spans_options o = {.ring_bytes = 64 * 1024,
                              .keep_ns = 3600 * NSEC_PER_SEC,
                              .chunk_ns = NSEC_PER_SEC,
                              .capture_max = 100,
                              .clock = &clock};
    struct spans *s = spans_new(&o);
    Argus__V1__CaptureRequest req = ARGUS__V1__CAPTURE_REQUEST__INIT;
    Argus__V1__TraceWindow *w;
    struct spans_stats st;
    uint8_t *buf;
    size_t len;
    uint64_t now = 0;

    (void)state;
    spans_track(s, 11, "job", 0);
    spans_track(s, 12, "job", 1);
    for (uint64_t i = 0; i < 40000; i++)
        kernel_event(s, 11 + (uint32_t)(i & 1), NSEC_PER_SEC + i * MS, 100 + i);
    spans_tick(s, NSEC_PER_SEC + 40000 * MS);
    spans_get_stats(s, &st);
    assert_int_equal(st.rings, 2);
    assert_true(st.bytes <= o.ring_bytes);
    assert_true(st.dropped_cap > 0);
    /* rank 1, the last 50 ms in real time: 25 of its spans */
    req.job = "job";
    req.rank = 1;
    req.report_id = "r1";
    req.from_unix_ns = 1000 * NSEC_PER_SEC + NSEC_PER_SEC + 39950 * MS;
    req.to_unix_ns = 1000 * NSEC_PER_SEC + NSEC_PER_SEC + 39999 * MS;
    assert_int_equal(spans_capture(s, &req, ++now, &buf, &len), 0);
    w = argus__v1__trace_window__unpack(NULL, len, buf);
    assert_non_null(w);
    assert_int_equal(w->n_spans, 25);
    assert_int_equal(w->spans_in_window, 25);
    assert_string_equal(w->error, "");
    for (size_t i = 0; i < w->n_spans; i++) {
        assert_true(w->spans[i]->start_unix_ns >= req.from_unix_ns - MS);
        assert_true(w->spans[i]->start_unix_ns <= req.to_unix_ns);
        assert_int_equal(w->spans[i]->name_id & 1, 1); /* odd i: rank 1 (pid 12) */
        assert_int_equal(w->spans[i]->stream, 3);
        assert_int_equal(w->spans[i]->correlation, w->spans[i]->name_id * 2);
        assert_int_equal(w->spans[i]->value, 0xbeef); /* a kernel's launch shape */
    }
    argus__v1__trace_window__free_unpacked(w, NULL);
    free(buf);
    /* aged out (before the oldest chunk kept) and unknown rank say so */
    req.report_id = "r2";
    req.from_unix_ns = 1000 * NSEC_PER_SEC;
    req.to_unix_ns = 1000 * NSEC_PER_SEC + NSEC_PER_SEC;
    assert_int_equal(spans_capture(s, &req, ++now, &buf, &len), 0);
    w = argus__v1__trace_window__unpack(NULL, len, buf);
    assert_int_equal(w->n_spans, 0);
    assert_non_null(strstr(w->error, "aged out"));
    argus__v1__trace_window__free_unpacked(w, NULL);
    free(buf);
    /* the same request again within SPANS_REPEAT_NS is not answered twice */
    assert_int_equal(spans_capture(s, &req, ++now, &buf, &len), -EALREADY);
    req.rank = 9;
    assert_int_equal(spans_capture(s, &req, ++now, &buf, &len), 0);
    w = argus__v1__trace_window__unpack(NULL, len, buf);
    assert_non_null(strstr(w->error, "no span ring"));
    argus__v1__trace_window__free_unpacked(w, NULL);
    free(buf);
    spans_free(s);
}

/* Rings are the ranks': a process that is not one gets none; a rank that
 * exited keeps its ring until its spans age out (and is the first to make
 * room when all 256 slots are taken), so a job's later ranks still get one. */
static void test_spans_ranks_only(void **state)
{
    static struct clock_offset clock = {.n = 1};
    struct spans_options o = {.ring_bytes = 1 << 20,
                              .keep_ns = 10 * NSEC_PER_SEC,
                              .chunk_ns = NSEC_PER_SEC,
                              .capture_max = 10,
                              .clock = &clock};
    struct spans *s = spans_new(&o);
    struct spans_stats st;

    (void)state;
    kernel_event(s, 5, NSEC_PER_SEC, 1); /* not a rank */
    spans_get_stats(s, &st);
    assert_int_equal(st.rings, 0);
    assert_int_equal(st.spans, 0);
    for (uint32_t pid = 100; pid < 100 + 256; pid++) {
        spans_track(s, pid, "job", pid - 100);
        kernel_event(s, pid, NSEC_PER_SEC, pid);
    }
    spans_track(s, 999, "job", 999); /* every slot taken, nobody exited: none */
    kernel_event(s, 999, NSEC_PER_SEC, 1);
    spans_get_stats(s, &st);
    assert_int_equal(st.rings, 256);
    assert_int_equal(st.spans, 256);
    spans_untrack(s, 101, 2 * NSEC_PER_SEC);
    spans_untrack(s, 100, 3 * NSEC_PER_SEC);
    spans_track(s, 1000, "job", 1000); /* 101 exited first: its ring goes */
    kernel_event(s, 1000, 4 * NSEC_PER_SEC, 1);
    spans_get_stats(s, &st);
    assert_int_equal(st.rings, 256);
    assert_int_equal(st.spans, 257);  /* the freed ring's spans still counted */
    spans_tick(s, 12 * NSEC_PER_SEC); /* 100 still within keep_ns of its exit */
    spans_get_stats(s, &st);
    assert_int_equal(st.rings, 256);
    spans_tick(s, 14 * NSEC_PER_SEC);
    spans_get_stats(s, &st);
    assert_int_equal(st.rings, 255);
    assert_int_equal(st.spans, 257);
    spans_free(s);
}

/* A training step's kernel spans as CUPTI gives them: KERNELS names in a
 * fixed order on 3 streams, log-normal durations, launch gaps, correlation
 * ids counting up, one launch shape per name, the training thread's tid. */
#define KERNELS 577

static void kernel_stream(struct spanring_span *sp, size_t n, uint64_t *rng)
{
    uint64_t t = 5 * NSEC_PER_SEC;
    uint32_t corr = 1000;

    for (size_t i = 0; i < n; i++) {
        uint64_t k = i % KERNELS;
        t += 2000 + rng_next(rng) % 20000;
        corr += 1 + (uint32_t)(rng_next(rng) % 3);
        sp[i] = (struct spanring_span){
            .start_ns = t,
            .duration_ns = (uint64_t)(20000.0 * (1 + k % 7) * exp(0.1 * rng_normal(rng))),
            .name_id = 0x9e3779b97f4a7c15ULL * (k + 1),
            .value = 0x10000 * (k % 5) + 256,
            .kind = ARGUS__V1__SPAN_KIND__SPAN_KERNEL,
            .stream = 7 + (uint32_t)(k % 3),
            .tid = 4242,
            .correlation = corr};
    }
}

struct all_spans {
    const struct spanring_span *want;
    size_t n, bad;
};

static int same_span(void *ctx, const struct spanring_span *s)
{
    struct all_spans *a = ctx;

    if (a->n >= 6 * SPANRING_CHUNK_SPANS || memcmp(s, &a->want[a->n], sizeof(*s)) != 0)
        a->bad++;
    a->n++;
    return 0;
}

/* Every field comes back exactly through sealed chunks, also values that
 * wrap or go backwards (a start before the span before it, a correlation id
 * that wraps, values of 64 bits). */
static void test_fields_exact(void **state)
{
    struct spanring *r =
        spanring_new(&(struct spanring_options){NSEC_PER_SEC * 100, NSEC_PER_SEC * 3600});
    static struct spanring_span sp[6 * SPANRING_CHUNK_SPANS];
    struct all_spans a = {sp, 0, 0};
    uint64_t rng = 7;

    (void)state;
    kernel_stream(sp, 6 * SPANRING_CHUNK_SPANS, &rng);
    for (size_t i = 0; i < 6 * SPANRING_CHUNK_SPANS; i += 97) {
        sp[i].start_ns -= 50000; /* before the span before it */
        sp[i].value = rng_next(&rng);
        sp[i].duration_ns = UINT64_MAX - i;
        sp[i].correlation = UINT32_MAX - (uint32_t)i;
        sp[i].kind = UINT32_MAX;
        sp[i].tid = UINT32_MAX - 1;
    }
    for (size_t i = 0; i < 6 * SPANRING_CHUNK_SPANS; i++)
        assert_int_equal(spanring_add(r, &sp[i]), 0);
    assert_int_equal(spanring_seal(r), 0);
    assert_int_equal(spanring_window(r, 0, UINT64_MAX, same_span, &a), 0);
    assert_int_equal(a.n, 6 * SPANRING_CHUNK_SPANS);
    assert_int_equal(a.bad, 0);
    spanring_free(r);
}

/* The bytes the ring counts (what the agent's cap spans.ring_bytes holds it
 * to) are the heap it holds: a chunk allocated at LZ4's bound held the raw
 * size (48 B a span) while the count had the compressed one. And a kernel
 * span takes a few bytes, not the 20-odd that LZ4 of 48-byte rows gave. */
static void test_bytes_counted_are_held(void **state)
{
    enum { N = 64 * SPANRING_CHUNK_SPANS };
    struct spanring_span *sp = malloc(N * sizeof(*sp));
    struct spanring *r =
        spanring_new(&(struct spanring_options){NSEC_PER_SEC * 100, NSEC_PER_SEC * 3600});
    struct spanring_stats st;
    struct mallinfo2 m0, m1;
    uint64_t rng = 11;

    (void)state;
    assert_non_null(sp);
    kernel_stream(sp, N, &rng);
    assert_int_equal(spanring_add(r, &sp[0]), 0);
    assert_int_equal(spanring_seal(r), 0); /* the scratch is allocated once, here */
    m0 = mallinfo2();
    for (size_t i = 1; i < N; i++)
        assert_int_equal(spanring_add(r, &sp[i]), 0);
    assert_int_equal(spanring_seal(r), 0);
    m1 = mallinfo2();
    spanring_get_stats(r, &st);
    print_message("%d spans: %zu B held, %llu B counted, %.1f B a span\n", N,
                  m1.uordblks - m0.uordblks, (unsigned long long)st.bytes, (double)st.bytes / N);
    /* malloc's own header, 16 B a chunk, is the only slack */
    assert_true(m1.uordblks - m0.uordblks <= st.bytes + 16 * st.chunks);
    assert_true((double)st.bytes / N < 9);
    spanring_free(r);
    free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_across_chunks),  cmocka_unit_test(test_age_drops_oldest),
        cmocka_unit_test(test_corrupt_chunk_refused), cmocka_unit_test(test_drop_oldest_for_cap),
        cmocka_unit_test(test_spans_cap_and_capture), cmocka_unit_test(test_spans_ranks_only),
        cmocka_unit_test(test_fields_exact),          cmocka_unit_test(test_bytes_counted_are_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
