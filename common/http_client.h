/* A blocking HTTP POST on libcurl, for the collector's outbound senders
 * (remote write, alert sinks). One call is one request on its own handle:
 * thread-safe, no connection reuse, no redirects followed. */
#ifndef ARGUS_COMMON_HTTP_CLIENT_H
#define ARGUS_COMMON_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct http_response {
    long status; /* HTTP status code */
    char *body;  /* malloc'd, NUL-terminated (at most 64 KiB kept); NULL when empty */
    size_t body_len;
};

/* POST len bytes of body to url (http:// or https://) with content_type and
 * the extra headers (NULL-terminated array of "Name: value", NULL: none),
 * giving up after timeout_ms. Returns 0 when a response arrived (any status:
 * *resp filled, free it with http_response_free), or -1 on a transport error
 * (refused, timeout, bad URL; a sentence in err, *resp zeroed). */
int http_post(const char *url, const char *content_type, const char *const *headers,
              const void *body, size_t len, uint64_t timeout_ms, struct http_response *resp,
              char *err, size_t errlen);

/* Free resp's body. NULL is fine. */
void http_response_free(struct http_response *r);

#endif
