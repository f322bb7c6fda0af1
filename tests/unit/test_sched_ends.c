/* agent/probes/sched_ends.c: a thread's end reported once, from its free
 * when that comes within the wait, else from its exit; late frees dropped. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/probes/sched_ends.h"

#define MS 1000000ull

static struct argus_sched_delta end(uint32_t tid, uint32_t kind, uint64_t off)
{
    return (struct argus_sched_delta){
        .off_cpu_ns = off, .runq_ns = 1, .tgid = 7, .tid = tid, .kind = kind};
}

static void test_free_in_time(void **state)
{
    struct sched_ends e = {0};
    struct argus_sched_delta exit = end(10, ARGUS_SCHED_EXIT, 22 * MS), out;
    struct argus_sched_delta fr = end(10, ARGUS_SCHED_FREE, 20 * MS);

    assert_int_equal(sched_ends_add(&e, &exit, 100 * MS, &out), 0); /* held */
    assert_int_equal(sched_ends_held(&e), 1);
    assert_int_equal(sched_ends_expire(&e, 200 * MS, &out), 0);
    assert_int_equal(sched_ends_add(&e, &fr, 300 * MS, &out), 1); /* the free's reading */
    assert_int_equal(out.off_cpu_ns, 20 * MS);
    assert_int_equal(sched_ends_held(&e), 0);
    assert_int_equal(sched_ends_expire(&e, 100 * MS + SCHED_ENDS_WAIT_NS, &out), 0);
    assert_int_equal(e.from_exit, 0);
    sched_ends_free(&e);
}

static void test_no_free(void **state)
{
    struct sched_ends e = {0};
    struct argus_sched_delta exit = end(10, ARGUS_SCHED_EXIT, 22 * MS), out;
    struct argus_sched_delta fr = end(10, ARGUS_SCHED_FREE, 20 * MS);
    uint64_t due = 100 * MS + SCHED_ENDS_WAIT_NS;

    assert_int_equal(sched_ends_add(&e, &exit, 100 * MS, &out), 0);
    assert_int_equal(sched_ends_expire(&e, due - 1, &out), 0);
    assert_int_equal(sched_ends_expire(&e, due, &out), 1); /* the exit's reading, once */
    assert_int_equal(out.off_cpu_ns, 22 * MS);
    assert_int_equal(out.tid, 10);
    assert_int_equal(sched_ends_expire(&e, due + MS, &out), 0);
    assert_int_equal(e.from_exit, 1);
    assert_int_equal(sched_ends_held(&e), 0);
    /* its free after all: dropped, the thread was counted */
    assert_int_equal(sched_ends_add(&e, &fr, due + 5 * MS, &out), 0);
    assert_int_equal(e.late_frees, 1);
    assert_int_equal(e.n, 0);
    sched_ends_free(&e);
}

static void test_forgotten_after_keep(void **state)
{
    struct sched_ends e = {0};
    struct argus_sched_delta exit = end(10, ARGUS_SCHED_EXIT, 22 * MS), out;
    struct argus_sched_delta fr = end(10, ARGUS_SCHED_FREE, 20 * MS);
    uint64_t due = SCHED_ENDS_WAIT_NS;

    assert_int_equal(sched_ends_add(&e, &exit, 0, &out), 0);
    assert_int_equal(sched_ends_expire(&e, due, &out), 1);
    assert_int_equal(sched_ends_expire(&e, due + SCHED_ENDS_KEEP_NS, &out), 0);
    assert_int_equal(e.n, 0); /* forgotten */
    /* a free with no exit held (its exit lost to a full ring) is reported */
    assert_int_equal(sched_ends_add(&e, &fr, due + SCHED_ENDS_KEEP_NS + 1, &out), 1);
    assert_int_equal(out.off_cpu_ns, 20 * MS);
    sched_ends_free(&e);
}

static void test_many_and_reuse(void **state)
{
    struct sched_ends e = {0};
    struct argus_sched_delta d, out;
    int now_out = 0;

    for (uint32_t t = 1; t <= SCHED_ENDS_MAX + 3; t++) { /* past the cap: reported at once */
        d = end(t, ARGUS_SCHED_EXIT, t);
        now_out += sched_ends_add(&e, &d, 0, &out);
    }
    assert_int_equal(now_out, 3);
    assert_int_equal(sched_ends_held(&e), SCHED_ENDS_MAX);
    for (uint32_t t = 1; t <= SCHED_ENDS_MAX; t++) { /* every free matches its own exit */
        d = end(t, ARGUS_SCHED_FREE, t + 100);
        assert_int_equal(sched_ends_add(&e, &d, MS, &out), 1);
        assert_int_equal(out.tid, t);
        assert_int_equal(out.off_cpu_ns, t + 100);
    }
    assert_int_equal(e.n, 0);
    /* a tid reused before the old thread's free: the old end goes out, the new one is held */
    d = end(5, ARGUS_SCHED_EXIT, 1);
    assert_int_equal(sched_ends_add(&e, &d, 0, &out), 0);
    d = end(5, ARGUS_SCHED_EXIT, 2);
    assert_int_equal(sched_ends_add(&e, &d, MS, &out), 1);
    assert_int_equal(out.off_cpu_ns, 1);
    assert_int_equal(sched_ends_held(&e), 1);
    d = end(5, ARGUS_SCHED_REPORT, 3);
    assert_int_equal(sched_ends_add(&e, &d, MS, &out), -EINVAL);
    sched_ends_free(&e);
}

/* The probe stopping: every held end goes out once, due or not; a free
 * that still comes is dropped, an end already reported is not repeated. */
static void test_flush(void **state)
{
    struct sched_ends e = {0};
    struct argus_sched_delta d, out;
    uint32_t seen = 0;

    for (uint32_t t = 1; t <= 3; t++) {
        d = end(t, ARGUS_SCHED_EXIT, 10 * t);
        assert_int_equal(sched_ends_add(&e, &d, t * MS, &out), 0);
    }
    assert_int_equal(sched_ends_expire(&e, 1 * MS + SCHED_ENDS_WAIT_NS, &out), 1); /* tid 1 */
    assert_int_equal(out.tid, 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sched_ends_flush(&e, &out), 1);
        assert_true(out.tid == 2 || out.tid == 3);
        assert_int_equal(out.off_cpu_ns, 10 * out.tid);
        seen |= 1u << out.tid;
    }
    assert_int_equal(seen, (1u << 2) | (1u << 3));
    assert_int_equal(sched_ends_flush(&e, &out), 0);
    assert_int_equal(sched_ends_held(&e), 0);
    assert_int_equal(e.from_exit, 3);
    d = end(2, ARGUS_SCHED_FREE, 19);
    assert_int_equal(sched_ends_add(&e, &d, 3 * MS, &out), 0); /* counted already */
    assert_int_equal(e.late_frees, 1);
    sched_ends_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_in_time),
        cmocka_unit_test(test_no_free),
        cmocka_unit_test(test_forgotten_after_keep),
        cmocka_unit_test(test_many_and_reuse),
        cmocka_unit_test(test_flush),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
