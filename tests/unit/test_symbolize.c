/* agent/symbols/symbolize.c: perf-map parsing, sorted symbol arrays, and ELF
 * lookups on this test binary itself (built with symbols). The caches built
 * on them are tested in test_symcache.c, the maps reader in test_procmaps.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/symbols/symbolize.h"

__attribute__((noinline, used)) int symbolize_test_marker_function(int x);
__attribute__((noinline, used)) int symbolize_test_marker_function(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
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

static void test_syms_find(void **state)
{
    struct symbolize_sym syms[] = {
        {0x300, 0x10, "c"}, {0x100, 0x80, "a"}, {0x100, 0x10, "a_inner"}, {0x200, 0, "b"}};

    symbolize_syms_sort(syms, 4);
    assert_string_equal(syms[0].name, "a"); /* larger first among equal starts */
    assert_string_equal(symbolize_syms_find(syms, 4, 0x105)->name, "a_inner");
    assert_string_equal(symbolize_syms_find(syms, 4, 0x150)->name, "a");
    assert_string_equal(symbolize_syms_find(syms, 4, 0x200)->name, "b");
    assert_null(symbolize_syms_find(syms, 4, 0x201)); /* size 0: its own address only */
    assert_null(symbolize_syms_find(syms, 4, 0x310));
    assert_null(symbolize_syms_find(syms, 4, 0x50));
}

static void test_elf_self(void **state)
{
    struct symbolize_elf *elf;
    uint64_t off, vaddr, delta;
    const char *name;
    uint64_t opens = symbolize_elf_opens(1);

    assert_int_equal(symbolize_elf_open("/proc/self/exe", &elf), 0);
    assert_int_equal(symbolize_elf_opens(1), opens + 1);
    assert_true(symbolize_elf_opens(0) >= opens + 1);
    assert_true(symbolize_elf_count(elf) > 10);
    assert_true(symbolize_elf_bytes(elf) > symbolize_elf_count(elf) * sizeof(struct symbolize_sym));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_perf_map),
        cmocka_unit_test(test_elf_self),
        cmocka_unit_test(test_syms_find),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
