/* What a rank's process is doing, from /proc: the main thread's state
 * letter, the CPU time of all its threads, the system call it is blocked
 * in (or the kernel's wait channel), and a zombie's exit status. The
 * parsers are pure (unit-tested on recorded file contents);
 * procstate_read is the only function that reads files. */
#ifndef ARGUS_AGENT_LIVENESS_PROCSTATE_H
#define ARGUS_AGENT_LIVENESS_PROCSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define PROCSTATE_WAIT_MAX 48

/* Which system call table numbers /proc/PID/syscall (its first field). */
enum procstate_arch {
    PROCSTATE_ARCH_X86_64,
    PROCSTATE_ARCH_AARCH64,
    PROCSTATE_ARCH_OTHER, /* every number is "syscall N" */
};

/* The table of the machine the agent was built for. */
enum procstate_arch procstate_host_arch(void);

/* A process as one read of /proc saw it. */
struct procstate {
    char state;                    /* the main thread's state letter (R, S, D, T, t, Z, X, ...) */
    uint64_t cpu_ticks;            /* utime + stime of all threads, in clock ticks */
    int exit_status;               /* field 52 (a waitpid status), -1 when absent */
    char wait[PROCSTATE_WAIT_MAX]; /* the syscall or wait channel; "" when running */
};

/* The ProcState of a /proc state letter (UNKNOWN for one it does not know). */
Argus__V1__ProcState procstate_state(char letter);

/* Parse a /proc/PID/stat line (the command may hold spaces and
 * parentheses) into st->state, st->cpu_ticks and st->exit_status (-1 when
 * the line has fewer than 52 fields). Returns 0 or -EINVAL. */
int procstate_parse_stat(const char *line, struct procstate *st);

/* The name of system call nr on arch ("read", "futex"...), or NULL when the
 * table has none. Static strings. */
const char *procstate_syscall_name(enum procstate_arch arch, long nr);

/* Parse /proc/PID/syscall into out: the system call's name ("syscall N"
 * for one the table lacks) when the thread is blocked in one. Returns 1 with
 * the name, 0 when the thread is running or not in a system call (out is
 * ""), -EINVAL for text it cannot parse. */
int procstate_parse_syscall(const char *text, enum procstate_arch arch, char *out, size_t outlen);

/* Read /proc/PID/stat, then, unless the thread runs, /proc/PID/syscall or
 * else /proc/PID/wchan ("0" means none) for st->wait. Returns 0, -ESRCH
 * when the process is gone, or another -errno / -EINVAL. */
int procstate_read(uint32_t pid, struct procstate *st);

/* A waitpid status split as RankStatus wants it: the exit code 0-255, or
 * -1 when a signal ended it (then *signal and *core) or status < 0
 * (unknown: *signal = 0). */
void procstate_exit(int status, int32_t *code, int32_t *signal, bool *core);

#endif
