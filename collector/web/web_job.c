/* The job page: see web_job.h. */
#include "collector/web/web_job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "collector/web/web.h"
#include "collector/web/web_html.h"
#include "common/causes.h"
#include "common/heatmap.h"
#include "common/heatmap_svg.h"
#include "common/heatmap_wire.h"

#define WEB_MAX_REPORTS 50 /* newest shown */
/* GPU-hours for printf's "%.*f": whole from 100, two decimals from 1, four
 * below (as argusctl prints them) */
#define WEB_HOURS(h) ((h) >= 100 ? 0 : (h) >= 1 ? 2 : 4), (h)

static int web_unpack_job(void *ctx, const void *value, size_t len)
{
    *(Argus__V1__JobInfo **)ctx = argus__v1__job_info__unpack(NULL, len, value);
    return 0;
}

Argus__V1__JobInfo *web_job_info(struct store *s, const char *job)
{
    Argus__V1__JobInfo *info = NULL;

    store_get_job(s, job, web_unpack_job, &info);
    return info;
}

char *web_job_rank_suffix(const char *job)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    if (!f)
        return NULL;
    fputc('/', f);
    web_url_encode(job, f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The reports of one page: the newest WEB_MAX_REPORTS after the newest
 * `skip`, kept oldest first (the store scans them so). */
struct web_reports {
    Argus__V1__Report *r[WEB_MAX_REPORTS];
    size_t n, total;   /* kept; the job's reports in all */
    size_t lo, hi;     /* the kept ones' positions, oldest first: [lo, hi) */
    size_t seen, page; /* scanned so far; the page (0: the newest) */
};

static int web_count_one(void *ctx, const void *value, size_t len)
{
    (void)value, (void)len;
    ((struct web_reports *)ctx)->total++;
    return 0;
}

static int web_keep_report(void *ctx, const void *value, size_t len)
{
    struct web_reports *w = ctx;
    size_t at = w->seen++;
    Argus__V1__Report *r;

    if (at < w->lo || at >= w->hi || w->n == WEB_MAX_REPORTS)
        return 0;
    r = argus__v1__report__unpack(NULL, len, value);
    if (r)
        w->r[w->n++] = r;
    return 0;
}

/* Page `page` of job's reports into w (two scans: count, then keep). */
static void web_load_reports(struct store *s, const char *job, size_t page, struct web_reports *w)
{
    size_t newer = page * WEB_MAX_REPORTS;

    memset(w, 0, sizeof(*w));
    w->page = page;
    store_scan_reports(s, job, 0, 0, web_count_one, w);
    w->hi = w->total > newer ? w->total - newer : 0;
    w->lo = w->hi > WEB_MAX_REPORTS ? w->hi - WEB_MAX_REPORTS : 0;
    store_scan_reports(s, job, 0, 0, web_keep_report, w);
}

static void web_reports_free(struct web_reports *w)
{
    for (size_t i = 0; i < w->n; i++)
        argus__v1__report__free_unpacked(w->r[i], NULL);
}

/* Report i of the kept ones, newest first. */
static const Argus__V1__Report *web_report_at(const struct web_reports *w, size_t i)
{
    return w->r[w->n - 1 - i];
}

static const char *web_enum(const ProtobufCEnumDescriptor *d, int v)
{
    const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);
    return e ? e->name : "?";
}

static void web_suspect_row(const Argus__V1__Suspect *x, const char *suffix, FILE *out)
{
    const struct causes_row *cause = causes_known(x->cause) ? causes_get(x->cause) : NULL;

    fprintf(out, "<tr class=\"%s\"><td>%s</td><td>", x->pages ? "pages" : "finding",
            x->pages ? "PAGES" : "finding");
    if (x->rank != UINT32_MAX)
        fprintf(out, "<a class=\"suspect-name\" href=\"/rank/%" PRIu32 "%s\">rank %" PRIu32 "</a>",
                x->rank, suffix, x->rank);
    else
        fputs("(node)", out);
    fputs("</td><td>", out);
    web_html_escape(x->node, out);
    fprintf(out, "</td><td class=\"num\">%" PRId32 "</td><td>", x->gpu);
    web_html_escape(x->group, out);
    /* The cause as argus.proto spells it ("CAUSE_COMPUTE"), "?" when unknown. */
    fprintf(out, "</td><td>%s</td><td>%s%s</td><td>",
            web_enum(&argus__v1__level__descriptor, x->level), cause ? "CAUSE_" : "",
            cause ? cause->name : "?");
    web_html_escape(x->where, out);
    fprintf(out,
            "</td><td class=\"num\">%.2f</td><td class=\"num\">%" PRIu32 "/%" PRIu32 "</td><td>",
            x->score, x->persisted, x->window);
    web_html_escape(x->evidence, out);
    fprintf(out, "</td><td class=\"num\">%.*f</td></tr>\n", WEB_HOURS(x->gpu_hours_lost));
}

void web_job_report(const Argus__V1__Report *r, const char *suffix, FILE *out)
{
    char t[40];

    fprintf(out, "<div class=\"report\" id=\"report-");
    web_html_escape(r->id, out);
    fprintf(out, "\"><p><b class=\"%s\">%s</b> report <a href=\"/report/",
            r->pages ? "pages" : "finding", r->pages ? "PAGES" : "finding");
    web_url_encode(r->id, out);
    fputs("\"><code>", out);
    web_html_escape(r->id, out);
    fprintf(out, "</code></a> at %s, steps %" PRIu64 "-%" PRIu64 ": ",
            web_time(r->created_unix_ns, t, sizeof(t)), r->from_step, r->to_step);
    web_html_escape(r->summary, out);
    fprintf(out, " <span class=\"cost\">GPU-hours lost %.*f (%.1f s of the job's time)</span>",
            WEB_HOURS(r->gpu_hours_lost), r->seconds_lost);
    if (r->pages) {
        /* the drill-down capture stored with a paging report (collector/trace/) */
        fputs(" <a class=\"trace\" href=\"/trace/", out);
        web_url_encode(r->id, out);
        fputs(".json\">raw spans (Chrome trace / Perfetto JSON)</a>", out);
    }
    fputs("</p>\n<table><tr><th></th><th>rank</th><th>node</th><th>GPU</th><th>group</th>"
          "<th>level</th><th>cause</th><th>where</th><th>score</th><th>persisted</th>"
          "<th>evidence</th><th>GPU-hours lost</th></tr>\n",
          out);
    for (size_t i = 0; i < r->n_suspects; i++)
        web_suspect_row(r->suspects[i], suffix, out);
    fputs("</table></div>\n", out);
}

/* Links to the newer and the older page of reports, when there are. */
static void web_reports_pager(const struct web_reports *w, const char *suffix, FILE *out)
{
    if (w->page == 0 && w->lo == 0)
        return;
    fputs("<p class=\"pager\">", out);
    if (w->page == 1)
        fprintf(out, "<a href=\"/job%s\">newer reports</a> ", suffix);
    else if (w->page > 1)
        fprintf(out, "<a href=\"/reports/%zu%s\">newer reports</a> ", w->page - 1, suffix);
    if (w->lo > 0)
        fprintf(out, "<a href=\"/reports/%zu%s\">older reports</a>", w->page + 1, suffix);
    fputs("</p>\n", out);
}

static void web_reports_section(const struct web_reports *w, const char *suffix, FILE *out)
{
    size_t paging = 0;

    for (size_t i = 0; i < w->n; i++)
        paging += web_report_at(w, i)->pages;
    fprintf(out, "<h2>Reports</h2>\n<p>%zu report%s", w->total, w->total == 1 ? "" : "s");
    if (w->total > w->n)
        fprintf(out, " (%zu-%zu of them, newest first)", w->total - w->hi + 1,
                w->total - w->hi + w->n);
    fprintf(out, ", %zu that page among those shown.</p>\n", paging);
    if (w->total == 0)
        fputs("<p class=\"muted\">No report: diagnosis found nothing in this job.</p>\n", out);
    web_reports_pager(w, suffix, out);
    for (size_t i = 0; i < w->n; i++)
        web_job_report(web_report_at(w, i), suffix, out);
    web_reports_pager(w, suffix, out);
}

struct web_fill {
    struct heatmap *h;
    int err;
};

static int web_fill_rank(void *ctx, const void *value, size_t len)
{
    struct web_fill *f = ctx;
    Argus__V1__Resource *r = argus__v1__resource__unpack(NULL, len, value);

    if (r) {
        if (heatmap_add_resource(f->h, r) == -ENOMEM)
            f->err = -ENOMEM;
        argus__v1__resource__free_unpacked(r, NULL);
    }
    return f->err;
}

static int web_fill_step(void *ctx, const void *value, size_t len)
{
    struct web_fill *f = ctx;
    struct heatmap_wire_cell cell;

    if (heatmap_wire_cell(value, len, &cell) == 0) /* unreadable records are left grey */
        heatmap_set(f->h, cell.rank, cell.step, cell.own_ns);
    return 0;
}

/* The heatmap of the job's last steps, from the store, with the suspects
 * of the kept reports. NULL when out of memory or empty. */
static struct heatmap *web_heatmap(struct store *s, const Argus__V1__JobInfo *j,
                                   const struct web_reports *w)
{
    uint32_t world = j->world_size > j->ranks_seen ? j->world_size : j->ranks_seen;
    uint64_t n = WEB_HEATMAP_STEPS, from;
    struct web_fill f = {0};

    if (!world)
        return NULL;
    if (n * world > WEB_HEATMAP_RECORDS)
        n = WEB_HEATMAP_RECORDS / world > 10 ? WEB_HEATMAP_RECORDS / world : 10;
    from = j->last_step + 1 > n ? j->last_step + 1 - n : 0;
    f.h = heatmap_new(world, from, j->last_step - from + 1);
    if (!f.h)
        return NULL;
    store_scan_ranks(s, j->job, web_fill_rank, &f);
    for (size_t i = 0; i < w->n && f.err == 0; i++)
        f.err = heatmap_add_report(f.h, w->r[i]);
    if (f.err == 0)
        f.err = store_scan_steps(s, j->job, -1, from, j->last_step, web_fill_step, &f);
    if (f.err == 0)
        f.err = heatmap_finish(f.h);
    if (f.err < 0) {
        heatmap_free(f.h);
        return NULL;
    }
    return f.h;
}

static void web_heatmap_section(struct store *s, const Argus__V1__JobInfo *j,
                                const struct web_reports *w, const char *suffix, FILE *out)
{
    struct heatmap *h = web_heatmap(s, j, w);
    struct heatmap_svg_options o = {.title = "own time vs peer group, by rank and step",
                                    .max_rows = 256,
                                    .max_cols = 400,
                                    .rank_prefix = "/rank/",
                                    .rank_suffix = suffix};

    fputs("<h2>Heatmap</h2>\n", out);
    if (!h) {
        fputs("<p class=\"muted\">No heatmap: no steps stored, or too many cells.</p>\n", out);
        return;
    }
    fprintf(out,
            "<p>Steps %" PRIu64 "-%" PRIu64 " of %u ranks. A cell is the rank's own time (its "
            "step less its time inside collectives) against the median of its peer group "
            "(pipeline stage) in that step: coupled peers that only wait for a straggler stay "
            "white. Suspects that page are outlined and labelled; the dashed line is the "
            "onset. Rank labels open the rank's steps.</p>\n",
            heatmap_first_step(h), heatmap_first_step(h) + heatmap_nsteps(h) - 1,
            heatmap_nranks(h));
    for (size_t i = 0; i < heatmap_nsuspects(h); i++) {
        const char *label;
        uint32_t rank = heatmap_suspect(h, i, &label);
        fprintf(out, "%s<a class=\"suspect-name\" href=\"/rank/%" PRIu32 "%s\">",
                i ? ", " : "<p>Suspects: ", rank, suffix);
        web_html_escape(label, out);
        fputs("</a>", out);
    }
    fputs(heatmap_nsuspects(h) ? "</p>\n<div>" : "<div>", out);
    if (heatmap_write_svg(h, &o, out) < 0)
        fputs("<p>heatmap failed: out of memory</p>", out);
    fputs("</div>\n", out);
    heatmap_free(h);
}

int web_job_page(struct store *s, const char *job, FILE *out)
{
    Argus__V1__JobInfo *j = web_job_info(s, job);
    struct web_reports w = {0};
    char *suffix = web_job_rank_suffix(job);
    char t[40];

    web_html_begin(out, job);
    if (!j || !suffix) {
        fputs(j ? "<p>Out of memory.</p>\n" : "<p>No such job in this collector: ", out);
        if (!j)
            web_html_escape(job, out);
        fputs(j ? "" : ". <a href=\"/\">All jobs</a>.</p>\n", out);
        web_html_end(out);
        if (j)
            argus__v1__job_info__free_unpacked(j, NULL);
        free(suffix);
        return j ? 500 : 404;
    }
    fputs("<h1>Job ", out);
    web_html_escape(job, out);
    fprintf(out,
            "</h1>\n<p>%" PRIu32 " ranks seen, world size %" PRIu32 ", last step %" PRIu64
            ", %" PRIu64 " rank-steps stored, last seen %s.</p>\n",
            j->ranks_seen, j->world_size, j->last_step, j->rank_steps,
            web_time(j->last_seen_unix_ns, t, sizeof(t)));
    if (j->blind && *j->blind) { /* diag_blind.h: findings may be missing */
        fputs("<p class=\"blind\"><b>Diagnosis is blind in part (ArgusBlind)</b>: ", out);
        web_html_escape(j->blind, out);
        fputs(". A straggler in these steps may be missing from the reports.</p>\n", out);
    }
    web_load_reports(s, job, 0, &w);
    web_heatmap_section(s, j, &w, suffix, out);
    web_reports_section(&w, suffix, out);
    web_html_end(out);
    web_reports_free(&w);
    argus__v1__job_info__free_unpacked(j, NULL);
    free(suffix);
    return 200;
}

int web_job_reports_page(struct store *s, const char *job, size_t page, FILE *out)
{
    Argus__V1__JobInfo *j = web_job_info(s, job);
    char *suffix = web_job_rank_suffix(job);
    struct web_reports w;

    web_html_begin(out, job);
    if (!j || !suffix) {
        fputs(j ? "<p>Out of memory.</p>\n" : "<p>No such job in this collector.</p>\n", out);
        web_html_end(out);
        if (j)
            argus__v1__job_info__free_unpacked(j, NULL);
        free(suffix);
        return j ? 500 : 404;
    }
    fprintf(out, "<h1>Reports of job <a href=\"/job%s\">", suffix);
    web_html_escape(job, out);
    fputs("</a></h1>\n", out);
    web_load_reports(s, job, page, &w);
    web_reports_section(&w, suffix, out);
    web_html_end(out);
    web_reports_free(&w);
    argus__v1__job_info__free_unpacked(j, NULL);
    free(suffix);
    return 200;
}
