#include "common/http_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_CLIENT_BODY_MAX (64 * 1024)

static pthread_once_t http_client_once = PTHREAD_ONCE_INIT;

static void http_client_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* CURLOPT_WRITEFUNCTION: keep the first HTTP_CLIENT_BODY_MAX bytes. */
static size_t http_client_write(char *data, size_t size, size_t n, void *ctx)
{
    struct http_response *r = ctx;
    size_t len = size * n, room = HTTP_CLIENT_BODY_MAX - r->body_len;
    size_t take = len < room ? len : room;
    char *grown;

    if (!take)
        return len;
    grown = realloc(r->body, r->body_len + take + 1);
    if (!grown)
        return len; /* the body is informational: drop it, keep the status */
    r->body = grown;
    memcpy(r->body + r->body_len, data, take);
    r->body_len += take;
    r->body[r->body_len] = '\0';
    return len;
}

/* The request headers: content type, no Expect: 100-continue, extras. */
static struct curl_slist *http_client_headers(const char *content_type, const char *const *headers,
                                              int *failed)
{
    struct curl_slist *list = NULL, *next;
    char ct[256];

    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
    const char *fixed[] = {ct, "Expect:"};
    *failed = 0;
    for (size_t i = 0; i < 2 && !*failed; i++) {
        next = curl_slist_append(list, fixed[i]);
        *failed = !next;
        list = next ? next : list;
    }
    for (size_t i = 0; headers && headers[i] && !*failed; i++) {
        next = curl_slist_append(list, headers[i]);
        *failed = !next;
        list = next ? next : list;
    }
    return list;
}

int http_post(const char *url, const char *content_type, const char *const *headers,
              const void *body, size_t len, uint64_t timeout_ms, struct http_response *resp,
              char *err, size_t errlen)
{
    char cerr[CURL_ERROR_SIZE] = "";
    int failed = 0;
    CURLcode rc = CURLE_OUT_OF_MEMORY;

    pthread_once(&http_client_once, http_client_init);
    *resp = (struct http_response){0};
    CURL *c = curl_easy_init();
    struct curl_slist *list = http_client_headers(content_type, headers, &failed);
    if (c && !failed) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_client_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
        rc = curl_easy_perform(c);
        if (rc == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    }
    curl_slist_free_all(list);
    curl_easy_cleanup(c);
    if (rc == CURLE_OK)
        return 0;
    snprintf(err, errlen, "POST %s: %s", url, *cerr ? cerr : curl_easy_strerror(rc));
    http_response_free(resp);
    return -1;
}

void http_response_free(struct http_response *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}
