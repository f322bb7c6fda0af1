#include "collector/alerts/alert_sink.h"

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

#include "collector/alerts/alert_json.h"
#include "common/clock.h"
#include "common/http_client.h"

extern char **environ;

const char *alert_sink_kind_name(enum alert_sink_kind k)
{
    return k == ALERT_SINK_ALERTMANAGER ? "alertmanager"
           : k == ALERT_SINK_WEBHOOK    ? "webhook"
                                        : "exec";
}

/* POST body to url; 0 on a 2xx answer, else -EIO with err set. */
static int alert_sink_post(const char *url, const char *const *headers, const char *body,
                           uint64_t timeout_ns, char *err, size_t errlen)
{
    struct http_response resp = {0};
    int rc = http_post(url, "application/json", headers, body, strlen(body),
                       timeout_ns / NSEC_PER_MSEC, &resp, err, errlen);

    if (rc == 0 && (resp.status < 200 || resp.status > 299)) {
        snprintf(err, errlen, "POST %s: HTTP %ld: %.200s", url, resp.status,
                 resp.body ? resp.body : "");
        rc = -1;
    }
    http_response_free(&resp);
    return rc == 0 ? 0 : -EIO;
}

static int alert_sink_alertmanager(const struct alert_sink_target *t, const char *const *events,
                                   size_t n, uint64_t now_ns, char *err, size_t errlen)
{
    struct json_object *am = json_object_new_array();
    char url[1024];
    size_t tl = strlen(t->target);
    int rc = am ? 0 : -ENOMEM;

    for (size_t i = 0; i < n && rc == 0; i++) {
        struct json_object *ev = json_tokener_parse(events[i]);
        rc = ev ? alert_am_append(am, ev, now_ns, t->ends_ahead_ns) : -EINVAL;
        json_object_put(ev);
    }
    if (rc < 0)
        snprintf(err, errlen, "an alert event that is not %s JSON", ALERT_SCHEMA);
    if (rc == 0) {
        snprintf(url, sizeof(url), "%.*s/api/v2/alerts",
                 (int)(tl && t->target[tl - 1] == '/' ? tl - 1 : tl), t->target);
        rc = alert_sink_post(url, NULL, json_object_to_json_string_ext(am, JSON_C_TO_STRING_PLAIN),
                             t->timeout_ns, err, errlen);
    }
    json_object_put(am);
    return rc;
}

static int alert_sink_webhook(const struct alert_sink_target *t, const char *event, char *err,
                              size_t errlen)
{
    char auth[1100];
    const char *headers[2] = {NULL, NULL};

    if (t->token && *t->token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", t->token);
        headers[0] = auth;
    }
    return alert_sink_post(t->target, headers, event, t->timeout_ns, err, errlen);
}

/* The hook's environment: ours plus ARGUS_ALERT_*. Strings in store (kept
 * by the caller until the hook started). NULL on ENOMEM. */
static char **alert_sink_env(struct json_object *ev, char store[][600], size_t nstore)
{
    static const char *const keys[][2] = {
        {"ID", "id"},           {"JOB", "job"},
        {"CAUSE", "cause"},     {"NODE", "node"},
        {"LEVEL", "level"},     {"SUBJECT", "subject"},
        {"SUMMARY", "summary"}, {"REPORT_ID", "report_id"},
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
static pid_t alert_sink_spawn(const char *path, char **env, int *fd)
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
static void alert_sink_feed(int fd, const char *body, uint64_t deadline)
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
static int alert_sink_reap(pid_t pid, uint64_t deadline)
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

static int alert_sink_exec(const struct alert_sink_target *t, const char *event, char *err,
                           size_t errlen)
{
    struct json_object *ev = json_tokener_parse(event);
    char store[12][600];
    char **env = ev ? alert_sink_env(ev, store, 12) : NULL;
    uint64_t deadline = clock_mono_ns() + (t->timeout_ns ? t->timeout_ns : 10 * NSEC_PER_SEC);
    int fd = -1, status;
    pid_t pid;

    if (!env) {
        json_object_put(ev);
        snprintf(err, errlen, "exec %s: %s", t->target, ev ? "out of memory" : "bad event");
        return ev ? -ENOMEM : -EINVAL;
    }
    pid = alert_sink_spawn(t->target, env, &fd);
    free(env);
    json_object_put(ev);
    if (pid < 0) {
        snprintf(err, errlen, "exec %s: %s", t->target, strerror((int)-pid));
        return -EIO;
    }
    alert_sink_feed(fd, event, deadline);
    status = alert_sink_reap(pid, deadline);
    if (status == -ETIMEDOUT)
        snprintf(err, errlen, "exec %s: still running after %.1f s: killed", t->target,
                 (double)t->timeout_ns / 1e9);
    else if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(err, errlen, "exec %s: %s %d", t->target,
                 status >= 0 && WIFSIGNALED(status) ? "killed by signal" : "exit status",
                 status < 0            ? status
                 : WIFSIGNALED(status) ? WTERMSIG(status)
                                       : WEXITSTATUS(status));
    else
        return 0;
    return -EIO;
}

int alert_sink_deliver(const struct alert_sink_target *t, const char *const *events, size_t n,
                       uint64_t now_ns, char *err, size_t errlen)
{
    if (t->kind == ALERT_SINK_ALERTMANAGER)
        return alert_sink_alertmanager(t, events, n, now_ns, err, errlen);
    for (size_t i = 0; i < n; i++) {
        int rc = t->kind == ALERT_SINK_WEBHOOK ? alert_sink_webhook(t, events[i], err, errlen)
                                               : alert_sink_exec(t, events[i], err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}
