/* The report page's routing and the job list: see web.h. */
#include "collector/web/web.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "collector/web/web_html.h"
#include "collector/web/web_job.h"
#include "collector/web/web_rank.h"
#include "collector/web/web_report.h"
#include "proto/argus.pb-c.h"

struct web_counts {
    size_t reports, paging;
};

static int web_count_report(void *ctx, const void *value, size_t len)
{
    struct web_counts *c = ctx;
    Argus__V1__Report *r = argus__v1__report__unpack(NULL, len, value);

    if (r) {
        c->reports++;
        c->paging += r->pages;
        argus__v1__report__free_unpacked(r, NULL);
    }
    return 0;
}

struct web_index {
    struct store *store;
    FILE *out;
    size_t jobs;
};

static int web_index_row(void *ctx, const void *value, size_t len)
{
    struct web_index *w = ctx;
    Argus__V1__JobInfo *j = argus__v1__job_info__unpack(NULL, len, value);
    struct web_counts c = {0};
    char t1[40], t2[40];

    if (!j)
        return 0;
    store_scan_reports(w->store, j->job, 0, 0, web_count_report, &c);
    fputs("<tr><td>", w->out);
    web_job_link(j->job, w->out);
    if (j->blind && *j->blind)
        fputs(" <b class=\"blind\" title=\"diagnosis sheds work\">blind</b>", w->out);
    fprintf(w->out,
            "</td><td class=\"num\">%" PRIu32 "</td><td class=\"num\">%" PRIu32
            "</td><td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
            "</td><td>%s</td><td>%s</td><td class=\"num\">%zu</td><td class=\"num%s\">%zu</td>"
            "</tr>\n",
            j->ranks_seen, j->world_size, j->last_step, j->rank_steps,
            web_time(j->first_seen_unix_ns, t1, sizeof(t1)),
            web_time(j->last_seen_unix_ns, t2, sizeof(t2)), c.reports, c.paging ? " pages" : "",
            c.paging);
    w->jobs++;
    argus__v1__job_info__free_unpacked(j, NULL);
    return 0;
}

static int web_index_page(struct store *s, FILE *out)
{
    struct web_index w = {.store = s, .out = out};

    web_html_begin(out, "jobs");
    fputs("<h1>Jobs</h1>\n<table class=\"jobs\"><tr><th>job</th><th>ranks seen</th>"
          "<th>world size</th><th>last step</th><th>rank-steps</th><th>first seen</th>"
          "<th>last seen</th><th>reports</th><th>reports that page</th></tr>\n",
          out);
    store_scan_jobs(s, web_index_row, &w);
    fputs("</table>\n", out);
    if (w.jobs == 0)
        fputs("<p class=\"muted\">No jobs yet: no agent has sent steps to this "
              "collector.</p>\n",
              out);
    web_html_end(out);
    return 200;
}

/* "/rank/RANK/JOB" (or "/reports/PAGE/JOB") -> the number and the job;
 * false when it is not that shape. */
static bool web_parse_rank(const char *rest, uint32_t *rank, const char **job)
{
    char *end;
    unsigned long v;

    if (*rest < '0' || *rest > '9')
        return false;
    errno = 0;
    v = strtoul(rest, &end, 10);
    if (errno || v > UINT32_MAX || *end != '/' || !end[1])
        return false;
    *rank = (uint32_t)v;
    *job = end + 1;
    return true;
}

/* The page for path into out: its status, or 0 when path is no page. */
static int web_route(struct store *s, const char *path, FILE *out)
{
    uint32_t rank;
    const char *job;

    if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0)
        return web_index_page(s, out);
    if (strncmp(path, "/job/", 5) == 0 && path[5])
        return web_job_page(s, path + 5, out);
    if (strncmp(path, "/report/", 8) == 0 && path[8])
        return web_report_page(s, path + 8, out);
    if (strncmp(path, "/reports/", 9) == 0) { /* /reports/PAGE/JOB: older reports */
        if (web_parse_rank(path + 9, &rank, &job))
            return web_job_reports_page(s, job, rank, out);
        web_html_begin(out, "not found");
        fputs("<p>A page of reports is /reports/PAGE/JOB, PAGE a number.</p>\n", out);
        web_html_end(out);
        return 404;
    }
    if (strncmp(path, "/rank/", 6) == 0) {
        if (web_parse_rank(path + 6, &rank, &job))
            return web_rank_page(s, job, rank, out);
        web_html_begin(out, "not found");
        fputs("<p>A rank page is /rank/RANK/JOB, RANK a number.</p>\n", out);
        web_html_end(out);
        return 404;
    }
    return 0;
}

bool web_handle(struct store *store, const char *path, struct http_response *resp)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int status;

    if (!out) {
        resp->status = 500;
        return true;
    }
    status = web_route(store, path, out);
    if (fclose(out) != 0 || !buf) {
        free(buf);
        resp->status = 500;
        return true;
    }
    if (status == 0) {
        free(buf);
        return false;
    }
    resp->status = status;
    resp->content_type = "text/html; charset=utf-8";
    resp->body = buf;
    resp->len = len;
    return true;
}
