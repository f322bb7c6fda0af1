/* agent/symbols/procmaps.c: maps lines one at a time, then a synthetic
 * PROC/PID/maps in a temporary directory (deleted files, paths with spaces,
 * anonymous and special mappings, garbage, over-long paths, a truncated last
 * line), read by proc root and by path, and this process's own maps. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/symbols/procmaps.h"

static void test_parse_maps(void **state)
{
    struct procmaps_entry m;

    assert_int_equal(procmaps_parse_line("7f00a000-7f00b000 r-xp 00002000 fd:01 1234     "
                                         "  /usr/lib/libnccl.so.2\n",
                                         &m),
                     0);
    assert_int_equal(m.start, 0x7f00a000);
    assert_int_equal(m.end, 0x7f00b000);
    assert_int_equal(m.file_offset, 0x2000);
    assert_string_equal(m.perms, "r-xp");
    assert_string_equal(m.path, "/usr/lib/libnccl.so.2");
    assert_int_equal(m.dev, (uint64_t)0xfd << 32 | 0x01);
    assert_int_equal(m.inode, 1234);
    assert_false(m.deleted);
    assert_int_equal(procmaps_parse_line("10-20 rw-p 00000000 00:00 0\n", &m), 0);
    assert_string_equal(m.path, "");
    assert_int_equal(m.inode, 0);
    assert_int_equal(procmaps_parse_line("garbage", &m), -EINVAL);
}

static void test_parse_edges(void **state)
{
    struct procmaps_entry m;
    char line[600];

    /* an unlinked or replaced file: the suffix stays in path */
    assert_int_equal(
        procmaps_parse_line("10-20 r-xp 00000000 08:01 77 /opt/old/lib.so (deleted)\n", &m), 0);
    assert_true(m.deleted);
    assert_string_equal(m.path, "/opt/old/lib.so (deleted)");
    /* spaces inside the path, no newline */
    assert_int_equal(procmaps_parse_line("10-20 r--p 00001000 08:01 78 /data/my model/w.bin", &m),
                     0);
    assert_string_equal(m.path, "/data/my model/w.bin");
    assert_int_equal(m.file_offset, 0x1000);
    assert_false(m.deleted);
    assert_int_equal(procmaps_parse_line("7ffd-7ffe r-xp 00000000 00:00 0    [vdso]\n", &m), 0);
    assert_string_equal(m.path, "[vdso]");
    assert_int_equal(m.dev, 0);
    /* start after end, missing fields */
    assert_int_equal(procmaps_parse_line("20-10 r-xp 00000000 00:00 0\n", &m), -EINVAL);
    assert_int_equal(procmaps_parse_line("10-20 r-xp\n", &m), -EINVAL);
    assert_int_equal(procmaps_parse_line("", &m), -EINVAL);
    /* an over-long path is truncated; "deleted" is read from the whole line */
    int n = snprintf(line, sizeof(line), "10-20 r-xp 00000000 08:01 79 /");
    memset(line + n, 'x', 400);
    strcpy(line + n + 400, " (deleted)\n");
    assert_int_equal(procmaps_parse_line(line, &m), 0);
    assert_int_equal(strlen(m.path), sizeof(m.path) - 1);
    assert_true(m.deleted);
}

/* A fake proc root with PID/maps holding text; returns the root (static). */
static const char *fake_maps(uint32_t pid, const char *text)
{
    static char root[64];
    char path[128];

    strcpy(root, "/tmp/argus-test-procmaps-XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof(path), "%s/%u", root, pid);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/%u/maps", root, pid);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    return root;
}

static void fake_rm(const char *root)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static const char synthetic[] =
    "55d0-55d1 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
    "55d1-55d4 r-xp 00001000 08:01 123 /usr/bin/python3.11\n"
    "7f00-7f01 rw-p 00000000 00:00 0 \n"
    "not a maps line\n"
    "7f10-7f11 r-xp 00000000 08:01 456 /opt/old/libnccl.so.2 (deleted)\n"
    "7f20-7f21 r-xp 00002000 fd:02 789 /home/a user/lib with space.so\n"
    "7f30-7f31 rw-p 00000000 00:00 0 [anon:cuda]\n"
    "7ffd-7ffe r-xp 00000000 00:00 0                          [vdso]\n"
    "7fff-8000 r-xp 00000000 08:01 999 /usr/lib/libc.so.6";

#define D801 ((uint64_t)8 << 32 | 1) /* device 08:01 */

/* What reading `synthetic` must give, in order (the garbage line skipped). */
static void check_synthetic(struct procmaps *pm)
{
    static const struct {
        uint64_t start, dev, inode;
        const char *perms, *path;
        bool deleted;
    } want[] = {
        {0x55d0, D801, 123, "r--p", "/usr/bin/python3.11", false},
        {0x55d1, D801, 123, "r-xp", "/usr/bin/python3.11", false},
        {0x7f00, 0, 0, "rw-p", "", false},
        {0x7f10, D801, 456, "r-xp", "/opt/old/libnccl.so.2 (deleted)", true},
        {0x7f20, (uint64_t)0xfd << 32 | 2, 789, "r-xp", "/home/a user/lib with space.so", false},
        {0x7f30, 0, 0, "rw-p", "[anon:cuda]", false},
        {0x7ffd, 0, 0, "r-xp", "[vdso]", false},
        {0x7fff, D801, 999, "r-xp", "/usr/lib/libc.so.6", false}, /* the last line has no newline */
    };
    struct procmaps_entry e;

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(procmaps_next(pm, &e), 1);
        assert_int_equal(e.start, want[i].start);
        assert_int_equal(e.dev, want[i].dev);
        assert_int_equal(e.inode, want[i].inode);
        assert_string_equal(e.perms, want[i].perms);
        assert_string_equal(e.path, want[i].path);
        assert_int_equal(e.deleted, want[i].deleted);
    }
    assert_int_equal(procmaps_next(pm, &e), 0);
    assert_int_equal(procmaps_next(pm, &e), 0); /* and stays at the end */
}

static void test_read_synthetic(void **state)
{
    const char *root = fake_maps(4242, synthetic);
    struct procmaps pm;
    char path[128];

    assert_int_equal(procmaps_open(&pm, root, 4242), 0);
    check_synthetic(&pm);
    procmaps_close(&pm);
    procmaps_close(&pm); /* twice is fine */
    snprintf(path, sizeof(path), "%s/4242/maps", root);
    assert_int_equal(procmaps_open_file(&pm, path), 0);
    check_synthetic(&pm);
    procmaps_close(&pm);
    /* no such process */
    assert_int_equal(procmaps_open(&pm, root, 4243), -ENOENT);
    procmaps_close(&pm);
    fake_rm(root);
}

/* A file cut inside the numbers of its last line: the cut line is skipped. */
static void test_truncated_last_line(void **state)
{
    const char *root = fake_maps(7, "10-20 r-xp 00000000 08:01 5 /lib/a.so\n30-4");
    struct procmaps pm;
    struct procmaps_entry e;

    assert_int_equal(procmaps_open(&pm, root, 7), 0);
    assert_int_equal(procmaps_next(&pm, &e), 1);
    assert_string_equal(e.path, "/lib/a.so");
    assert_int_equal(procmaps_next(&pm, &e), 0);
    procmaps_close(&pm);
    fake_rm(root);
    /* an empty file, and a proc root too long for a path */
    root = fake_maps(8, "");
    assert_int_equal(procmaps_open(&pm, root, 8), 0);
    assert_int_equal(procmaps_next(&pm, &e), 0);
    procmaps_close(&pm);
    fake_rm(root);
    char *longroot = malloc(8192);
    assert_non_null(longroot);
    memset(longroot, 'a', 8191);
    longroot[8191] = '\0';
    assert_int_equal(procmaps_open(&pm, longroot, 1), -ENAMETOOLONG);
    assert_int_equal(procmaps_next(&pm, &e), 0);
    procmaps_close(&pm);
    free(longroot);
}

/* This process's maps through the default /proc: the test binary is mapped
 * executable, and so is the function running now. */
static void test_read_self(void **state)
{
    struct procmaps pm;
    struct procmaps_entry e;
    uintptr_t here = (uintptr_t)&test_read_self;
    int lines = 0, found = 0, r;

    assert_int_equal(procmaps_open(&pm, NULL, (uint32_t)getpid()), 0);
    while ((r = procmaps_next(&pm, &e)) > 0) {
        lines++;
        if (here >= e.start && here < e.end) {
            found++;
            assert_non_null(strchr(e.perms, 'x'));
            assert_non_null(strstr(e.path, "test_procmaps"));
            assert_true(e.inode != 0);
        }
    }
    assert_int_equal(r, 0);
    procmaps_close(&pm);
    assert_true(lines > 5);
    assert_int_equal(found, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_maps),     cmocka_unit_test(test_parse_edges),
        cmocka_unit_test(test_read_synthetic), cmocka_unit_test(test_truncated_last_line),
        cmocka_unit_test(test_read_self),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
