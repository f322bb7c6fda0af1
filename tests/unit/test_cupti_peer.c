/* agent/sources/cupti_peer: /proc/PID/status parsed (Tgid, effective uid,
 * NSpid), and hellos checked against their peer: our own pid, our thread,
 * our pid in a nested namespace (a fake proc tree) pass; another process's
 * pid, a uid that does not own the process, a peer that is gone fail. The
 * socket group by name and number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "agent/sources/cupti_peer.h"

static void test_parse_status(void **state)
{
    struct cupti_peer_proc p;

    assert_int_equal(cupti_peer_parse_status("Name:\tpython3\nTgid:\t4242\nPid:\t4243\n"
                                             "Uid:\t1000\t1001\t1001\t1001\nGid:\t5\t5\t5\t5\n"
                                             "NSpid:\t4243\t17\n",
                                             &p),
                     0);
    assert_int_equal(p.tgid, 4242);
    assert_int_equal(p.euid, 1001);
    assert_int_equal(p.n_nspid, 2);
    assert_int_equal(p.nspid[0], 4243);
    assert_int_equal(p.nspid[1], 17);
    assert_int_equal(cupti_peer_parse_status("Name:\tx\nTgid:\t1\n", &p), -EINVAL);
    assert_int_equal(cupti_peer_parse_status("Uid:\t0\t0\t0\t0\n", &p), -EINVAL);
}

static void *thread_tid(void *arg)
{
    *(uint32_t *)arg = (uint32_t)syscall(SYS_gettid);
    sleep(2); /* alive while the check runs */
    return NULL;
}

static void test_check_live(void **state)
{
    uint32_t me = (uint32_t)getpid(), uid = (uint32_t)geteuid(), tid = 0;
    char why[160];
    pthread_t th;

    assert_int_equal(cupti_peer_check("/proc", me, uid, me, why, sizeof(why)), 0);
    assert_int_equal(pthread_create(&th, NULL, thread_tid, &tid), 0);
    while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
        usleep(1000);
    assert_int_equal(cupti_peer_check("/proc", me, uid, tid, why, sizeof(why)), 0);
    pthread_join(th, NULL);
    assert_int_equal(cupti_peer_check("/proc", me, uid, 1, why, sizeof(why)), -EPERM);
    assert_non_null(strstr(why, "hello claims pid 1 but the peer is pid"));
    assert_int_equal(cupti_peer_check("/proc", me, uid + 1, me, why, sizeof(why)), -EPERM);
    assert_non_null(strstr(why, "is not the owner"));
    assert_int_equal(cupti_peer_check("/proc", 0, uid, me, why, sizeof(why)), -ESRCH);
}

/* A peer in a nested pid namespace names itself by its inner pid. */
static void test_check_namespaced(void **state)
{
    char root[] = "/tmp/argus-test-peer-XXXXXX", path[128], why[160];
    FILE *f;

    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof(path), "%s/4243", root);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/4243/status", root);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("Tgid:\t4243\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4243\t7\n", f);
    fclose(f);
    assert_int_equal(cupti_peer_check(root, 4243, 1000, 7, why, sizeof(why)), 0);
    assert_int_equal(cupti_peer_check(root, 4243, 1000, 8, why, sizeof(why)), -EPERM);
    assert_int_equal(cupti_peer_check(root, 4243, 0, 7, why, sizeof(why)), -EPERM);
    unlink(path);
    snprintf(path, sizeof(path), "%s/4243", root);
    rmdir(path);
    rmdir(root);
}

static void test_group(void **state)
{
    gid_t gid;
    char why[160];

    assert_int_equal(cupti_peer_group("", &gid, why, sizeof(why)), 0);
    assert_int_equal(gid, getegid());
    assert_int_equal(cupti_peer_group("4321", &gid, why, sizeof(why)), 0);
    assert_int_equal(gid, 4321);
    assert_int_equal(cupti_peer_group("root", &gid, why, sizeof(why)), 0);
    assert_int_equal(gid, 0);
    assert_int_equal(cupti_peer_group("no-such-group-x", &gid, why, sizeof(why)), -ENOENT);
    assert_string_equal(why, "cupti.socket_group 'no-such-group-x': no such group");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_status),
        cmocka_unit_test(test_check_live),
        cmocka_unit_test(test_check_namespaced),
        cmocka_unit_test(test_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
