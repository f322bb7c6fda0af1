/* collector/alerts/sinks/alertmanager: POST {url}/api/v2/alerts, the events
 * as Alertmanager v2 alerts (a firing one with endsAt 4 x alerts.resend
 * ahead, so Alertmanager keeps it between re-sends); delivered on a 2xx
 * answer. Re-sends every firing alert every alerts.resend. Its ops are a
 * row of the registration table (sinks.c); what it offers besides is the
 * payload, for tests. */
#ifndef ARGUS_COLLECTOR_ALERTS_SINKS_ALERTMANAGER_H
#define ARGUS_COLLECTOR_ALERTS_SINKS_ALERTMANAGER_H

#include <json-c/json.h>
#include <stdint.h>

/* The Alertmanager v2 alert of one event, appended to the array am: labels
 * alertname, job, cause, subject, rank(s), node, gpu, level, severity;
 * annotations summary, evidence, report; startsAt; endsAt the resolve time,
 * or now + ends_ahead_ns while firing. 0, or -EINVAL for an event that is
 * not argus.alert.v1. */
int alert_sink_alertmanager_append(struct json_object *am, struct json_object *event,
                                   uint64_t now_ns, uint64_t ends_ahead_ns);

#endif
