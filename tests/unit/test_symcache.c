/* agent/symbols/symcache.c: user addresses of this test binary and of a forked
 * child (one file read for both), the byte cap, the maps reload interval,
 * perf maps (JIT) and kernel symbols. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/symbols/symbolize.h"
#include "agent/symbols/symcache.h"
#include "common/clock.h"

__attribute__((noinline, used)) int symcache_test_marker_function(int x);
__attribute__((noinline, used)) int symcache_test_marker_function(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static uintptr_t marker_addr(void)
{
    return (uintptr_t)&symcache_test_marker_function + 2;
}

static void test_user_address(void **state)
{
    struct symcache *c = symcache_new(NULL);
    char buf[128];

    assert_non_null(c);
    assert_int_equal(symcache_user(c, (uint32_t)getpid(), "", marker_addr(), buf, sizeof(buf)), 0);
    assert_string_equal(buf, "symcache_test_marker_function");
    assert_int_equal(symcache_user(c, (uint32_t)getpid(), "", 16, buf, sizeof(buf)), -ENOENT);
    assert_string_equal(buf, "[unknown]");
    symcache_free(c);
}

/* A child maps the same test binary: its file is read once for both. */
static void test_file_shared_by_two_pids(void **state)
{
    struct symcache *c = symcache_new(NULL);
    struct symcache_stats st;
    char buf[128];
    pid_t child = fork();

    if (child == 0) {
        pause();
        _exit(0);
    }
    assert_true(child > 0);
    assert_non_null(c);
    assert_int_equal(symcache_user(c, (uint32_t)getpid(), NULL, marker_addr(), buf, sizeof(buf)),
                     0);
    assert_string_equal(buf, "symcache_test_marker_function");
    assert_int_equal(symcache_user(c, (uint32_t)child, NULL, marker_addr(), buf, sizeof(buf)), 0);
    assert_string_equal(buf, "symcache_test_marker_function");
    symcache_get_stats(c, &st);
    assert_int_equal(st.files_loaded, 1);
    assert_int_equal(st.files, 1);
    assert_int_equal(st.procs, 2);
    assert_int_equal(st.maps_reads, 2);
    assert_true(st.bytes > 0);
    symcache_forget(c, (uint32_t)child);
    symcache_get_stats(c, &st);
    assert_int_equal(st.procs, 1);
    assert_int_equal(st.files, 1); /* files outlive the processes */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    symcache_free(c);
}

/* Under a 1-byte cap each file read evicts the one before; lookups still
 * work, the file in use is kept. */
static void test_cap_evicts_lru(void **state)
{
    struct symcache_options o = {.cap_bytes = 1};
    struct symcache *c = symcache_new(&o);
    uintptr_t other = (uintptr_t)&_cmocka_run_group_tests; /* in libcmocka.so */
    struct symcache_stats st;
    char buf[128];
    uint32_t pid = (uint32_t)getpid();

    assert_non_null(c);
    assert_int_equal(symcache_user(c, pid, NULL, marker_addr(), buf, sizeof(buf)), 0);
    symcache_user(c, pid, NULL, other, buf, sizeof(buf));
    symcache_get_stats(c, &st);
    assert_int_equal(st.files_loaded, 2);
    assert_int_equal(st.files_evicted, 1);
    assert_int_equal(st.files, 1);
    assert_int_equal(symcache_user(c, pid, NULL, marker_addr(), buf, sizeof(buf)), 0);
    assert_string_equal(buf, "symcache_test_marker_function");
    symcache_get_stats(c, &st);
    assert_int_equal(st.files_loaded, 3);
    assert_int_equal(st.files_evicted, 2);
    symcache_free(c);
}

/* An address outside every mapping re-reads the maps at most once per
 * reload interval. */
static void test_maps_reload_interval(void **state)
{
    struct symcache_options slow = {.reload_ns = 3600ull * 1000000000ull}, fast = {.reload_ns = 1};
    struct symcache *c = symcache_new(&slow);
    struct symcache_stats st;
    char buf[64];
    uint32_t pid = (uint32_t)getpid();

    assert_non_null(c);
    for (int i = 0; i < 5; i++)
        assert_int_equal(symcache_user(c, pid, NULL, 16, buf, sizeof(buf)), -ENOENT);
    symcache_get_stats(c, &st);
    assert_int_equal(st.maps_reads, 1);
    symcache_free(c);
    c = symcache_new(&fast);
    assert_non_null(c);
    usleep(1000);
    for (int i = 0; i < 3; i++) {
        symcache_user(c, pid, NULL, 16, buf, sizeof(buf));
        usleep(1000);
    }
    symcache_get_stats(c, &st);
    assert_int_equal(st.maps_reads, 4); /* the first read, then one more per miss */
    symcache_free(c);
}

/* Reads that find nothing new back off: misses every 5 ms for 320 ms with a
 * 20 ms interval read at 0, 20, 60, 140 and 300 ms at most (16 times
 * without; time-bound, so a slow machine reads fewer times, never more). */
static void test_maps_reload_backoff(void **state)
{
    struct symcache_options o = {.reload_ns = 20ull * 1000000ull};
    struct symcache *c = symcache_new(&o);
    struct symcache_stats st;
    char buf[64];

    (void)state;
    assert_non_null(c);
    for (uint64_t t0 = clock_mono_ns(); clock_mono_ns() - t0 < 320ull * 1000000ull;) {
        symcache_user(c, (uint32_t)getpid(), NULL, 16, buf, sizeof(buf));
        usleep(5000);
    }
    symcache_get_stats(c, &st);
    assert_true(st.maps_reads >= 2 && st.maps_reads <= 5);
    symcache_free(c);
}

static void test_perf_map_jit(void **state)
{
    struct symcache *c = symcache_new(NULL);
    size_t len = 1 << 16;
    char *code = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char path[64], buf[128];
    uint32_t pid = (uint32_t)getpid();
    FILE *f;

    assert_non_null(c);
    assert_true(code != MAP_FAILED);
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%lx 100 jit_step_function\n", (unsigned long)(uintptr_t)code + 0x1000);
    fclose(f);
    assert_int_equal(symcache_user(c, pid, "", (uintptr_t)code + 0x1010, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "jit_step_function");
    assert_int_equal(symcache_user(c, pid, "", (uintptr_t)code + 0x2000, buf, sizeof(buf)),
                     -ENOENT);
    unlink(path);
    munmap(code, len);
    symcache_free(c);
}

/* A child with a /tmp of its own (a mount namespace, as in a container or
 * under PrivateTmp=): its perf map is found through /proc/PID/root. */
static void test_perf_map_private_tmp(void **state)
{
    size_t len = 1 << 16;
    char *code = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int ready[2], done[2];
    char c = 0, buf[128];
    pid_t child;

    assert_true(code != MAP_FAILED);
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(done), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char path[64];
        FILE *f;

        alarm(20); /* gone even when the parent fails before it says done */
        c = 'n';
        if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
            mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") == 0) {
            snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
            if ((f = fopen(path, "w"))) {
                fprintf(f, "%lx 100 private_jit_function\n",
                        (unsigned long)(uintptr_t)code + 0x100);
                c = fclose(f) == 0 ? 'y' : 'n';
            }
        }
        if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    assert_int_equal(read(ready[0], &c, 1), 1);
    if (c == 'y') {
        struct symcache *sc = symcache_new(NULL);
        char path[64];

        snprintf(path, sizeof(path), "/tmp/perf-%d.map", child);
        assert_int_not_equal(access(path, F_OK), 0); /* not in our /tmp */
        assert_int_equal(
            symcache_user(sc, (uint32_t)child, NULL, (uintptr_t)code + 0x110, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "private_jit_function");
        symcache_free(sc);
    }
    assert_int_equal(write(done[1], "x", 1), 1);
    waitpid(child, NULL, 0);
    munmap(code, len);
    if (c != 'y') {
        print_message("skip: cannot give a child its own /tmp (needs root)\n");
        skip();
    }
}

static void test_kernel(void **state)
{
    struct symcache *c = symcache_new(NULL);
    unsigned long long addr = 0;
    char line[256], name[128] = "", type, buf[128];
    FILE *f = fopen("/proc/kallsyms", "r");

    assert_non_null(c);
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3 && !strcmp(name, "schedule"))
            break;
    if (f)
        fclose(f);
    if (!addr || strcmp(name, "schedule")) { /* not root: kallsyms shows zeros */
        symcache_free(c);
        print_message("skip: no kernel addresses in /proc/kallsyms\n");
        skip();
    }
    assert_int_equal(symcache_kernel(c, addr + 4, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "schedule");
    symcache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_address),         cmocka_unit_test(test_file_shared_by_two_pids),
        cmocka_unit_test(test_cap_evicts_lru),       cmocka_unit_test(test_maps_reload_interval),
        cmocka_unit_test(test_maps_reload_backoff),  cmocka_unit_test(test_perf_map_jit),
        cmocka_unit_test(test_perf_map_private_tmp), cmocka_unit_test(test_kernel),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
