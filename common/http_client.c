#include "common/http_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#define HTTP_CLIENT_MAX_BODY (1u << 20)

static pthread_once_t http_client_once = PTHREAD_ONCE_INIT;
static CURLcode http_client_init_rc = CURLE_FAILED_INIT;

static void http_client_global_init(void)
{
    http_client_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* CURLOPT_WRITEFUNCTION: append to the response body, up to the cap. */
static size_t http_client_write(char *data, size_t size, size_t n, void *ctx)
{
    struct http_response *r = ctx;
    size_t len = size * n, keep = len;
    char *grown;

    if (r->body_len + keep > HTTP_CLIENT_MAX_BODY)
        keep = HTTP_CLIENT_MAX_BODY - r->body_len;
    if (!keep)
        return len;
    grown = realloc(r->body, r->body_len + keep + 1);
    if (!grown)
        return 0; /* libcurl fails the transfer: out of memory */
    r->body = grown;
    memcpy(r->body + r->body_len, data, keep);
    r->body_len += keep;
    r->body[r->body_len] = '\0';
    return len;
}

/* The header list of content_type and headers; NULL on ENOMEM. */
static struct curl_slist *http_client_headers(const char *content_type, const char *const *headers)
{
    struct curl_slist *list = NULL, *next;
    char ct[256];

    snprintf(ct, sizeof(ct), "Content-Type: %s",
             content_type ? content_type : "application/octet-stream");
    list = curl_slist_append(NULL, ct);
    for (size_t i = 0; list && headers && headers[i]; i++) {
        next = curl_slist_append(list, headers[i]);
        if (!next) {
            curl_slist_free_all(list);
            return NULL;
        }
        list = next;
    }
    next = list ? curl_slist_append(list, "Expect:") : NULL; /* no 100-continue round trip */
    if (!next)
        curl_slist_free_all(list);
    return next;
}

int http_post(const char *url, const char *content_type, const char *const *headers,
              const void *body, size_t len, uint64_t timeout_ms, struct http_response *resp,
              char *err, size_t errlen)
{
    struct http_response got = {0};
    struct curl_slist *list = NULL;
    CURL *h = NULL;
    CURLcode rc = CURLE_OUT_OF_MEMORY;

    pthread_once(&http_client_once, http_client_global_init);
    if (http_client_init_rc != CURLE_OK) {
        rc = http_client_init_rc;
        goto out;
    }
    h = curl_easy_init();
    list = h ? http_client_headers(content_type, headers) : NULL;
    if (!list)
        goto out;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_ms ? timeout_ms : 10000));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_client_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
    rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &got.status);
out:
    if (rc != CURLE_OK)
        snprintf(err, errlen, "POST %s: %s", url, curl_easy_strerror(rc));
    curl_slist_free_all(list);
    if (h)
        curl_easy_cleanup(h);
    if (rc == CURLE_OK && resp) {
        if (!got.body)
            got.body = calloc(1, 1);
        *resp = got;
    } else {
        http_response_free(&got);
    }
    return rc == CURLE_OK ? 0 : -1;
}

void http_response_free(struct http_response *r)
{
    if (!r)
        return;
    free(r->body);
    *r = (struct http_response){0};
}
