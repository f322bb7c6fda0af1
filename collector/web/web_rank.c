/* The rank page: see web_rank.h. */
#include "collector/web/web_rank.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "collector/web/web.h"
#include "collector/web/web_html.h"
#include "collector/web/web_job.h"
#include "common/heatmap.h"

#define WEB_NAME_CACHE 32

struct web_rank {
    struct store *store;
    const char *job;
    uint32_t rank;
    Argus__V1__Resource *res;
    uint64_t *step, *own, *dur; /* WEB_RANK_STEPS each */
    size_t n;
    FILE *rows; /* the table body */
    uint64_t name_id[WEB_NAME_CACHE];
    char *name[WEB_NAME_CACHE];
    size_t names;
};

static int web_rank_res(void *ctx, const void *value, size_t len)
{
    struct web_rank *w = ctx;
    Argus__V1__Resource *r = argus__v1__resource__unpack(NULL, len, value);

    if (r && r->rank == w->rank) {
        w->res = r;
        return 1;
    }
    if (r)
        argus__v1__resource__free_unpacked(r, NULL);
    return 0;
}

/* A phase name through a small cache (the store's lookup otherwise). */
static const char *web_rank_name(struct web_rank *w, uint64_t id)
{
    char *n;

    for (size_t i = 0; i < w->names; i++)
        if (w->name_id[i] == id)
            return w->name[i] ? w->name[i] : "?";
    n = store_get_name(w->store, w->job, id);
    if (w->names == WEB_NAME_CACHE) {
        free(n);
        return "?";
    }
    w->name_id[w->names] = id;
    w->name[w->names++] = n;
    return n ? n : "?";
}

static int web_rank_step(void *ctx, const void *value, size_t len)
{
    struct web_rank *w = ctx;
    Argus__V1__StepRecord *s = argus__v1__step_record__unpack(NULL, len, value);
    char t[40];

    if (!s || w->n == WEB_RANK_STEPS) {
        if (s)
            argus__v1__step_record__free_unpacked(s, NULL);
        return s ? 1 : 0;
    }
    w->step[w->n] = s->step;
    w->dur[w->n] = s->duration_ns;
    w->own[w->n] = heatmap_own_ns(s);
    fprintf(w->rows,
            "<tr><td class=\"num\">%" PRIu64 "</td><td>%s</td><td class=\"num\">%.3f</td>"
            "<td class=\"num\">%.3f</td><td class=\"num\">%.3f</td><td>",
            s->step, web_time(s->start_unix_ns, t, sizeof(t)), s->duration_ns / 1e6,
            w->own[w->n] / 1e6, (s->duration_ns - w->own[w->n]) / 1e6);
    for (size_t p = 0; p < s->n_phases; p++) {
        fputs(p ? ", " : "", w->rows);
        web_html_escape(web_rank_name(w, s->phases[p]->name_id), w->rows);
        fprintf(w->rows, " %.3f", s->phases[p]->duration_ns / 1e6);
    }
    fprintf(w->rows, "</td><td class=\"num\">%zu</td></tr>\n", s->n_collectives);
    w->n++;
    argus__v1__step_record__free_unpacked(s, NULL);
    return 0;
}

/* A small chart: step time (grey) and own time (red) per step, in ms. */
static void web_rank_chart(const struct web_rank *w, FILE *out)
{
    double top = 1, W = 900, H = 160, x0 = 50, dx;

    if (w->n < 2)
        return;
    for (size_t i = 0; i < w->n; i++)
        top = w->dur[i] / 1e6 > top ? w->dur[i] / 1e6 : top;
    dx = (W - x0 - 10) / (double)(w->n - 1);
    fprintf(out,
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
            "<text x=\"4\" y=\"14\">%.1f ms</text><text x=\"4\" y=\"%.0f\">0</text>\n",
            W, H + 30, top, H + 4);
    for (int k = 0; k < 2; k++) {
        fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                k ? "#cc0000" : "#999999");
        for (size_t i = 0; i < w->n; i++)
            fprintf(out, "%.1f,%.1f ", x0 + i * dx,
                    H - (k ? w->own[i] : w->dur[i]) / 1e6 / top * (H - 10));
        fputs("\"/>\n", out);
    }
    fprintf(out,
            "<text x=\"%.0f\" y=\"%.0f\">step %" PRIu64 "</text>"
            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">step %" PRIu64 "</text>\n"
            "<text x=\"300\" y=\"%.0f\" fill=\"#999999\">step time</text>"
            "<text x=\"400\" y=\"%.0f\" fill=\"#cc0000\">own time (less time in "
            "collectives)</text>\n</svg>\n",
            x0, H + 16, w->step[0], W - 10, H + 16, w->step[w->n - 1], H + 28, H + 28);
}

static void web_rank_where(const struct web_rank *w, FILE *out)
{
    const Argus__V1__Resource *r = w->res;

    if (!r) {
        fputs("<p class=\"muted\">No resource record for this rank (where it runs is "
              "unknown).</p>\n",
              out);
        return;
    }
    fputs("<p>Node <b>", out);
    web_html_escape(r->node, out);
    fprintf(out,
            "</b>, GPU %" PRId32 ", pid %" PRIu32 ", local rank %" PRIu32 "; dp %" PRIu32
            " tp %" PRIu32 " pp %" PRIu32 " ep %" PRIu32 ".</p>\n",
            r->gpu, r->pid, r->local_rank, r->dp, r->tp, r->pp, r->ep);
}

static int web_rank_body(struct web_rank *w, const Argus__V1__JobInfo *j, FILE *out)
{
    char *rows = NULL;
    size_t len = 0;
    uint64_t from = j->last_step + 1 > WEB_RANK_STEPS ? j->last_step + 1 - WEB_RANK_STEPS : 0;

    w->rows = open_memstream(&rows, &len);
    if (!w->rows)
        return 500;
    store_scan_ranks(w->store, w->job, web_rank_res, w);
    store_scan_steps(w->store, w->job, w->rank, from, j->last_step, web_rank_step, w);
    fclose(w->rows);
    fprintf(out, "<h1>Rank %" PRIu32 " of job ", w->rank);
    web_job_link(w->job, out);
    fputs("</h1>\n", out);
    web_rank_where(w, out);
    fprintf(out, "<h2>Steps %" PRIu64 "-%" PRIu64 " (%zu stored)</h2>\n", from, j->last_step, w->n);
    web_rank_chart(w, out);
    fputs("<table class=\"steps\"><tr><th>step</th><th>start</th><th>step ms</th>"
          "<th>own ms</th><th>in collectives ms</th><th>phases (ms)</th>"
          "<th>collectives</th></tr>\n",
          out);
    fputs(rows ? rows : "", out);
    fputs("</table>\n", out);
    free(rows);
    return w->res || w->n ? 200 : 404;
}

int web_rank_page(struct store *s, const char *job, uint32_t rank, FILE *out)
{
    Argus__V1__JobInfo *j = web_job_info(s, job);
    struct web_rank w = {.store = s, .job = job, .rank = rank};
    char title[64];
    int status = 404;

    snprintf(title, sizeof(title), "rank %" PRIu32, rank);
    web_html_begin(out, title);
    w.step = calloc(WEB_RANK_STEPS, sizeof(*w.step));
    w.own = calloc(WEB_RANK_STEPS, sizeof(*w.own));
    w.dur = calloc(WEB_RANK_STEPS, sizeof(*w.dur));
    if (!j) {
        fputs("<p>No such job in this collector: ", out);
        web_html_escape(job, out);
        fputs(".</p>\n", out);
    } else if (!w.step || !w.own || !w.dur) {
        status = 500;
    } else {
        status = web_rank_body(&w, j, out);
        if (status == 404)
            fprintf(out, "<p>Job has no rank %" PRIu32 ".</p>\n", rank);
    }
    web_html_end(out);
    for (size_t i = 0; i < w.names; i++)
        free(w.name[i]);
    if (w.res)
        argus__v1__resource__free_unpacked(w.res, NULL);
    if (j)
        argus__v1__job_info__free_unpacked(j, NULL);
    free(w.step);
    free(w.own);
    free(w.dur);
    return status;
}
