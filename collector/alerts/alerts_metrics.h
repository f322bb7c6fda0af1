/* collector/alerts/: the alert series of the collector's /metrics. */
#ifndef ARGUS_COLLECTOR_ALERTS_METRICS_H
#define ARGUS_COLLECTOR_ALERTS_METRICS_H

#include "common/http.h"

struct alerts;

/* Per sink (labels sink, target): argus_alerts_sent_total,
 * argus_alerts_failed_total (delivery attempts that failed),
 * argus_alerts_queued, argus_alerts_queued_oldest_seconds; per (job, cause):
 * argus_alerts_firing; argus_alerts_rate_limited_total,
 * argus_alerts_store_errors_total. a NULL: nothing. */
void alerts_write_metrics(struct alerts *a, struct http_buf *b);

#endif
