/* collector/alerts/sinks/exec: run path (no shell, its own process group)
 * with the event on stdin and ARGUS_ALERT_{ID,JOB,STATUS,CAUSE,RANKS,NODE,
 * GPU,LEVEL,SUBJECT,SUMMARY,REPORT_ID,REPORT_URL} in its environment; delivered
 * when it exits 0 within alerts.exec_timeout; at the timeout the whole group
 * is killed (SIGKILL). One run per event, in order. Its ops are a row of the
 * registration table (sinks.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "collector/alerts/sinks/sink.h"
#include "common/clock.h"

extern char **environ;

/* An absolute path to a file we may execute. */
static int exec_check(const char *target, char *err, size_t errlen)
{
    if (target[0] == '/' && access(target, X_OK) == 0)
        return 0;
    snprintf(err, errlen, "'%s' is not an absolute path to an executable file%s%s", target,
             target[0] == '/' ? ": " : "", target[0] == '/' ? strerror(errno) : "");
    return -EINVAL;
}

/* The hook's environment: ours plus ARGUS_ALERT_*. Strings in store (kept
 * by the caller until the hook started). NULL on ENOMEM. */
static char **exec_env(struct json_object *ev, char store[][600], size_t nstore)
{
    static const char *const keys[][2] = {
        {"ID", "id"},
        {"JOB", "job"},
        {"CAUSE", "cause"},
        {"NODE", "node"},
        {"LEVEL", "level"},
        {"SUBJECT", "subject"},
        {"SUMMARY", "summary"},
        {"REPORT_ID", "report_id"},
        {"GPU_HOURS_LOST", "gpu_hours_lost"},
    };
    struct json_object *al = NULL, *v, *labels = NULL;
    size_t n = 0, k = 0;
    char **env;

    while (environ[n])
        n++;
    env = calloc(n + nstore + 1, sizeof(*env));
    if (!env)
        return NULL;
    memcpy(env, environ, n * sizeof(*env));
    json_object_object_get_ex(ev, "alert", &al);
    if (al)
        json_object_object_get_ex(al, "labels", &labels);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && k < nstore; i++, k++)
        snprintf(store[k], 600, "ARGUS_ALERT_%s=%s", keys[i][0],
                 al && json_object_object_get_ex(al, keys[i][1], &v) ? json_object_get_string(v)
                                                                     : "");
    snprintf(store[k++], 600, "ARGUS_ALERT_STATUS=%s",
             json_object_object_get_ex(ev, "status", &v) ? json_object_get_string(v) : "");
    snprintf(store[k++], 600, "ARGUS_ALERT_RANKS=%s",
             labels && json_object_object_get_ex(labels, "ranks", &v) ? json_object_get_string(v)
                                                                      : "");
    snprintf(store[k++], 600, "ARGUS_ALERT_GPU=%s",
             al && json_object_object_get_ex(al, "gpu", &v) ? json_object_get_string(v) : "");
    snprintf(store[k++], 600, "ARGUS_ALERT_REPORT_URL=%s",
             json_object_object_get_ex(ev, "report_url", &v) ? json_object_get_string(v) : "");
    for (size_t i = 0; i < k; i++)
        env[n + i] = store[i];
    return env;
}

/* Start path with stdin from a pipe (*fd: its write end, non-blocking), in
 * its own process group. The pid, or -errno. */
static pid_t exec_spawn(const char *path, char **env, int *fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    char *argv[] = {(char *)path, NULL};
    int p[2], rc;
    pid_t pid = -1;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[0], 0);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    rc = posix_spawn(&pid, path, &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(p[0]);
    if (rc != 0) {
        close(p[1]);
        return -rc;
    }
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    *fd = p[1];
    return pid;
}

/* Write body to fd until done or the deadline (a hook that does not read
 * its stdin is not waited on). Closes fd. */
static void exec_feed(int fd, const char *body, uint64_t deadline)
{
    size_t off = 0, len = strlen(body);

    while (off < len) {
        uint64_t now = clock_mono_ns();
        struct pollfd pfd = {fd, POLLOUT, 0};
        if (now >= deadline || poll(&pfd, 1, (int)((deadline - now) / NSEC_PER_MSEC + 1)) <= 0)
            break;
        ssize_t w = write(fd, body + off, len - off);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            break; /* EPIPE: the hook closed its stdin (SIGPIPE is ignored) */
        if (w > 0)
            off += (size_t)w;
    }
    close(fd);
}

/* Wait for pid until the deadline, then kill its group. Its wait status,
 * or -ETIMEDOUT (killed). */
static int exec_reap(pid_t pid, uint64_t deadline)
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

/* Run the hook once with event. 0, or -EIO/-EINVAL/-ENOMEM with err set. */
static int exec_one(const char *path, uint64_t timeout_ns, const char *event, char *err,
                    size_t errlen)
{
    struct json_object *ev = json_tokener_parse(event);
    char store[13][600];
    char **env = ev ? exec_env(ev, store, 13) : NULL;
    uint64_t deadline = clock_mono_ns() + (timeout_ns ? timeout_ns : 10 * NSEC_PER_SEC);
    int fd = -1, status;
    pid_t pid;

    if (!env) {
        json_object_put(ev);
        snprintf(err, errlen, "exec %s: %s", path, ev ? "out of memory" : "bad event");
        return ev ? -ENOMEM : -EINVAL;
    }
    pid = exec_spawn(path, env, &fd);
    free(env);
    json_object_put(ev);
    if (pid < 0) {
        snprintf(err, errlen, "exec %s: %s", path, strerror((int)-pid));
        return -EIO;
    }
    exec_feed(fd, event, deadline);
    status = exec_reap(pid, deadline);
    if (status == -ETIMEDOUT)
        snprintf(err, errlen, "exec %s: still running after %.1f s: killed", path,
                 (double)timeout_ns / 1e9);
    else if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(err, errlen, "exec %s: %s %d", path,
                 status >= 0 && WIFSIGNALED(status) ? "killed by signal" : "exit status",
                 status < 0            ? status
                 : WIFSIGNALED(status) ? WTERMSIG(status)
                                       : WEXITSTATUS(status));
    else
        return 0;
    return -EIO;
}

static int exec_deliver(const struct alert_sink *s, const struct alert_sink_batch *b, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < b->n; i++) {
        int rc = exec_one(s->target, s->settings->exec_timeout_ns, b->events[i], err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

const struct alert_sink_ops alert_sink_exec = {
    .name = "exec",
    .check = exec_check,
    .deliver = exec_deliver,
    .resends = false,
};
