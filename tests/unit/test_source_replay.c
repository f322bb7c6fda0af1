/* The replay source (source_replay.h): a small Kineto trace played as one
 * rank gives a STEP event and the step's kernels at their offsets in the
 * trace; replay.stretch multiplies kernel durations and offsets, not the
 * step rate; a negative stretch is refused with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/sources/source_replay.h"

/* Step 7 at 100 us (50 us long) with two kernels launched inside it. */
static const char trace_json[] =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#7\",\"ts\":100,\"dur\":50},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":101,\"dur\":1,"
    "\"args\":{\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":102,\"dur\":1,"
    "\"args\":{\"correlation\":2}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":110,\"dur\":4,"
    "\"args\":{\"stream\":7,\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"softmax\",\"ts\":120,\"dur\":10,"
    "\"args\":{\"stream\":7,\"correlation\":2}}"
    "]}";

struct got {
    struct agent_event ev[16];
    size_t n;
};

static void got_event(void *ctx, const struct agent_event *ev)
{
    struct got *g = ctx;

    if (g->n < 16)
        g->ev[g->n++] = *ev;
}

static void got_name(void *ctx, uint64_t id, const char *name)
{
    (void)ctx, (void)id, (void)name;
}

static int write_trace(char *path)
{
    int fd = mkstemps(path, 5);
    ssize_t len = (ssize_t)strlen(trace_json);

    if (fd < 0)
        return -1;
    if (write(fd, trace_json, (size_t)len) != len) {
        close(fd);
        return -1;
    }
    return close(fd);
}

/* Play step 0 of one rank with the given stretch; events into g. */
static void play(double stretch, struct got *g)
{
    char path[] = "/tmp/test_source_replay_XXXXXX.json", why[256] = "";
    struct replay_config c = {.path = path,
                              .job = "j",
                              .node = "n",
                              .ranks = 1,
                              .rate = 1,
                              .steps = 1,
                              .stretch = stretch};
    struct event_sink sink = {got_event, got_name, g};
    void *r;

    assert_int_equal(write_trace(path), 0);
    r = source_replay_ops.create(&c, why, sizeof(why));
    unlink(path);
    assert_non_null(r);
    assert_int_equal(source_replay_ops.start(r, &sink, why, sizeof(why)), 0);
    g->n = 0; /* drop the RANK announcement */
    /* step 0 is due at the start: the first dispatch plays it, and the
     * rank, its one step played, ends cleanly */
    assert_int_equal(source_replay_ops.dispatch(r), 4);
    assert_int_equal(source_replay_ops.dispatch(r), 0);
    source_replay_ops.destroy(r);
    assert_int_equal(g->n, 4);
    assert_int_equal(g->ev[0].kind, AGENT_EVENT_STEP);
    assert_int_equal(g->ev[1].kind, AGENT_EVENT_KERNEL);
    assert_int_equal(g->ev[2].kind, AGENT_EVENT_KERNEL);
    assert_int_equal(g->ev[3].kind, AGENT_EVENT_PROC_EXIT);
    assert_int_equal(g->ev[3].pid, g->ev[0].pid);
    assert_int_equal(g->ev[3].exit.code, 0);
    assert_int_equal(g->ev[3].exit.signal, 0);
}

static void test_offsets_and_durations(void **state)
{
    struct got g = {0};

    (void)state;
    play(0, &g); /* 0: as recorded */
    assert_int_equal(g.ev[1].ts_ns - g.ev[0].ts_ns, 10000);
    assert_int_equal(g.ev[1].kernel.duration_ns, 4000);
    assert_int_equal(g.ev[2].ts_ns - g.ev[0].ts_ns, 20000);
    assert_int_equal(g.ev[2].kernel.duration_ns, 10000);
}

static void test_stretch(void **state)
{
    struct got g = {0};

    (void)state;
    play(2.5, &g);
    assert_int_equal(g.ev[0].step.number, 0);
    assert_int_equal(g.ev[1].ts_ns - g.ev[0].ts_ns, 25000);
    assert_int_equal(g.ev[1].kernel.duration_ns, 10000);
    assert_int_equal(g.ev[2].ts_ns - g.ev[0].ts_ns, 50000);
    assert_int_equal(g.ev[2].kernel.duration_ns, 25000);
}

static void test_negative_stretch_refused(void **state)
{
    struct replay_config c = {.path = "/nonexistent.json", .ranks = 1, .rate = 1, .stretch = -1};
    char why[256] = "";

    (void)state;
    assert_null(source_replay_ops.create(&c, why, sizeof(why)));
    assert_non_null(strstr(why, "stretch >= 0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offsets_and_durations),
        cmocka_unit_test(test_stretch),
        cmocka_unit_test(test_negative_stretch_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
