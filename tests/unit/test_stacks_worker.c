/* agent/probes/stacks_worker.c: samples of this test process go to the thread and
 * come back named, in order; the queue cap refuses and counts; a forget
 * waits for the samples before it; shutdown joins promptly. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/probes/stacks_worker.h"
#include "common/clock.h"

__attribute__((noinline, used)) int worker_test_leaf(int x);
__attribute__((noinline, used)) int worker_test_leaf(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

__attribute__((noinline, used)) int worker_test_caller(int x);
__attribute__((noinline, used)) int worker_test_caller(int x)
{
    __asm__ volatile("" ::: "memory");
    return worker_test_leaf(x) + 1;
}

static struct stacks_raw sample(uint64_t ts)
{
    struct stacks_raw r = {.ts_ns = ts, .pid = (uint32_t)getpid(), .nuser = 2};

    r.ips[0] = (uintptr_t)&worker_test_leaf + 2;
    r.ips[1] = (uintptr_t)&worker_test_caller + 5; /* a return address: named at -1 */
    return r;
}

/* Take until want samples came back or 5 s passed. */
static size_t take_all(struct stacks_worker *w, struct probe_stacks_sample *out, size_t want)
{
    uint64_t end = clock_mono_ns() + 5 * NSEC_PER_SEC;
    size_t n = 0;

    stacks_worker_kick(w);
    while (n < want && clock_mono_ns() < end) {
        struct pollfd p = {.fd = stacks_worker_fd(w), .events = POLLIN};

        poll(&p, 1, 100);
        n += stacks_worker_take(w, out + n, want - n);
    }
    return n;
}

static void test_results_come_back(void **state)
{
    struct stacks_worker *w = stacks_worker_new(&(struct stacks_worker_options){.queue = 16});
    struct probe_stacks_sample out[3];
    struct stacks_raw r;

    assert_non_null(w);
    assert_int_equal(stacks_worker_start(w), 0);
    for (uint64_t ts = 1; ts <= 3; ts++) {
        r = sample(ts);
        assert_int_equal(stacks_worker_push(w, &r), 0);
    }
    assert_int_equal(take_all(w, out, 3), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out[i].ts_ns, i + 1); /* in push order */
        assert_int_equal(out[i].pid, getpid());
        assert_int_equal(out[i].nframes, 2);
        assert_string_equal(stacks_worker_name(w, out[i].frames[0]), "worker_test_leaf");
        assert_string_equal(stacks_worker_name(w, out[i].frames[1]), "worker_test_caller");
    }
    assert_int_equal(out[0].frames[0], out[2].frames[0]); /* interned once */
    assert_int_equal(stacks_worker_outstanding(w), 0);
    assert_string_equal(stacks_worker_name(w, 999999), "[other]");
    stacks_worker_free(w);
}

static void test_drops_at_cap(void **state)
{
    struct stacks_worker *w = stacks_worker_new(&(struct stacks_worker_options){.queue = 4});
    struct probe_stacks_sample out[4];
    struct stacks_worker_stats st;
    struct stacks_raw r = sample(1);

    assert_non_null(w); /* not started: nothing is taken off the queue */
    for (int i = 0; i < 4; i++)
        assert_int_equal(stacks_worker_push(w, &r), 0);
    assert_int_equal(stacks_worker_push(w, &r), -ENOBUFS);
    assert_int_equal(stacks_worker_push(w, &r), -ENOBUFS);
    stacks_worker_get_stats(w, &st);
    assert_int_equal(st.pushed, 4);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(stacks_worker_outstanding(w), 4);
    assert_int_equal(stacks_worker_take(w, out, 4), 0);
    assert_int_equal(stacks_worker_start(w), 0);
    assert_int_equal(take_all(w, out, 4), 4);
    assert_int_equal(stacks_worker_outstanding(w), 0);
    assert_int_equal(stacks_worker_push(w, &r), 0); /* room again */
    assert_int_equal(take_all(w, out, 1), 1);
    stacks_worker_get_stats(w, &st);
    assert_int_equal(st.resolved, 5);
    assert_int_equal(st.dropped, 2);
    stacks_worker_free(w);
}

/* A forget runs after the samples pushed before it (they still find the
 * process's maps), then the cache holds no process. */
static void test_forget_after_samples(void **state)
{
    struct stacks_worker *w = stacks_worker_new(NULL);
    struct probe_stacks_sample out[1];
    struct stacks_worker_stats st;
    struct stacks_raw r = sample(7);
    uint64_t end = clock_mono_ns() + 5 * NSEC_PER_SEC;

    assert_non_null(w);
    assert_int_equal(stacks_worker_push(w, &r), 0);
    assert_int_equal(stacks_worker_forget(w, r.pid), 0);
    assert_int_equal(stacks_worker_start(w), 0);
    assert_int_equal(take_all(w, out, 1), 1);
    assert_string_equal(stacks_worker_name(w, out[0].frames[0]), "worker_test_leaf");
    do {
        usleep(1000);
        stacks_worker_get_stats(w, &st);
    } while (st.cache.procs && clock_mono_ns() < end);
    assert_int_equal(st.cache.procs, 0);
    assert_int_equal(st.cache.maps_reads, 1);
    stacks_worker_free(w);
}

/* Pushes wake the worker only when kicked: once per drain of the BPF ring,
 * not once per sample. */
static void test_kick_wakes(void **state)
{
    struct stacks_worker *w = stacks_worker_new(NULL);
    struct probe_stacks_sample out[2];
    struct stacks_worker_stats st;
    struct stacks_raw r = sample(1);

    assert_non_null(w);
    assert_int_equal(stacks_worker_start(w), 0);
    assert_int_equal(stacks_worker_push(w, &r), 0);
    /* Once its result is taken the worker is waiting: it publishes and
     * goes back to waiting under the one lock the take reads it through. */
    assert_int_equal(take_all(w, out, 1), 1);
    assert_int_equal(stacks_worker_push(w, &r), 0);
    assert_int_equal(stacks_worker_push(w, &r), 0);
    usleep(200 * 1000);
    stacks_worker_get_stats(w, &st);
    assert_int_equal(st.resolved, 1); /* pushed, not kicked */
    assert_int_equal(take_all(w, out, 2), 2);
    stacks_worker_get_stats(w, &st);
    assert_int_equal(st.resolved, 3);
    stacks_worker_free(w);
}

/* Shutdown with a full queue: the thread stops between samples. */
static void test_free_is_prompt(void **state)
{
    struct stacks_worker *w = stacks_worker_new(&(struct stacks_worker_options){.queue = 4096});
    struct stacks_raw r = sample(1);
    uint64_t start;

    assert_non_null(w);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(stacks_worker_push(w, &r), 0);
    assert_int_equal(stacks_worker_start(w), 0);
    start = clock_mono_ns();
    stacks_worker_free(w);
    assert_true(clock_mono_ns() - start < NSEC_PER_SEC);
    stacks_worker_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_come_back),    cmocka_unit_test(test_drops_at_cap),
        cmocka_unit_test(test_forget_after_samples), cmocka_unit_test(test_kick_wakes),
        cmocka_unit_test(test_free_is_prompt),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
