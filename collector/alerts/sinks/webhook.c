/* collector/alerts/sinks/webhook: POST url, each event itself
 * (application/json), with "Authorization: Bearer TOKEN" when
 * alerts.webhook_token_file is set; delivered on a 2xx answer. One POST per
 * event, in order. Its ops are a row of the registration table (sinks.c). */
#include <stdio.h>

#include "collector/alerts/sinks/sink.h"

static int webhook_deliver(const struct alert_sink *s, const struct alert_sink_batch *b, char *err,
                           size_t errlen)
{
    const char *token = s->settings->token;
    const char *headers[2] = {NULL, NULL};
    char auth[1100];

    if (token && *token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        headers[0] = auth;
    }
    for (size_t i = 0; i < b->n; i++) {
        int rc = alert_sink_post(s->target, headers, b->events[i], s->settings->http_timeout_ns,
                                 err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

const struct alert_sink_ops alert_sink_webhook = {
    .name = "webhook",
    .check = alert_sink_check_http_url,
    .deliver = webhook_deliver,
    .resends = false,
};
