/* collector/alerts/sinks/: where alerts go. The folder takes in batches of
 * argus.alert.v1 events from the sender threads of collector/alerts/
 * (alerts_sender.h) and gives out deliveries: one file per sink
 * (alertmanager.c, webhook.c, exec.c), each a struct alert_sink_ops
 * (sink.h, the contract), and this registration table that lists them,
 * one row per sink, which everything else iterates: the config keys
 * alerts.NAME, the set-up of the targets, the store queue keys, the
 * /metrics labels. Adding a sink: its file and its row in sinks.c (and its
 * config key, collector/config.c).
 */
#ifndef ARGUS_COLLECTOR_ALERTS_SINKS_SINKS_H
#define ARGUS_COLLECTOR_ALERTS_SINKS_SINKS_H

#include <stddef.h>

#include "collector/alerts/sinks/sink.h"

#define ALERT_SINKS_MAX 8 /* rows the table may have (sizes per-sink arrays) */

/* The sinks, in the order their targets are set up and listed: a table
 * of alert_sinks_count rows (static storage). */
extern const struct alert_sink_ops *const alert_sinks[];
extern const size_t alert_sinks_count;

/* The sink called name, or NULL. */
const struct alert_sink_ops *alert_sink_find(const char *name);

/* The row of ops in alert_sinks, or -ENOENT. */
int alert_sink_index(const struct alert_sink_ops *ops);

#endif
