/* collector/alerts/sinks/exec: run path (no shell, its own process group)
 * with the event on stdin and ARGUS_ALERT_{ID,JOB,STATUS,CAUSE,RANKS,NODE,
 * GPU,LEVEL,SUBJECT,SUMMARY,REPORT_ID,REPORT_URL} in its environment; delivered
 * when it exits 0 within alerts.exec_timeout; at the timeout the whole group
 * is killed (SIGKILL). One run per event, in order. Its ops are a row of the
 * registration table (sinks.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "collector/alerts/sinks/sink.h"
#include "common/clock.h"
#include "common/hook_exec.h"

#define EXEC_VARS 13 /* ARGUS_ALERT_* variables */

/* The hook's ARGUS_ALERT_* variables from event ev into store (NULL-ended
 * in vars, the strings in store, both the caller's). */
static void exec_vars(struct json_object *ev, char store[][600], const char *vars[EXEC_VARS + 1])
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
    size_t k = 0;

    json_object_object_get_ex(ev, "alert", &al);
    if (al)
        json_object_object_get_ex(al, "labels", &labels);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++, k++)
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
        vars[i] = store[i];
    vars[k] = NULL;
}

/* Run the hook once with event (common/hook_exec.h). 0, or -EIO/-EINVAL
 * with err set. */
static int exec_one(const char *path, uint64_t timeout_ns, const char *event, char *err,
                    size_t errlen)
{
    struct json_object *ev = json_tokener_parse(event);
    char store[EXEC_VARS][600];
    const char *vars[EXEC_VARS + 1];
    struct hook_exec_result res;
    uint64_t timeout = timeout_ns ? timeout_ns : 10 * NSEC_PER_SEC;
    int rc;

    if (!ev) {
        snprintf(err, errlen, "exec %s: bad event", path);
        return -EINVAL;
    }
    exec_vars(ev, store, vars);
    json_object_put(ev);
    rc = hook_exec_run(path, vars, event, timeout, &res);
    if (rc == 0)
        return 0;
    if (rc == -ETIMEDOUT)
        snprintf(err, errlen, "exec %s: still running after %.1f s: killed", path,
                 (double)timeout / 1e9);
    else if (res.exit_status < 0)
        snprintf(err, errlen, "exec %s: %s", path, res.output);
    else if (res.exit_status > 128)
        snprintf(err, errlen, "exec %s: killed by signal %d%s%s", path, res.exit_status - 128,
                 res.output[0] ? ": " : "", res.output);
    else
        snprintf(err, errlen, "exec %s: exit status %d%s%s", path, res.exit_status,
                 res.output[0] ? ": " : "", res.output);
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
    .check = hook_exec_check,
    .deliver = exec_deliver,
    .resends = false,
};
