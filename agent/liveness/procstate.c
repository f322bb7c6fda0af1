/* A rank's process from /proc (see procstate.h). */
#include "agent/liveness/procstate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct procstate_syscall {
    long nr;
    const char *name;
};

/* The calls a blocked process sits in, and a few it is often caught in. */
static const struct procstate_syscall procstate_x86_64[] = {
    {0, "read"},
    {1, "write"},
    {3, "close"},
    {7, "poll"},
    {16, "ioctl"},
    {17, "pread64"},
    {18, "pwrite64"},
    {19, "readv"},
    {20, "writev"},
    {23, "select"},
    {24, "sched_yield"},
    {34, "pause"},
    {35, "nanosleep"},
    {42, "connect"},
    {43, "accept"},
    {44, "sendto"},
    {45, "recvfrom"},
    {46, "sendmsg"},
    {47, "recvmsg"},
    {61, "wait4"},
    {62, "kill"},
    {65, "semop"},
    {70, "msgrcv"},
    {73, "flock"},
    {74, "fsync"},
    {75, "fdatasync"},
    {128, "rt_sigtimedwait"},
    {130, "rt_sigsuspend"},
    {202, "futex"},
    {208, "io_getevents"},
    {220, "semtimedop"},
    {230, "clock_nanosleep"},
    {232, "epoll_wait"},
    {247, "waitid"},
    {257, "openat"},
    {270, "pselect6"},
    {271, "ppoll"},
    {281, "epoll_pwait"},
    {288, "accept4"},
    {299, "recvmmsg"},
    {307, "sendmmsg"},
    {426, "io_uring_enter"},
    {441, "epoll_pwait2"},
    {449, "futex_waitv"},
    {-1, NULL},
};

/* The generic table (arm64, riscv64). */
static const struct procstate_syscall procstate_aarch64[] = {
    {4, "io_getevents"},
    {22, "epoll_pwait"},
    {29, "ioctl"},
    {32, "flock"},
    {56, "openat"},
    {57, "close"},
    {63, "read"},
    {64, "write"},
    {65, "readv"},
    {66, "writev"},
    {67, "pread64"},
    {68, "pwrite64"},
    {72, "pselect6"},
    {73, "ppoll"},
    {82, "fsync"},
    {83, "fdatasync"},
    {95, "waitid"},
    {98, "futex"},
    {101, "nanosleep"},
    {115, "clock_nanosleep"},
    {124, "sched_yield"},
    {133, "rt_sigsuspend"},
    {137, "rt_sigtimedwait"},
    {188, "msgrcv"},
    {192, "semtimedop"},
    {193, "semop"},
    {202, "accept"},
    {203, "connect"},
    {206, "sendto"},
    {207, "recvfrom"},
    {211, "sendmsg"},
    {212, "recvmsg"},
    {242, "accept4"},
    {243, "recvmmsg"},
    {260, "wait4"},
    {269, "sendmmsg"},
    {426, "io_uring_enter"},
    {441, "epoll_pwait2"},
    {449, "futex_waitv"},
    {-1, NULL},
};

enum procstate_arch procstate_host_arch(void)
{
#if defined(__x86_64__)
    return PROCSTATE_ARCH_X86_64;
#elif defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)
    return PROCSTATE_ARCH_AARCH64;
#else
    return PROCSTATE_ARCH_OTHER;
#endif
}

Argus__V1__ProcState procstate_state(char letter)
{
    switch (letter) {
    case 'R':
        return ARGUS__V1__PROC_STATE__PROC_STATE_RUNNING;
    case 'S':
    case 'I': /* an idle kernel thread: not a rank, but a wait all the same */
        return ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING;
    case 'D':
        return ARGUS__V1__PROC_STATE__PROC_STATE_DISK;
    case 'T':
    case 't':
        return ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED;
    case 'Z':
        return ARGUS__V1__PROC_STATE__PROC_STATE_ZOMBIE;
    case 'X':
    case 'x':
        return ARGUS__V1__PROC_STATE__PROC_STATE_EXITED;
    default:
        return ARGUS__V1__PROC_STATE__PROC_STATE_UNKNOWN;
    }
}

/* Field `field` (1-based, >= 3) of a stat line, after the command. */
static const char *procstate_field(const char *after_comm, int field)
{
    const char *p = after_comm;

    for (int f = 3; f < field; f++) {
        while (*p == ' ')
            p++;
        if (!*p || *p == '\n')
            return NULL;
        while (*p && *p != ' ' && *p != '\n')
            p++;
    }
    while (*p == ' ')
        p++;
    return *p && *p != '\n' ? p : NULL;
}

int procstate_parse_stat(const char *line, struct procstate *st)
{
    const char *p = strrchr(line, ')'); /* the command ends at the last ')' */
    const char *f14, *f52;
    unsigned long long utime, stime;

    if (!p)
        return -EINVAL;
    p++;
    f14 = procstate_field(p, 14); /* utime, then stime */
    if (!procstate_field(p, 3) || !f14 || sscanf(f14, "%llu %llu", &utime, &stime) != 2)
        return -EINVAL;
    st->state = *procstate_field(p, 3);
    st->cpu_ticks = utime + stime;
    f52 = procstate_field(p, 52);
    st->exit_status = f52 ? atoi(f52) : -1;
    return 0;
}

const char *procstate_syscall_name(enum procstate_arch arch, long nr)
{
    const struct procstate_syscall *t = arch == PROCSTATE_ARCH_X86_64    ? procstate_x86_64
                                        : arch == PROCSTATE_ARCH_AARCH64 ? procstate_aarch64
                                                                         : NULL;

    for (; t && t->name; t++)
        if (t->nr == nr)
            return t->name;
    return NULL;
}

int procstate_parse_syscall(const char *text, enum procstate_arch arch, char *out, size_t outlen)
{
    char *end;
    long nr;
    const char *name;

    out[0] = '\0';
    if (strncmp(text, "running", 7) == 0)
        return 0;
    errno = 0;
    nr = strtol(text, &end, 10);
    if (end == text || errno)
        return -EINVAL;
    if (nr < 0) /* "-1 sp pc": blocked, but not in a system call (a stop, a fault) */
        return 0;
    name = procstate_syscall_name(arch, nr);
    if (name)
        snprintf(out, outlen, "%s", name);
    else
        snprintf(out, outlen, "syscall %ld", nr);
    return 1;
}

/* Read the start of /proc/PID/name into buf (NUL-terminated). Returns the
 * length or -errno (-ESRCH for a process that is gone). */
static ssize_t procstate_read_file(uint32_t pid, const char *name, char *buf, size_t len)
{
    char path[64];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%u/%s", pid, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    n = read(fd, buf, len - 1);
    if (n < 0)
        n = errno == ESRCH ? -ESRCH : -errno;
    close(fd);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

/* st->wait of a thread that is not running: the system call, else the
 * kernel's wait channel. Either file may be unreadable (not root, a
 * kernel without it): the wait stays "". */
static void procstate_read_wait(uint32_t pid, struct procstate *st)
{
    char buf[256];

    if (procstate_read_file(pid, "syscall", buf, sizeof(buf)) > 0 &&
        procstate_parse_syscall(buf, procstate_host_arch(), st->wait, sizeof(st->wait)) == 1)
        return;
    if (procstate_read_file(pid, "wchan", buf, sizeof(buf)) > 0 && strcmp(buf, "0") != 0)
        snprintf(st->wait, sizeof(st->wait), "%s", buf);
}

int procstate_read(uint32_t pid, struct procstate *st)
{
    char line[1024];
    ssize_t n = procstate_read_file(pid, "stat", line, sizeof(line));

    memset(st, 0, sizeof(*st));
    st->exit_status = -1;
    if (n < 0)
        return (int)n;
    if (procstate_parse_stat(line, st) < 0)
        return -EINVAL;
    if (st->state != 'R' && st->state != 'Z' && st->state != 'X')
        procstate_read_wait(pid, st);
    return 0;
}

void procstate_exit(int status, int32_t *code, int32_t *signal, bool *core)
{
    *code = -1;
    *signal = 0;
    *core = false;
    if (status < 0)
        return;
    if (WIFSIGNALED(status)) {
        *signal = WTERMSIG(status);
        *core = WCOREDUMP(status);
    } else {
        *code = WEXITSTATUS(status);
    }
}
