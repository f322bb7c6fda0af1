/* collector/alerts/: alerts as JSON. An alert's state (what the store keeps
 * and argusctl shows) and the argus.alert.v1 event the sinks receive (and
 * the delivery queue holds); the Alertmanager API v2 body made from events
 * is the Alertmanager sink's (sinks/alertmanager.h).
 *
 * argus.alert.v1 event:
 *   {"schema": "argus.alert.v1", "status": "firing" | "resolved",
 *    "alert": {id, job, subject, cause, level, status, ranks [numbers],
 *              node, gpu, group, where, score, summary, evidence, report_id,
 *              gpu_hours_lost (what its suspects cost the job, alert_book.h),
 *              created/firing/resolved_unix_ns (strings: 64-bit),
 *              labels {ranks, gpu, level as Alertmanager knows them}},
 *    "report_url": "..." (alerts.report_url filled in; "" when unset),
 *    "report": the argus.v1.Report that changed it, or null}
 */
#ifndef ARGUS_COLLECTOR_ALERT_JSON_H
#define ARGUS_COLLECTOR_ALERT_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/alerts/alert_book.h"
#include "collector/alerts/sinks/sink.h"

/* a as a JSON object (caller owns: json_object_put). NULL on ENOMEM. */
struct json_object *alert_to_json(const struct alert *a);

/* Fill *a (zeroed first) from alert_to_json's object; a->job is malloc'd
 * (caller frees). 0, -EINVAL (a field missing or wrong) or -ENOMEM. */
int alert_from_json(struct json_object *o, struct alert *a);

/* The event text of a's change: malloc'd (caller frees), NULL on ENOMEM.
 * report_url: the template with {id} and {job} (NULL or "": none). */
char *alert_event_json(const struct alert *a, const char *report_url);

/* A fixed template with {id} and {job} replaced (malloc'd; NULL on ENOMEM). */
char *alert_report_url(const char *templ, const char *id, const char *job);

#endif
