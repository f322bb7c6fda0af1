/* Rank discovery's process table (agent/discovery/discovery.c) on a fake
 * /proc tree (scan, exit, pid reuse, exec, children, deny list, host paths
 * and resources), its options, and scans of the real /proc with spawned
 * processes (one in another network namespace). Ranks from their
 * communicator: test_discovery_comm.c; the environ parser:
 * test_discovery_environ.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/discovery/discovery.h"
#include "tests/unit/discovery_fixture.h"
#include "common/log.h"

static void test_fake_scan_exit_reuse(void **state)
{
    struct fake *f = *state;
    struct discovery_stats st;

    FAKE(f, 1, 0, 1, "init", "PATH=/bin");
    FAKE(f, 100, 1, 500, "python3", "RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=3", "ARGUS_JOB=j1",
         "TP_SIZE=2");
    FAKE(f, 200, 1, 600, "a) (b", "RANK=4", "WORLD_SIZE=8", "ARGUS_JOB=j1");
    FAKE(f, 300, 1, 700, "python3", "PATH=/bin");
    assert_int_equal(scan(f), 2);
    assert_int_equal(f->ev.news, 2);
    const struct rank_info *ri = discovery_find(f->d, 100);
    assert_non_null(ri);
    assert_int_equal(ri->start_time, 500);
    assert_int_equal(ri->ppid, 1);
    assert_string_equal(ri->comm, "python3");
    assert_int_equal(ri->tp, 1);
    assert_int_equal(ri->dp, 1);
    char want_root[128];
    snprintf(want_root, sizeof(want_root), "%s/100/root", f->root);
    assert_string_equal(ri->root, want_root);
    assert_string_equal(discovery_find(f->d, 200)->comm, "a) (b");
    assert_null(discovery_find(f->d, 300));
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.processes, 4);
    assert_int_equal(st.evaluated, 4);

    /* a second scan reads no environ and reports nothing new */
    assert_int_equal(scan(f), 2);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.evaluated, 4);
    assert_int_equal(f->ev.news, 2);

    /* exit */
    fake_rm(f, 200);
    assert_int_equal(scan(f), 1);
    assert_int_equal(f->ev.exits, 1);
    assert_int_equal(f->ev.last_exit_pid, 200);

    /* pid reuse: same pid, new start time, another rank */
    FAKE(f, 100, 1, 900, "python3", "RANK=5", "WORLD_SIZE=8", "ARGUS_JOB=j2");
    assert_int_equal(scan(f), 1);
    assert_int_equal(f->ev.exits, 2);
    assert_int_equal(f->ev.last_exit_pid, 100);
    assert_int_equal(f->ev.news, 3);
    assert_int_equal(discovery_find(f->d, 100)->rank, 5);
    assert_string_equal(discovery_find(f->d, 100)->job, "j2");
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.pid_reused, 1);

    /* a zombie is gone */
    fake_proc(f, 100, 1, 900, "python3", 'Z', (const char *const[]){NULL});
    assert_int_equal(scan(f), 0);
    assert_int_equal(f->ev.exits, 3);
}

static void test_fake_children_and_deny(void **state)
{
    struct fake *f = *state;
#define RANK0 "RANK=0", "WORLD_SIZE=2", "ARGUS_JOB=j"

    /* a worker with a lower pid than its parent (pid wrap) and a grandchild */
    FAKE(f, 50, 100, 510, "python3", RANK0);
    FAKE(f, 100, 1, 500, "python3", RANK0);
    FAKE(f, 40, 50, 520, "python3", RANK0);
    /* torchrun carries RANK but is denied; its worker is the rank */
    FAKE(f, 200, 1, 400, "torchrun", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=j");
    FAKE(f, 201, 200, 410, "python3", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=j");
    /* a shell script: comm is its name, exe the shell; its python is the rank */
    FAKE(f, 400, 1, 420, "train.sh", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=s");
    FAKE(f, 401, 400, 430, "python3", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=s");
    char link[128];
    snprintf(link, sizeof(link), "%s/400/exe", f->root);
    assert_int_equal(symlink("/usr/bin/bash", link), 0);
    /* timeout forks its command: the wrapper is denied, its python the rank */
    FAKE(f, 600, 1, 440, "timeout", "RANK=0", "WORLD_SIZE=2", "ARGUS_JOB=t");
    FAKE(f, 601, 600, 450, "python3", "RANK=0", "WORLD_SIZE=2", "ARGUS_JOB=t");
    /* a child with another rank is a rank (a launcher that is itself one) */
    FAKE(f, 300, 100, 530, "python3", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=other");
    assert_int_equal(scan(f), 5);
    assert_null(discovery_find(f->d, 600));
    assert_non_null(discovery_find(f->d, 601));
    assert_null(discovery_find(f->d, 400));
    assert_non_null(discovery_find(f->d, 401));
    assert_non_null(discovery_find(f->d, 100));
    assert_null(discovery_find(f->d, 50));
    assert_null(discovery_find(f->d, 40));
    assert_null(discovery_find(f->d, 200));
    assert_non_null(discovery_find(f->d, 201));
    assert_non_null(discovery_find(f->d, 300));
    struct discovery_stats st;
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.children, 2);
    assert_int_equal(st.denied, 3);
    assert_int_equal(st.ranks, 5);

    assert_int_equal(st.duplicates, 0);
    /* two unrelated processes claiming one rank: both tracked, counted */
    FAKE(f, 500, 1, 540, "python3", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=other");
    assert_int_equal(scan(f), 6);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.duplicates, 1);
    fake_rm(f, 500);

    /* with an empty deny list torchrun is the rank and its worker a child */
    struct discovery_options o = {.proc_root = f->root, .node = "n", .deny_comms = ""};
    struct discovery *d2 = discovery_new(&o);
    assert_non_null(d2);
    assert_int_equal(discovery_scan(d2, NULL, NULL), 5);
    assert_non_null(discovery_find(d2, 200));
    assert_null(discovery_find(d2, 201));
    assert_non_null(discovery_find(d2, 600));
    assert_null(discovery_find(d2, 601));
    assert_non_null(discovery_find(d2, 400));
    assert_null(discovery_find(d2, 401));
    discovery_free(d2);
#undef RANK0
}

static void test_fake_exec_and_exit_events(void **state)
{
    struct fake *f = *state;

    FAKE(f, 100, 1, 500, "bash", "RANK=0", "WORLD_SIZE=1", "ARGUS_JOB=j");
    FAKE(f, 101, 1, 501, "sleep", "PATH=/bin");
    assert_int_equal(scan(f), 0);
    /* bash exec'd python: same pid and start time, new image */
    FAKE(f, 100, 1, 500, "python3", "RANK=0", "WORLD_SIZE=1", "ARGUS_JOB=j", "X=1");
    assert_int_equal(discovery_check_pid(f->d, 100, &callbacks, &f->ev), 1);
    assert_int_equal(f->ev.news, 1);
    /* a repeated event for the same image changes nothing */
    assert_int_equal(discovery_check_pid(f->d, 100, &callbacks, &f->ev), 1);
    assert_int_equal(f->ev.news, 1);
    assert_int_equal(f->ev.exits, 0);
    /* the scan sees a changed comm and re-reads: without an exec event */
    FAKE(f, 101, 1, 501, "python3", "RANK=0", "WORLD_SIZE=1", "ARGUS_JOB=k");
    assert_int_equal(scan(f), 2);
    assert_int_equal(f->ev.news, 2);
    assert_int_equal(f->ev.last_new_pid, 101);
    /* an exec into another rank: exit of the old image, then the new one */
    FAKE(f, 100, 1, 500, "python3", "RANK=0", "WORLD_SIZE=1", "ARGUS_JOB=j2");
    assert_int_equal(discovery_check_pid(f->d, 100, &callbacks, &f->ev), 1);
    assert_int_equal(f->ev.exits, 1);
    assert_string_equal(f->ev.last_new.job, "j2");
    /* exit event while /proc still shows it alive (a thread): kept */
    assert_int_equal(discovery_exit_pid(f->d, 100, &callbacks, &f->ev), 0);
    assert_non_null(discovery_find(f->d, 100));
    fake_rm(f, 100);
    assert_int_equal(discovery_exit_pid(f->d, 100, &callbacks, &f->ev), 1);
    assert_int_equal(f->ev.exits, 2);
    assert_null(discovery_find(f->d, 100));
    assert_int_equal(discovery_exit_pid(f->d, 100, &callbacks, &f->ev), 0);
    /* exec event for a pid that is already gone */
    assert_int_equal(discovery_check_pid(f->d, 4242, &callbacks, &f->ev), 0);
}

/* A scan that lands inside an exec: comm already the new image's, environ
 * still empty. The next scan reads it again; a kernel thread is not re-read. */
static void test_fake_scan_during_exec(void **state)
{
    struct fake *f = *state;
    struct discovery_stats st;
    static const char kthread[] = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 "
                                  "3 0 0 18446744073709551615\n";

    FAKE(f, 100, 1, 500, "python3", "X=1");
    fake_write(f, 100, "environ", "", 0);
    fake_write(f, 2, "stat", kthread, sizeof(kthread) - 1);
    fake_write(f, 2, "environ", "", 0);
    assert_int_equal(scan(f), 0);
    discovery_get_stats(f->d, &st);
    uint64_t evaluated = st.evaluated;
    assert_int_equal(evaluated, 2);
    /* still empty: read again, nothing else changes */
    assert_int_equal(scan(f), 0);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.evaluated, evaluated);
    assert_int_equal(f->ev.news, 0);
    /* the exec finished: the same comm, now with its environment */
    FAKE(f, 100, 1, 500, "python3", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=j");
    assert_int_equal(scan(f), 1);
    assert_int_equal(f->ev.news, 1);
    assert_int_equal(f->ev.last_new_pid, 100);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.evaluated, evaluated + 1); /* the kernel thread was not read again */
    /* a process whose environment stays empty is given up after a few scans */
    FAKE(f, 101, 1, 501, "python3", "X=1");
    fake_write(f, 101, "environ", "", 0);
    for (int i = 0; i < 8; i++)
        scan(f);
    FAKE(f, 101, 1, 501, "python3", "RANK=0", "WORLD_SIZE=2", "ARGUS_JOB=j");
    assert_int_equal(scan(f), 1);
    assert_null(discovery_find(f->d, 101));
}

static void test_fake_reject_warns_once(void **state)
{
    struct fake *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);

    log_set_stream(mem);
    FAKE(f, 100, 1, 500, "python3", "RANK=abc", "WORLD_SIZE=8");
    assert_int_equal(scan(f), 0);
    assert_int_equal(scan(f), 0);
    log_set_stream(NULL);
    fclose(mem);
    assert_non_null(strstr(text, "pid 100 (python3) is not tracked: RANK is not a number "
                                 "[invalid_environ]"));
    assert_null(strstr(strstr(text, "not tracked") + 1, "not tracked"));
    free(text);
    struct discovery_stats st;
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.rejected, 1);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_INVALID], 1);
}

static void test_fake_host_path_and_resource(void **state)
{
    struct fake *f = *state;
    char buf[256], want[256];

    FAKE(f, 100, 1, 500, "python3", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "ARGUS_JOB=j1",
         "CUDA_VISIBLE_DEVICES=6,7", "TORCHELASTIC_RESTART_COUNT=2");
    assert_int_equal(scan(f), 1);
    const struct rank_info *ri = discovery_find(f->d, 100);
    /* a path as the process sees it, opened under its root */
    snprintf(want, sizeof(want), "%s/100/root/usr/lib/libnccl.so.2", f->root);
    assert_int_equal(discovery_host_path(ri, "/usr/lib/libnccl.so.2", buf, sizeof(buf)),
                     strlen(want));
    assert_string_equal(buf, want);
    assert_int_equal(discovery_host_path(ri, "lib.so", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(discovery_host_path(ri, "/usr/lib/x", buf, 8), -ENAMETOOLONG);

    Argus__V1__Resource r;
    discovery_fill_resource(ri, &r);
    assert_string_equal(r.job, "j1");
    assert_string_equal(r.node, "node1");
    assert_int_equal(r.rank, 3);
    assert_int_equal(r.local_rank, 1);
    assert_int_equal(r.gpu, 7);
    assert_int_equal(r.pid, 100);
    assert_int_equal(r.restart, 2);
    assert_true(r.job == ri->job); /* points into ri */
    /* it packs */
    uint8_t packed[512];
    assert_true(argus__v1__resource__get_packed_size(&r) < sizeof(packed));
    assert_true(argus__v1__resource__pack(&r, packed) > 0);
}

static void test_options(void **state)
{
    struct discovery_options o = {.deny_comms = "a,b,averyveryverylongcommname"};
    errno = 0;
    assert_null(discovery_new(&o));
    assert_int_equal(errno, EINVAL);
    struct discovery *d = discovery_new(NULL);
    assert_non_null(d);
    discovery_free(d);
    discovery_free(NULL);
    struct discovery_options missing = {.proc_root = "/nonexistent-argus"};
    d = discovery_new(&missing);
    assert_int_equal(discovery_scan(d, NULL, NULL), -ENOENT);
    discovery_free(d);
}

/* --- the real /proc -------------------------------------------------------------- */

static pid_t spawn_sleep(char *const env[])
{
    char *argv[] = {"sleep", "30", NULL};
    pid_t pid;
    assert_int_equal(posix_spawnp(&pid, "sleep", NULL, NULL, argv, env), 0);
    /* wait until the exec is done: posix_spawn returns when the new image
     * replaces the old, before its environment is laid out */
    for (int i = 0;; i++) {
        char path[64], buf[64];
        snprintf(path, sizeof(path), "/proc/%d/environ", pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
        if (f)
            fclose(f);
        if (n > 0)
            break;
        assert_true(i < 3000); /* 30 s */
        usleep(10000);
    }
    return pid;
}

/* sleep with env in a new network namespace (another "node" on this
 * kernel); 0 when namespaces cannot be made here (not root). */
static pid_t spawn_sleep_other_netns(char *const env[])
{
    char *argv[] = {"sleep", "30", NULL};
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        if (unshare(CLONE_NEWNET) < 0)
            _exit(3);
        execve("/bin/sleep", argv, env);
        _exit(4);
    }
    for (int i = 0;; i++) {
        char path[64], buf[64] = "";
        if (waitpid(pid, &status, WNOHANG) == pid)
            return 0; /* unshare or exec failed */
        snprintf(path, sizeof(path), "/proc/%d/environ", pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        if (n > 0 && strcmp(buf, env[0]) == 0) /* the new image's environment is laid out */
            return pid;
        assert_true(i < 3000);
        usleep(10000);
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_real_proc(void **state)
{
    char *env_a[] = {"PATH=/usr/bin:/bin", "RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=3", "ARGUS_JOB=j1",
                     "ARGUS_TP_SIZE=2",    NULL};
    char *env_b[] = {"PATH=/usr/bin:/bin", "RANK=6", "WORLD_SIZE=8", "LOCAL_RANK=6", "ARGUS_JOB=j1",
                     "ARGUS_TP_SIZE=2",    NULL};
    char *env_plain[] = {"PATH=/usr/bin:/bin", "WORLD_SIZE=8", NULL};
    char *env_bad[] = {"PATH=/usr/bin:/bin", "RANK=abc", "WORLD_SIZE=8", NULL};
    struct events ev = {0};
    struct discovery_options o = {.node = "real"};
    struct discovery *d = discovery_new(&o);
    pid_t a = spawn_sleep(env_a), b = spawn_sleep(env_b);
    pid_t plain = spawn_sleep(env_plain), bad = spawn_sleep(env_bad);

    uint64_t t0 = now_ns();
    int ranks = discovery_scan(d, &callbacks, &ev);
    uint64_t t1 = now_ns();
    assert_true(ranks >= 2); /* other ranks may run on this machine */
    uint64_t t2 = now_ns();
    discovery_scan(d, &callbacks, &ev);
    uint64_t t3 = now_ns();
    struct discovery_stats st;
    discovery_get_stats(d, &st);
    printf("# real /proc: %" PRIu64 " processes, first scan %.2f ms, steady scan %.2f ms\n",
           st.processes, (double)(t1 - t0) / 1e6, (double)(t3 - t2) / 1e6);

    const struct rank_info *ra = discovery_find(d, (uint32_t)a);
    assert_non_null(ra);
    assert_string_equal(ra->job, "j1");
    assert_int_equal(ra->rank, 3);
    assert_int_equal(ra->tp, 1);
    assert_int_equal(ra->dp, 1);
    assert_int_equal(ra->dp_size, 4);
    assert_string_equal(ra->comm, "sleep");
    assert_string_equal(ra->node, "real");
    assert_non_null(strstr(ra->exe, "sleep"));
    assert_true(ra->start_time > 0);
    assert_int_equal(discovery_find(d, (uint32_t)b)->rank, 6);
    assert_int_equal(discovery_find(d, (uint32_t)b)->tp, 0);
    assert_int_equal(discovery_find(d, (uint32_t)b)->dp, 3);
    assert_null(discovery_find(d, (uint32_t)plain));
    assert_null(discovery_find(d, (uint32_t)bad));

    int exits = ev.exits;
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    discovery_scan(d, &callbacks, &ev);
    assert_int_equal(ev.exits, exits + 1);
    assert_int_equal(ev.last_exit_pid, (uint32_t)a);
    assert_null(discovery_find(d, (uint32_t)a));
    assert_non_null(discovery_find(d, (uint32_t)b));

    /* a zombie (killed, not yet reaped) counts as exited */
    kill(b, SIGKILL);
    usleep(50000);
    discovery_scan(d, &callbacks, &ev);
    assert_null(discovery_find(d, (uint32_t)b));
    waitpid(b, NULL, 0);
    kill(plain, SIGKILL);
    kill(bad, SIGKILL);
    waitpid(plain, NULL, 0);
    waitpid(bad, NULL, 0);
    discovery_free(d);
}

/* discovery.netns = own: a rank in another network namespace is another
 * node's; it is left alone and counted. "any" tracks both. */
static void test_real_netns(void **state)
{
    char *env_mine[] = {"PATH=/usr/bin:/bin", "RANK=0", "WORLD_SIZE=2", "ARGUS_JOB=jn", NULL};
    char *env_other[] = {"PATH=/usr/bin:/bin", "RANK=1", "WORLD_SIZE=2", "ARGUS_JOB=jn", NULL};
    struct events ev = {0};
    struct discovery_stats st;
    pid_t other = spawn_sleep_other_netns(env_other);

    (void)state;
    if (!other)
        skip(); /* "cannot make a network namespace (not root?)" */
    pid_t mine = spawn_sleep(env_mine);
    struct discovery_options own = {.node = "real", .netns_own = true}, any = {.node = "real"};
    struct discovery *d = discovery_new(&own), *all = discovery_new(&any);

    assert_non_null(d);
    discovery_scan(d, &callbacks, &ev);
    discovery_scan(all, &callbacks, &ev);
    assert_non_null(discovery_find(d, (uint32_t)mine));
    assert_null(discovery_find(d, (uint32_t)other));
    discovery_get_stats(d, &st);
    assert_true(st.other_netns >= 1);
    assert_non_null(discovery_find(all, (uint32_t)mine));
    assert_non_null(discovery_find(all, (uint32_t)other));
    discovery_get_stats(all, &st);
    assert_int_equal(st.other_netns, 0);
    /* an exec event does not change that */
    assert_int_equal(discovery_check_pid(d, (uint32_t)other, &callbacks, &ev), 0);
    kill(mine, SIGKILL);
    kill(other, SIGKILL);
    waitpid(mine, NULL, 0);
    waitpid(other, NULL, 0);
    discovery_free(d);
    discovery_free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fake_scan_exit_reuse, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_children_and_deny, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_exec_and_exit_events, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_scan_during_exec, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_reject_warns_once, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_host_path_and_resource, fake_setup,
                                        fake_teardown),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_real_proc),
        cmocka_unit_test(test_real_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
