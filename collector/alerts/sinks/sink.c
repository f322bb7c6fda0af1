#include "collector/alerts/sinks/sink.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/http_client.h"

int alert_sink_check_http_url(const char *target, char *err, size_t errlen)
{
    size_t scheme = strncmp(target, "http://", 7) == 0    ? 7
                    : strncmp(target, "https://", 8) == 0 ? 8
                                                          : 0;

    if (scheme && target[scheme])
        return 0;
    snprintf(err, errlen, "'%s' is not an http:// or https:// URL", target);
    return -EINVAL;
}

int alert_sink_post(const char *url, const char *const *headers, const char *body,
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
