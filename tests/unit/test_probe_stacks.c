/* agent/probes/probe_stacks.c without a kernel: what the ring callback does with a
 * sample on the main loop (probe_stacks_record) reads no symbols, samples
 * the symbolizer has not named yet count as "[unresolved]" in a step's top
 * frames, probe_stacks_settled() tells when a window has none pending, and
 * the queue cap is counted. The probe is created but not started, so no
 * BPF and no symbolizer thread: anything named here would have been named
 * on this (the main) thread. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/probes/probe_stacks.h"
#include "agent/probes/stacks_worker.h"
#include "agent/symbols/symbolize.h"

__attribute__((noinline, used)) int probe_stacks_test_leaf(int x);
__attribute__((noinline, used)) int probe_stacks_test_leaf(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static void test_record_reads_no_symbols(void **state)
{
    struct probe_stacks_config cfg = {.queue = 8};
    char why[128] = "", metrics[2048];
    void *st = probe_stacks_ops.create(&cfg, why, sizeof(why));
    uint64_t opens_here = symbolize_elf_opens(1), opens_all = symbolize_elf_opens(0);
    struct probe_stacks_frame top[5];
    size_t n;

    assert_non_null(st);
    for (uint64_t i = 0; i < 10; i++) {
        struct stacks_raw r = {.ts_ns = 100 + i, .pid = (uint32_t)getpid(), .nuser = 1};

        r.ips[0] = (uintptr_t)&probe_stacks_test_leaf + 2;
        assert_int_equal(probe_stacks_record(st, &r), i < 8 ? 0 : -ENOBUFS);
    }
    assert_int_equal(symbolize_elf_opens(1), opens_here);
    assert_int_equal(symbolize_elf_opens(0), opens_all);
    assert_true(probe_stacks_settled(st, 100)); /* nothing pending before t=100 */
    assert_false(probe_stacks_settled(st, 101));
    n = probe_stacks_top_frames(st, (uint32_t)getpid(), 0, 1000, top, 5);
    assert_int_equal(n, 1);
    assert_string_equal(top[0].name, PROBE_STACKS_UNRESOLVED);
    assert_int_equal(top[0].self, 8);
    assert_int_equal(top[0].total, 8);
    assert_int_equal(probe_stacks_top_frames(st, (uint32_t)getpid(), 104, 106, top, 5), 1);
    assert_int_equal(top[0].self, 2);
    assert_int_equal(probe_stacks_top_frames(st, (uint32_t)getpid() + 1, 0, 1000, top, 5), 0);
    /* no sample of the process is named yet: no last stack (liveness) */
    assert_int_equal(probe_stacks_last_stack(st, (uint32_t)getpid(), (const char *[4]){0}, 4), 0);
    assert_int_equal(probe_stacks_ops.dispatch(st), 0);
    assert_int_equal(symbolize_elf_opens(0), opens_all);
    metrics[probe_stacks_ops.metrics(st, metrics, sizeof(metrics) - 1)] = '\0';
    assert_non_null(strstr(metrics, "argus_probe_samples_total{probe=\"stacks\"} 10\n"));
    assert_non_null(strstr(metrics, "argus_probe_queue_dropped_total{probe=\"stacks\"} 2\n"));
    assert_non_null(strstr(metrics, "argus_probe_unresolved_total{probe=\"stacks\"} 10\n"));
    probe_stacks_ops.destroy(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_reads_no_symbols),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
