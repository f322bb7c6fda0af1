/* What the process table's tests share (test_discovery,
 * test_discovery_comm): a fake /proc tree in a temporary directory (stat and
 * environ of made-up processes), a discovery over it per test, and the
 * callbacks' record of what discovery said. Everything is static: each test
 * binary takes what it uses. */
#ifndef ARGUS_TESTS_DISCOVERY_FIXTURE_H
#define ARGUS_TESTS_DISCOVERY_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "agent/discovery/discovery.h"

/* Join NULL-terminated "K=V" strings into a NUL-separated environ. */
static inline size_t env_build(char *buf, size_t cap, const char *const *vars)
{
    size_t len = 0;
    for (; *vars; vars++) {
        size_t n = strlen(*vars) + 1;
        assert_true(len + n <= cap);
        memcpy(buf + len, *vars, n);
        len += n;
    }
    return len;
}

/* --- a fake /proc tree ------------------------------------------------------- */

struct events {
    int news, exits;
    uint32_t last_new_pid, last_exit_pid;
    struct rank_info last_new;
};

static inline void on_new(void *ctx, const struct rank_info *ri)
{
    struct events *ev = ctx;
    ev->news++;
    ev->last_new_pid = ri->pid;
    ev->last_new = *ri;
}

static inline void on_exit_cb(void *ctx, const struct rank_info *ri)
{
    struct events *ev = ctx;
    ev->exits++;
    ev->last_exit_pid = ri->pid;
}

static const struct discovery_callbacks callbacks = {on_new, on_exit_cb, NULL};

struct fake {
    char root[64];
    struct discovery *d;
    struct events ev;
};

static inline void fake_write(const struct fake *f, uint32_t pid, const char *name,
                              const char *data, size_t len)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%u", f->root, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%u/%s", f->root, pid, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

/* One process: stat with comm, state, ppid and start time, and an environ. */
static inline void fake_proc(const struct fake *f, uint32_t pid, uint32_t ppid, uint64_t start,
                             const char *comm, char state, const char *const *env)
{
    char stat[512], envbuf[4096];
    int n = snprintf(stat, sizeof(stat),
                     "%u (%s) %c %u %u %u 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 %llu 1000 "
                     "200 18446744073709551615\n",
                     pid, comm, state, ppid, pid, pid, (unsigned long long)start);
    fake_write(f, pid, "stat", stat, (size_t)n);
    fake_write(f, pid, "environ", envbuf, env_build(envbuf, sizeof(envbuf), env));
}

#define FAKE(f, pid, ppid, start, comm, ...)                                                       \
    fake_proc((f), (pid), (ppid), (start), (comm), 'S', (const char *const[]){__VA_ARGS__, NULL})

static inline void fake_rm(const struct fake *f, uint32_t pid)
{
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/%u'", f->root, pid);
    assert_int_equal(system(cmd), 0);
}

static inline int fake_setup(void **state)
{
    struct fake *f = calloc(1, sizeof(*f));
    strcpy(f->root, "/tmp/argus-test-proc-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    struct discovery_options o = {.proc_root = f->root, .node = "node1"};
    f->d = discovery_new(&o);
    assert_non_null(f->d);
    *state = f;
    return 0;
}

static inline int fake_teardown(void **state)
{
    struct fake *f = *state;
    char cmd[128];
    discovery_free(f->d);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static inline int scan(struct fake *f)
{
    return discovery_scan(f->d, &callbacks, &f->ev);
}

#endif
