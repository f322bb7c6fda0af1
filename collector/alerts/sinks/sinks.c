#include "collector/alerts/sinks/sinks.h"

#include <errno.h>
#include <string.h>

/* Each sink's file defines its ops (as fluent-bit's plugin list declares
 * each plugin beside its row). */
extern const struct alert_sink_ops alert_sink_alertmanager;
extern const struct alert_sink_ops alert_sink_webhook;
extern const struct alert_sink_ops alert_sink_exec;

const struct alert_sink_ops *const alert_sinks[] = {
    &alert_sink_alertmanager,
    &alert_sink_webhook,
    &alert_sink_exec,
};
const size_t alert_sinks_count = sizeof(alert_sinks) / sizeof(alert_sinks[0]);

_Static_assert(sizeof(alert_sinks) / sizeof(alert_sinks[0]) <= ALERT_SINKS_MAX,
               "more sinks than ALERT_SINKS_MAX");

const struct alert_sink_ops *alert_sink_find(const char *name)
{
    for (size_t i = 0; i < alert_sinks_count; i++)
        if (strcmp(alert_sinks[i]->name, name) == 0)
            return alert_sinks[i];
    return NULL;
}

int alert_sink_index(const struct alert_sink_ops *ops)
{
    for (size_t i = 0; i < alert_sinks_count; i++)
        if (alert_sinks[i] == ops)
            return (int)i;
    return -ENOENT;
}
