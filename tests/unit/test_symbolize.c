/* agent/symbolize.c: maps/perf-map parsing, and ELF lookups on this test
 * binary itself (built with symbols). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/symbolize.h"

__attribute__((noinline, used)) int symbolize_test_marker_function(int x);
__attribute__((noinline, used)) int symbolize_test_marker_function(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static void test_parse_maps(void **state)
{
    struct symbolize_mapping m;

    assert_int_equal(symbolize_parse_maps_line("7f00a000-7f00b000 r-xp 00002000 fd:01 1234     "
                                               "  /usr/lib/libnccl.so.2\n",
                                               &m),
                     0);
    assert_int_equal(m.start, 0x7f00a000);
    assert_int_equal(m.end, 0x7f00b000);
    assert_int_equal(m.file_offset, 0x2000);
    assert_string_equal(m.perms, "r-xp");
    assert_string_equal(m.path, "/usr/lib/libnccl.so.2");
    assert_int_equal(symbolize_parse_maps_line("10-20 rw-p 00000000 00:00 0\n", &m), 0);
    assert_string_equal(m.path, "");
    assert_int_equal(symbolize_parse_maps_line("garbage", &m), -EINVAL);
}

static void test_parse_perf_map(void **state)
{
    uint64_t start, size;
    char name[32];

    assert_int_equal(symbolize_parse_perf_map_line("7f1234 40 py::train_step:model.py\n", &start,
                                                   &size, name, sizeof(name)),
                     0);
    assert_int_equal(start, 0x7f1234);
    assert_int_equal(size, 0x40);
    assert_string_equal(name, "py::train_step:model.py");
    assert_int_equal(symbolize_parse_perf_map_line("7f1234 40\n", &start, &size, name, 32),
                     -EINVAL);
}

static void test_elf_self(void **state)
{
    struct symbolize_elf *elf;
    uint64_t off, vaddr, delta;
    const char *name;

    assert_int_equal(symbolize_elf_open("/proc/self/exe", &elf), 0);
    assert_true(symbolize_elf_count(elf) > 10);
    assert_int_equal(symbolize_elf_file_offset(elf, "symbolize_test_marker_function", &off), 0);
    assert_int_equal(symbolize_elf_offset_to_vaddr(elf, off + 1, &vaddr), 0);
    name = symbolize_elf_lookup(elf, vaddr, &delta);
    assert_non_null(name);
    assert_string_equal(name, "symbolize_test_marker_function");
    assert_int_equal(delta, 1);
    assert_int_equal(symbolize_elf_file_offset(elf, "symbolize_test_marker_fun*", &off), 0);
    assert_int_equal(symbolize_elf_file_offset(elf, "no_such_function_here", &off), -ENOENT);
    symbolize_elf_free(elf);
    assert_int_equal(symbolize_elf_open("/nonexistent", &elf), -ENOENT);
    assert_int_equal(symbolize_elf_open("/proc/self/status", &elf), -ENOEXEC);
}

static void test_user_address(void **state)
{
    struct symbolize *s = symbolize_new();
    char buf[128];
    uintptr_t addr = (uintptr_t)&symbolize_test_marker_function + 2;

    assert_non_null(s);
    assert_int_equal(symbolize_user(s, (uint32_t)getpid(), "", addr, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "symbolize_test_marker_function");
    assert_int_equal(symbolize_user(s, (uint32_t)getpid(), "", 16, buf, sizeof(buf)), -ENOENT);
    symbolize_free(s);
}

static void test_perf_map_jit(void **state)
{
    struct symbolize *s = symbolize_new();
    size_t len = 1 << 16;
    char *code = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char path[64], buf[128];
    FILE *f;

    assert_non_null(s);
    assert_true(code != MAP_FAILED);
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%lx 100 jit_step_function\n", (unsigned long)(uintptr_t)code + 0x1000);
    fclose(f);
    assert_int_equal(
        symbolize_user(s, (uint32_t)getpid(), "", (uintptr_t)code + 0x1010, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "jit_step_function");
    assert_int_equal(
        symbolize_user(s, (uint32_t)getpid(), "", (uintptr_t)code + 0x2000, buf, sizeof(buf)),
        -ENOENT);
    unlink(path);
    munmap(code, len);
    symbolize_free(s);
}

static void test_kernel(void **state)
{
    struct symbolize *s = symbolize_new();
    unsigned long long addr = 0;
    char line[256], name[128], type, buf[128];
    FILE *f = fopen("/proc/kallsyms", "r");

    assert_non_null(s);
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3 && !strcmp(name, "schedule"))
            break;
    if (f)
        fclose(f);
    if (!addr || strcmp(name, "schedule")) { /* not root: kallsyms shows zeros */
        symbolize_free(s);
        print_message("skip: no kernel addresses in /proc/kallsyms\n");
        skip();
    }
    assert_int_equal(symbolize_kernel(s, addr + 4, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "schedule");
    symbolize_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_maps),   cmocka_unit_test(test_parse_perf_map),
        cmocka_unit_test(test_elf_self),     cmocka_unit_test(test_user_address),
        cmocka_unit_test(test_perf_map_jit), cmocka_unit_test(test_kernel),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
