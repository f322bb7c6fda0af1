/* agent/liveness/procstate: /proc/PID/stat lines with awkward commands,
 * zombies' exit statuses, /proc/PID/syscall texts of both tables, waitpid
 * statuses split; and procstate_read on a real child blocked in read,
 * stopped, and killed but not reaped. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/liveness/procstate.h"

/* A recorded line of a stopped python rank (52 fields; exit status 0). */
static const char stat_stopped[] =
    "4242 (pt_main_thread) T 4200 4200 31 0 -1 1077936192 81234 0 3 0 1250 310 0 0 20 0 12 0 "
    "1058338 3133440000 408000 18446744073709551615 94209952641024 94209952660905 "
    "140721783592336 0 0 0 0 16781312 134234626 0 0 0 17 3 0 0 0 0 0 94209952676912 "
    "94209952678528 94210299527168 140721783597695 140721783597715 140721783597715 "
    "140721783599083 0\n";

static void test_parse_stat(void **state)
{
    struct procstate st;
    char zombie[sizeof(stat_stopped)];

    assert_int_equal(procstate_parse_stat(stat_stopped, &st), 0);
    assert_int_equal(st.state, 'T');
    assert_int_equal(st.cpu_ticks, 1250 + 310);
    assert_int_equal(st.exit_status, 0);
    assert_int_equal(procstate_state(st.state), ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED);
    /* a command with spaces and parentheses; an old kernel's short line */
    assert_int_equal(procstate_parse_stat("7 (a) b (c) D 1 7 7 0 -1 0 0 0 0 0 5 6 0 0\n", &st), 0);
    assert_int_equal(st.state, 'D');
    assert_int_equal(st.cpu_ticks, 11);
    assert_int_equal(st.exit_status, -1);
    /* a zombie killed by SIGKILL: the last field is the waitpid status */
    snprintf(zombie, sizeof(zombie), "%s", stat_stopped);
    zombie[strlen("4242 (pt_main_thread) ")] = 'Z';
    memcpy(strrchr(zombie, ' ') + 1, "9\n", 3);
    assert_int_equal(procstate_parse_stat(zombie, &st), 0);
    assert_int_equal(st.state, 'Z');
    assert_int_equal(st.exit_status, 9);
    assert_int_equal(procstate_parse_stat("12 (x) S 1 2 3", &st), -EINVAL);
    assert_int_equal(procstate_parse_stat("no command at all", &st), -EINVAL);
}

static void test_states(void **state)
{
    assert_int_equal(procstate_state('R'), ARGUS__V1__PROC_STATE__PROC_STATE_RUNNING);
    assert_int_equal(procstate_state('S'), ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING);
    assert_int_equal(procstate_state('D'), ARGUS__V1__PROC_STATE__PROC_STATE_DISK);
    assert_int_equal(procstate_state('t'), ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED);
    assert_int_equal(procstate_state('Z'), ARGUS__V1__PROC_STATE__PROC_STATE_ZOMBIE);
    assert_int_equal(procstate_state('X'), ARGUS__V1__PROC_STATE__PROC_STATE_EXITED);
    assert_int_equal(procstate_state('?'), ARGUS__V1__PROC_STATE__PROC_STATE_UNKNOWN);
}

static void test_parse_syscall(void **state)
{
    char out[PROCSTATE_WAIT_MAX];
    const enum procstate_arch x86 = PROCSTATE_ARCH_X86_64, arm = PROCSTATE_ARCH_AARCH64;

    assert_int_equal(procstate_parse_syscall("0 0x3 0x7f89a4a2d000 0x20000 0x7f89a4ab8b60 "
                                             "0xffffffff 0x0 0x7ffdc55e88d8 0x7f89a4ba12ad\n",
                                             x86, out, sizeof(out)),
                     1);
    assert_string_equal(out, "read");
    assert_int_equal(
        procstate_parse_syscall("202 0x7f 0x80 0 0 0 0 0x7ffd 0x7f8\n", x86, out, sizeof(out)), 1);
    assert_string_equal(out, "futex");
    assert_int_equal(
        procstate_parse_syscall("73 0x1 0x2 0 0 0 0 0x7ffd 0x7f8\n", arm, out, sizeof(out)), 1);
    assert_string_equal(out, "ppoll");
    assert_int_equal(
        procstate_parse_syscall("63 0x1 0x2 0 0 0 0 0x7ffd 0x7f8\n", arm, out, sizeof(out)), 1);
    assert_string_equal(out, "read");
    assert_int_equal(procstate_parse_syscall("999 0 0 0 0 0 0 0x1 0x2\n", x86, out, sizeof(out)),
                     1);
    assert_string_equal(out, "syscall 999");
    assert_int_equal(
        procstate_parse_syscall("7 0 0 0 0 0 0 0x1 0x2\n", PROCSTATE_ARCH_OTHER, out, sizeof(out)),
        1);
    assert_string_equal(out, "syscall 7");
    assert_int_equal(procstate_parse_syscall("running\n", x86, out, sizeof(out)), 0);
    assert_string_equal(out, "");
    /* blocked outside a system call (a stop at signal delivery) */
    assert_int_equal(procstate_parse_syscall("-1 0x7ffd5 0x7f8a\n", x86, out, sizeof(out)), 0);
    assert_int_equal(procstate_parse_syscall("", x86, out, sizeof(out)), -EINVAL);
    assert_int_equal(procstate_parse_syscall("garbage", x86, out, sizeof(out)), -EINVAL);
    assert_string_equal(procstate_syscall_name(x86, 232), "epoll_wait");
    assert_string_equal(procstate_syscall_name(arm, 98), "futex");
    assert_null(procstate_syscall_name(x86, 100000));
}

static void test_exit_status(void **state)
{
    int32_t code, sig;
    bool core;

    procstate_exit(3 << 8, &code, &sig, &core);
    assert_int_equal(code, 3);
    assert_int_equal(sig, 0);
    procstate_exit(0, &code, &sig, &core);
    assert_int_equal(code, 0);
    assert_int_equal(sig, 0);
    procstate_exit(SIGKILL, &code, &sig, &core);
    assert_int_equal(code, -1);
    assert_int_equal(sig, SIGKILL);
    assert_false(core);
    procstate_exit(SIGABRT | 0x80, &code, &sig, &core);
    assert_int_equal(sig, SIGABRT);
    assert_true(core);
    procstate_exit(-1, &code, &sig, &core);
    assert_int_equal(code, -1);
    assert_int_equal(sig, 0);
}

/* Read pid until its state letter is want (at most 5 s). */
static struct procstate wait_state(pid_t pid, char want)
{
    struct procstate st = {0};

    for (int i = 0; i < 500; i++) {
        assert_int_equal(procstate_read((uint32_t)pid, &st), 0);
        if (st.state == want)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    assert_int_equal(st.state, want);
    return st;
}

static void test_read_child(void **state)
{
    int fds[2];
    pid_t pid;
    char c;
    struct procstate st;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[1]);
        _exit(read(fds[0], &c, 1) == 1 ? 0 : 1); /* blocks: nobody writes */
    }
    st = wait_state(pid, 'S');
    if (geteuid() == 0 && procstate_host_arch() != PROCSTATE_ARCH_OTHER)
        assert_string_equal(st.wait, "read"); /* /proc/PID/syscall needs ptrace rights */
    kill(pid, SIGSTOP);
    st = wait_state(pid, 'T');
    kill(pid, SIGKILL);
    st = wait_state(pid, 'Z');
    assert_int_equal(st.exit_status, SIGKILL);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_int_equal(procstate_read((uint32_t)pid, &st), -ESRCH);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_stat),    cmocka_unit_test(test_states),
        cmocka_unit_test(test_parse_syscall), cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_read_child),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
