/* collector/alerts/sinks/: the contract of one alert sink (the registration
 * table that lists them is sinks.h). A sink takes a batch of argus.alert.v1
 * events (JSON texts, the format is collector/alerts/alert_json.h's) and
 * delivers them to one target, synchronously, within its timeout; the
 * sender threads of collector/alerts/ call it and retry what fails, so a
 * sink keeps no queue and no thread of its own.
 *
 * Nothing here includes collector/alerts/: the dependency goes one way,
 * alerts/ -> alerts/sinks/ -> common/.
 */
#ifndef ARGUS_COLLECTOR_ALERTS_SINKS_SINK_H
#define ARGUS_COLLECTOR_ALERTS_SINKS_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The alerts.* settings a sink may read (every sink sees all of them;
 * collector/alerts/alerts.c fills them once from its options). */
struct alert_sink_settings {
    const char *token;        /* alerts.webhook_token_file's token, or NULL */
    uint64_t http_timeout_ns; /* alerts.http_timeout: one POST */
    uint64_t exec_timeout_ns; /* alerts.exec_timeout: one hook run (0: 10 s) */
    uint64_t resend_ns;       /* alerts.resend: the re-send period of sinks that re-send */
};

/* The schema every event a sink receives carries in "schema". */
#define ALERT_SINK_SCHEMA "argus.alert.v1"

struct alert_sink_ops;

/* One configured target of a sink. */
struct alert_sink {
    const struct alert_sink_ops *ops;
    const char *target;                         /* as listed in the config: URL, path */
    const struct alert_sink_settings *settings; /* outlives the sink */
};

/* A batch of events to deliver: n argus.alert.v1 JSON texts (the caller's),
 * oldest first, and the wall-clock time of the delivery. */
struct alert_sink_batch {
    const char *const *events;
    size_t n;
    uint64_t now_ns;
};

struct alert_sink_ops {
    /* "alertmanager": the config key alerts.NAME lists its targets
     * (comma-separated), its store queue keys are "q:" NAME ":" target,
     * and its /metrics series carry sink="NAME". Never rename one: a
     * restart finds the queue of the previous run by it. */
    const char *name;
    /* Whether one target of the list can be delivered to (a URL's scheme,
     * a hook's path): 0, or -EINVAL with a sentence in err (errlen bytes)
     * that quotes the target (the caller puts the config key in front). */
    int (*check)(const char *target, char *err, size_t errlen);
    /* Deliver the batch to s (a sink that takes one event at a time
     * delivers them in order and stops at the first failure). Returns 0
     * when all were delivered; -EIO (transport, timeout, refused: retried
     * later), -EINVAL (an event it can never deliver: dropped) or -ENOMEM,
     * with a sentence in err (errlen bytes). */
    int (*deliver)(const struct alert_sink *s, const struct alert_sink_batch *b, char *err,
                   size_t errlen);
    /* Re-send every firing alert every settings->resend_ns, as one batch,
     * when nothing is queued (Alertmanager forgets an alert whose endsAt
     * passed). */
    bool resends;
};

/* Shared by the HTTP sinks: 0 when target is an http:// or https:// URL
 * with something after the scheme, else -EINVAL with a sentence in err. */
int alert_sink_check_http_url(const char *target, char *err, size_t errlen);

/* Shared by the HTTP sinks: POST body (JSON) to url with the extra headers
 * (NULL-terminated, or NULL) within timeout_ns. 0 on a 2xx answer, else
 * -EIO with a sentence in err (errlen bytes). */
int alert_sink_post(const char *url, const char *const *headers, const char *body,
                    uint64_t timeout_ns, char *err, size_t errlen);

#endif
