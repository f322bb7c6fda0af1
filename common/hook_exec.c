/* Running one action hook: see action_exec.h. */
#include "common/hook_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"

extern char **environ;

int hook_exec_check(const char *path, char *err, size_t errlen)
{
    if (path[0] == '/' && access(path, X_OK) == 0)
        return 0;
    snprintf(err, errlen, "'%s' is not an absolute path to an executable file%s%s", path,
             path[0] == '/' ? ": " : "", path[0] == '/' ? strerror(errno) : "");
    return -EINVAL;
}

/* environ followed by extra (both NULL-terminated); the strings stay
 * theirs. NULL on ENOMEM. */
static char **hook_exec_env(const char *const *extra)
{
    size_t n = 0, k = 0;
    char **env;

    while (environ[n])
        n++;
    while (extra && extra[k])
        k++;
    env = calloc(n + k + 1, sizeof(*env));
    if (!env)
        return NULL;
    memcpy(env, environ, n * sizeof(*env));
    memcpy(env + n, extra, k * sizeof(*env));
    return env;
}

/* Start path with stdin from in[0] and stdout+stderr to out[1], in its own
 * process group. The pid, or -errno. */
static pid_t hook_exec_spawn(const char *path, char **env, const int in[2], const int out[2])
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    char *argv[] = {(char *)path, NULL};
    pid_t pid = -1;
    int rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    rc = posix_spawn(&pid, path, &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc ? -rc : pid;
}

/* Feed input to fd (closed when all is written) and read the output from rfd
 * until it closes or the deadline; the first bytes into out. */
static void hook_exec_pump(int wfd, const char *input, int rfd, uint64_t deadline,
                           struct hook_exec_result *out)
{
    size_t off = 0, len = input ? strlen(input) : 0, kept = 0;
    char buf[4096];

    if (len == 0) {
        close(wfd);
        wfd = -1;
    }
    for (;;) {
        struct pollfd p[2] = {{rfd, POLLIN, 0}, {wfd, POLLOUT, 0}};
        uint64_t now = clock_mono_ns();
        if (now >= deadline || poll(p, wfd >= 0 ? 2 : 1, (int)((deadline - now) / 1000000 + 1)) < 0)
            break;
        if (wfd >= 0 && p[1].revents) {
            ssize_t w = write(wfd, input + off, len - off);
            if (w > 0)
                off += (size_t)w;
            if (off == len || (w < 0 && errno != EAGAIN && errno != EINTR)) {
                close(wfd); /* all written, or EPIPE: the hook does not read */
                wfd = -1;
            }
        }
        if (p[0].revents) {
            ssize_t r = read(rfd, buf, sizeof(buf));
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                break;
            size_t take = r > 0 && kept < HOOK_EXEC_OUTPUT ? (size_t)r : 0;
            take = take > HOOK_EXEC_OUTPUT - kept ? HOOK_EXEC_OUTPUT - kept : take;
            memcpy(out->output + kept, buf, take);
            kept += take;
        }
    }
    if (wfd >= 0)
        close(wfd);
    while (kept && (out->output[kept - 1] == '\n' || out->output[kept - 1] == ' '))
        kept--; /* the log line and the table end it themselves */
    out->output[kept] = '\0';
}

/* Wait for pid until the deadline, then kill its group. Its wait status,
 * or -ETIMEDOUT (killed). */
static int hook_exec_reap(pid_t pid, uint64_t deadline)
{
    int status;

    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return -errno;
        if (clock_mono_ns() >= deadline)
            break;
        usleep(10000);
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return -ETIMEDOUT;
}

/* The result of wait status st (or -ETIMEDOUT) into out; 0, -EIO or -ETIMEDOUT. */
static int hook_exec_status(int st, uint64_t timeout_ns, struct hook_exec_result *out)
{
    if (st == -ETIMEDOUT || st < 0) {
        out->exit_status = 128 + SIGKILL;
        snprintf(out->output, sizeof(out->output), "still running after %.1f s: killed",
                 (double)timeout_ns / 1e9);
        return -ETIMEDOUT;
    }
    out->exit_status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    return out->exit_status == 0 ? 0 : -EIO;
}

int hook_exec_run(const char *path, const char *const *env, const char *input, uint64_t timeout_ns,
                  struct hook_exec_result *out)
{
    int in[2] = {-1, -1}, pipe_out[2] = {-1, -1}, r = 0;
    char **full = hook_exec_env(env);
    pid_t pid = -ENOMEM;

    timeout_ns = timeout_ns ? timeout_ns : 30 * NSEC_PER_SEC;
    *out = (struct hook_exec_result){.exit_status = -1};
    if (full && (pipe2(in, O_CLOEXEC) < 0 || pipe2(pipe_out, O_CLOEXEC) < 0))
        pid = -errno;
    else if (full)
        pid = hook_exec_spawn(path, full, in, pipe_out);
    free(full);
    for (int i = 0; i < 2; i++) /* the child's ends */
        if ((i == 0 ? in[0] : pipe_out[1]) >= 0)
            close(i == 0 ? in[0] : pipe_out[1]);
    if (pid < 0) {
        snprintf(out->output, sizeof(out->output), "cannot run %s: %s", path, strerror((int)-pid));
        r = (int)pid;
    } else {
        uint64_t deadline = clock_mono_ns() + timeout_ns;
        fcntl(in[1], F_SETFL, O_NONBLOCK);
        hook_exec_pump(in[1], input, pipe_out[0], deadline, out);
        in[1] = -1;
        r = hook_exec_status(hook_exec_reap(pid, deadline), timeout_ns, out);
    }
    if (in[1] >= 0)
        close(in[1]);
    if (pipe_out[0] >= 0)
        close(pipe_out[0]);
    return r;
}
