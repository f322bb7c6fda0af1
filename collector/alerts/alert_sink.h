/* collector/alerts/: delivery of argus.alert.v1 events (alert_json.h) to one
 * sink, synchronously, with a timeout; the sender threads of alerts.c call
 * it and retry what fails.
 *   alertmanager  POST {url}/api/v2/alerts, the events as Alertmanager v2
 *                 alerts (a firing one with endsAt ends_ahead_ns ahead);
 *                 delivered on a 2xx answer.
 *   webhook       POST url, the event itself (application/json), with
 *                 "Authorization: Bearer TOKEN" when a token is set;
 *                 delivered on a 2xx answer.
 *   exec          run path (no shell, its own process group) with the event
 *                 on stdin and ARGUS_ALERT_{ID,JOB,STATUS,CAUSE,RANKS,NODE,
 *                 GPU,LEVEL,SUBJECT,SUMMARY,REPORT_URL} in its environment;
 *                 delivered when it exits 0 within the timeout; at the
 *                 timeout the whole group is killed (SIGKILL).
 */
#ifndef ARGUS_COLLECTOR_ALERT_SINK_H
#define ARGUS_COLLECTOR_ALERT_SINK_H

#include <stddef.h>
#include <stdint.h>

enum alert_sink_kind {
    ALERT_SINK_ALERTMANAGER = 0,
    ALERT_SINK_WEBHOOK = 1,
    ALERT_SINK_EXEC = 2,
};

struct alert_sink_target {
    enum alert_sink_kind kind;
    const char *target;     /* URL or path */
    const char *token;      /* webhook bearer token, or NULL */
    uint64_t timeout_ns;    /* per delivery */
    uint64_t ends_ahead_ns; /* alertmanager: endsAt of a firing alert, from now */
};

/* "alertmanager", "webhook", "exec". */
const char *alert_sink_kind_name(enum alert_sink_kind k);

/* Deliver n events (JSON texts; exec and webhook take n == 1) to t.
 * Returns 0 when delivered; -EIO (transport, timeout, non-2xx, non-zero
 * exit), -EINVAL (an event that is not argus.alert.v1) or -ENOMEM, with a
 * sentence in err (errlen bytes). */
int alert_sink_deliver(const struct alert_sink_target *t, const char *const *events, size_t n,
                       uint64_t now_ns, char *err, size_t errlen);

#endif
