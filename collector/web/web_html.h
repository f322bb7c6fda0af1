/* HTML pieces every page of collector/web/ shares: escaping, URL encoding,
 * the frame (head with the embedded stylesheet, header, footer). */
#ifndef ARGUS_COLLECTOR_WEB_HTML_H
#define ARGUS_COLLECTOR_WEB_HTML_H

#include <stdint.h>
#include <stdio.h>

/* s escaped for HTML text and attribute values. */
void web_html_escape(const char *s, FILE *out);

/* s percent-encoded for a path segment (unreserved bytes kept). */
void web_url_encode(const char *s, FILE *out);

/* The document up to the opening of <main>; title is escaped. */
void web_html_begin(FILE *out, const char *title);

/* Closes what web_html_begin opened. */
void web_html_end(FILE *out);

/* An RFC 3339 time, or "-" for 0, into buf. */
const char *web_time(uint64_t unix_ns, char *buf, size_t len);

/* "/job/ENCODED" link text: <a href="/job/...">escaped job</a>. */
void web_job_link(const char *job, FILE *out);

#endif
