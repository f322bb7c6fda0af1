/* An HTTP client for what the daemons push out (alert sinks, remote write):
 * one POST per call through libcurl, with a whole-request timeout. Thread-
 * safe: every call uses its own easy handle; libcurl's global state is set
 * up once (pthread_once) on the first call. No redirects are followed, no
 * proxy from the environment is used unless libcurl's defaults say so.
 */
#ifndef ARGUS_COMMON_HTTP_CLIENT_H
#define ARGUS_COMMON_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* What the server answered. body is malloc'd and NUL-terminated (body_len
 * excludes the NUL); free it with http_response_free. */
struct http_response {
    long status;
    char *body;
    size_t body_len;
};

/* POST len bytes of body to url with Content-Type content_type and the extra
 * headers ("Name: value" strings, NULL-terminated; headers may be NULL),
 * giving up after timeout_ms (connect and transfer together; 0: 10 s).
 * Returns 0 when a response arrived, whatever its status (in resp->status
 * with the body, when resp is not NULL), or -1 on a transport error or
 * timeout with a sentence in err (errlen bytes) naming the url. The response
 * body is kept up to 1 MiB (the rest is read and dropped). */
int http_post(const char *url, const char *content_type, const char *const *headers,
              const void *body, size_t len, uint64_t timeout_ms, struct http_response *resp,
              char *err, size_t errlen);

/* Free what http_post put in r (not r itself) and zero it. NULL is fine. */
void http_response_free(struct http_response *r);

#endif
