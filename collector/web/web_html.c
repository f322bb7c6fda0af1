/* HTML pieces: see web_html.h. */
#include "collector/web/web_html.h"

#include <string.h>

#include "common/clock.h"
#include "common/heatmap_svg.h"

void web_html_escape(const char *s, FILE *out)
{
    heatmap_svg_escape(s, out);
}

void web_url_encode(const char *s, FILE *out)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c))
            fputc(c, out);
        else
            fprintf(out, "%%%02X", c);
    }
}

/* Offline: the stylesheet is in the page, nothing is loaded from elsewhere. */
static const char web_css[] =
    "body{font-family:sans-serif;margin:0;color:#222;background:#fafafa}"
    "header{background:#23364d;color:#fff;padding:10px 18px}"
    "header a{color:#fff;text-decoration:none;font-weight:bold}"
    "main{padding:12px 18px}"
    "table{border-collapse:collapse;margin:8px 0 16px}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}"
    "th{background:#eef1f5}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".pages{color:#b00000;font-weight:bold}"
    ".finding{color:#666}"
    ".report{border:1px solid #ddd;background:#fff;padding:6px 12px;margin:8px 0}"
    ".suspect-name{color:#b00000;font-weight:bold}"
    ".heatmap{background:#fff;border:1px solid #ddd}"
    "svg a text{fill:#23364d;text-decoration:underline}"
    ".muted{color:#777}";

void web_html_begin(FILE *out, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", out);
    web_html_escape(title, out);
    fprintf(out,
            " - argus</title>\n<style>%s</style></head>\n<body>\n<header><a "
            "href=\"/\">argus</a> &middot; ",
            web_css);
    web_html_escape(title, out);
    fputs("</header>\n<main>\n", out);
}

void web_html_end(FILE *out)
{
    fputs("</main>\n<footer class=\"muted\" style=\"padding:8px 18px\">argus collector, "
          "read-only report page</footer>\n</body></html>\n",
          out);
}

const char *web_time(uint64_t unix_ns, char *buf, size_t len)
{
    return unix_ns ? clock_format_rfc3339(unix_ns, buf, len) : "-";
}

void web_job_link(const char *job, FILE *out)
{
    fputs("<a href=\"/job/", out);
    web_url_encode(job, out);
    fputs("\">", out);
    web_html_escape(job, out);
    fputs("</a>", out);
}
