/* The heatmap as SVG: see heatmap_svg.h. */
#include "common/heatmap_svg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SVG_LEFT 170.0 /* rank labels and suspect labels */
#define SVG_TOP 64.0
#define SVG_RIGHT 130.0 /* node labels */
#define SVG_BOTTOM 100.0
#define SVG_LEVELS 16 /* colour steps per octave, either side of white */
#define SVG_FONT 11.0 /* px, the document's font size */
#define SVG_MAX_BOXES (2 * HEATMAP_MAX_SUSPECTS)

/* Where a label lies: its estimated box (font size high, 0.6 font size a
 * character wide, with a margin). */
struct svg_box {
    double x0, x1, y0, y1;
};

/* The geometry of one drawing. */
struct svg {
    const struct heatmap *h;
    const struct heatmap_svg_options *o;
    FILE *out;
    struct heatmap_row *rows;
    uint32_t nrows;
    uint64_t sbin, ncols;
    double cw, ch;
    float *cells;                        /* nrows x ncols, the worst ratio of each */
    struct svg_box taken[SVG_MAX_BOXES]; /* the suspects' labels, placed first */
    size_t ntaken;
    double *suspect_y; /* the baseline of each suspect's labels */
};

void heatmap_svg_escape(const char *s, FILE *out)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            /* control characters would make the document invalid XML */
            fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
        }
    }
}

/* The colour level of a ratio: 0 white, +-1..SVG_LEVELS slower/faster,
 * INT32_MIN no record. */
static int svg_level(double ratio)
{
    if (ratio <= 0)
        return INT32_MIN;
    double x = log2(ratio);
    x = x > 1 ? 1 : x < -1 ? -1 : x;
    return (int)lround(x * SVG_LEVELS);
}

static const char *svg_level_color(int level, char *buf)
{
    double x = (double)level / SVG_LEVELS;
    int r = 255, g = 255, b = 255;

    if (level == INT32_MIN) {
        snprintf(buf, 8, "#dddddd");
        return buf;
    }
    if (x > 0) {
        g = b = (int)lround(255 * (1 - x));
        r = (int)lround(255 - 75 * x);
    } else {
        r = g = (int)lround(255 * (1 + x * 0.7));
    }
    snprintf(buf, 8, "#%02x%02x%02x", r, g, b);
    return buf;
}

const char *heatmap_svg_color(double ratio, char *buf)
{
    return svg_level_color(svg_level(ratio), buf);
}

static double svg_clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The box of text at (x, y) (baseline) anchored at its start, middle or end. */
static struct svg_box svg_text_box(double x, double y, const char *text, char anchor)
{
    double w = (double)strlen(text) * SVG_FONT * 0.6 + 2;
    double x0 = anchor == 'e' ? x - w : anchor == 'm' ? x - w / 2 : x;

    return (struct svg_box){x0, x0 + w, y - SVG_FONT - 1, y + SVG_FONT * 0.25 + 1};
}

static bool svg_overlap(const struct svg_box *a, const struct svg_box *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* Whether box b is clear of every suspect label. */
static bool svg_clear(const struct svg *g, const struct svg_box *b)
{
    for (size_t i = 0; i < g->ntaken; i++)
        if (svg_overlap(&g->taken[i], b))
            return false;
    return true;
}

/* The smallest 1, 2 or 5 x 10^k at least min (>= 1): round tick spacing. */
static uint64_t svg_round_step(double min)
{
    for (uint64_t p = 1;; p *= 10) {
        if ((double)p >= min)
            return p;
        if (2.0 * p >= min)
            return 2 * p;
        if (5.0 * p >= min)
            return 5 * p;
        if (p > UINT64_MAX / 100)
            return p * 10;
    }
}

static double svg_x(const struct svg *g, uint64_t col)
{
    return SVG_LEFT + (double)col * g->cw;
}

static double svg_y(const struct svg *g, uint32_t row)
{
    return SVG_TOP + row * g->ch;
}

/* The row that holds rank. */
static uint32_t svg_row_of(const struct svg *g, uint32_t rank)
{
    uint32_t lo = 0, hi = g->nrows - 1;

    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;
        if (g->rows[mid].first <= rank)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The strip of the suspect on rank: its top and height. */
static void svg_strip(const struct svg *g, uint32_t rank, double *y, double *ht)
{
    *ht = g->ch < 6 ? 6 : g->ch;
    *y = svg_y(g, svg_row_of(g, rank)) + g->ch / 2 - *ht / 2;
}

/* Each suspect's labels before anything else is placed: its label at the
 * left and its own node's name at the right, beside its strip, moved down
 * below an earlier suspect's where they would cover each other. */
static int svg_place_suspects(struct svg *g)
{
    double right = SVG_LEFT + (double)g->ncols * g->cw;

    g->suspect_y = calloc(heatmap_nsuspects(g->h) + 1, sizeof(*g->suspect_y));
    if (!g->suspect_y)
        return -ENOMEM;
    for (size_t i = 0; i < heatmap_nsuspects(g->h); i++) {
        const char *label;
        uint32_t rank = heatmap_suspect(g->h, i, &label);
        double y, ht;
        svg_strip(g, rank, &y, &ht);
        y += ht / 2 + 4;
        struct svg_box l, n;
        for (size_t k = 0;; k = 0) {
            l = svg_text_box(SVG_LEFT - 14, y, label, 'e');
            n = svg_text_box(right + 6, y, heatmap_node(g->h, rank), 's');
            while (k < g->ntaken && !svg_overlap(&g->taken[k], &l) &&
                   !svg_overlap(&g->taken[k], &n))
                k++;
            if (k == g->ntaken)
                break;
            y = g->taken[k].y1 + SVG_FONT + 1;
        }
        g->suspect_y[i] = y;
        g->taken[g->ntaken++] = l;
        g->taken[g->ntaken++] = n;
    }
    return 0;
}

static int svg_layout(struct svg *g)
{
    uint32_t max_rows = g->o->max_rows ? g->o->max_rows : 256;
    uint32_t max_cols = g->o->max_cols ? g->o->max_cols : 400;
    uint64_t nsteps = heatmap_nsteps(g->h);

    g->rows = heatmap_rows(g->h, max_rows, &g->nrows);
    if (!g->rows)
        return -ENOMEM;
    g->sbin = (nsteps + max_cols - 1) / max_cols;
    g->ncols = (nsteps + g->sbin - 1) / g->sbin;
    g->cw = svg_clamp(900.0 / (double)g->ncols, 2, 24);
    g->ch = svg_clamp(640.0 / g->nrows, 2, 18);
    g->cells = malloc((size_t)g->nrows * g->ncols * sizeof(*g->cells));
    if (!g->cells)
        return -ENOMEM;
    for (uint32_t i = 0; i < g->nrows; i++)
        for (uint64_t c = 0; c < g->ncols; c++)
            g->cells[(size_t)i * g->ncols + c] = (float)heatmap_max_ratio(
                g->h, g->rows[i].first, g->rows[i].last, c * g->sbin, (c + 1) * g->sbin - 1);
    return svg_place_suspects(g);
}

static uint64_t svg_step(const struct svg *g, uint64_t col)
{
    return heatmap_first_step(g->h) + col * g->sbin;
}

static uint64_t svg_last_step(const struct svg *g, uint64_t col)
{
    uint64_t last = heatmap_first_step(g->h) + heatmap_nsteps(g->h) - 1;
    uint64_t s = svg_step(g, col) + g->sbin - 1;
    return s < last ? s : last;
}

/* "ranks a-b (node)" or "ranks a-b, N nodes (x .. y)" for a tooltip. */
static void svg_row_name(const struct svg *g, uint32_t first, uint32_t last, uint32_t nodes)
{
    if (first == last)
        fprintf(g->out, "rank %u", first);
    else
        fprintf(g->out, "ranks %u-%u", first, last);
    if (nodes > 1) {
        fprintf(g->out, ", %u nodes (", nodes);
        heatmap_svg_escape(heatmap_node(g->h, first), g->out);
        fputs(" .. ", g->out);
        heatmap_svg_escape(heatmap_node(g->h, last), g->out);
        fputs(")", g->out);
    } else if (*heatmap_node(g->h, first)) {
        fputs(" (", g->out);
        heatmap_svg_escape(heatmap_node(g->h, first), g->out);
        fputs(")", g->out);
    }
}

/* One row of cells at y, height ht, from vals (ncols): runs of one colour
 * as one rectangle, white left to the background. */
static void svg_cells(const struct svg *g, const float *vals, double y, double ht, uint32_t first,
                      uint32_t last, uint32_t nodes)
{
    char color[8];

    for (uint64_t c = 0; c < g->ncols;) {
        int level = svg_level(vals[c]);
        uint64_t e = c + 1;
        float worst = vals[c];
        for (; e < g->ncols && svg_level(vals[e]) == level; e++)
            worst = vals[e] > worst ? vals[e] : worst;
        if (level != 0) {
            fprintf(g->out,
                    "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\">"
                    "<title>",
                    svg_x(g, c), y, (double)(e - c) * g->cw, ht, svg_level_color(level, color));
            svg_row_name(g, first, last, nodes);
            fprintf(g->out, " steps %llu-%llu: %.2fx</title></rect>\n",
                    (unsigned long long)svg_step(g, c), (unsigned long long)svg_last_step(g, e - 1),
                    worst);
        }
        c = e;
    }
}

static void svg_grid(const struct svg *g)
{
    fprintf(g->out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" "
            "stroke=\"#888888\"/>\n",
            SVG_LEFT, SVG_TOP, (double)g->ncols * g->cw, g->nrows * g->ch);
    for (uint32_t i = 0; i < g->nrows; i++)
        svg_cells(g, g->cells + (size_t)i * g->ncols, svg_y(g, i), g->ch, g->rows[i].first,
                  g->rows[i].last, g->rows[i].nodes);
}

/* A label ending at the left of the grid at baseline y, linked to the rank
 * page when asked. */
static void svg_rank_label(const struct svg *g, double y, uint32_t rank, const char *cls,
                           const char *text)
{
    if (g->o->rank_prefix) {
        fputs("<a href=\"", g->out);
        heatmap_svg_escape(g->o->rank_prefix, g->out);
        fprintf(g->out, "%u", rank);
        heatmap_svg_escape(g->o->rank_suffix, g->out);
        fputs("\">", g->out);
    }
    fprintf(g->out, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", cls,
            SVG_LEFT - 6, y);
    heatmap_svg_escape(text, g->out);
    fputs("</text>", g->out);
    fputs(g->o->rank_prefix ? "</a>\n" : "\n", g->out);
}

/* Where rank lies on the rank axis: inside its row, in proportion. */
static double svg_rank_y(const struct svg *g, uint32_t rank)
{
    uint32_t i = svg_row_of(g, rank);
    const struct heatmap_row *r = &g->rows[i];

    return svg_y(g, i) + g->ch * ((double)(rank - r->first) + 0.5) / (r->last - r->first + 1);
}

/* Rank ticks at round ranks (1-2-5 steps, at most about 24, at least two
 * lines of text apart), each left out where a suspect's label lies. */
static void svg_rank_ticks(const struct svg *g)
{
    uint32_t nranks = heatmap_nranks(g->h);
    double px = g->nrows * g->ch / nranks; /* per rank, on average */
    double min = (double)nranks / 24, gap = 2 * SVG_FONT / px;
    uint64_t step = svg_round_step(min > gap ? min : gap);
    char text[16];

    for (uint64_t v = 0; v < nranks; v += step) {
        double y = svg_rank_y(g, (uint32_t)v);
        snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
        struct svg_box b = svg_text_box(SVG_LEFT - 6, y + 4, text, 'e');
        if (!svg_clear(g, &b))
            continue;
        fprintf(g->out,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#555555\"/>",
                SVG_LEFT - 4, SVG_LEFT, y, y);
        svg_rank_label(g, y + 4, (uint32_t)v, "rank", text);
    }
}

/* Node names (about 40, each from the node of its row's first rank, none
 * over a suspect's node label) and node boundaries. */
static void svg_node_labels(const struct svg *g)
{
    uint32_t nodes = 0, nstride;
    double right = SVG_LEFT + (double)g->ncols * g->cw, last = -1e9;

    for (uint32_t i = 0; i < g->nrows; i++)
        nodes += g->rows[i].node_start && *heatmap_node(g->h, g->rows[i].first);
    nstride = (nodes + 39) / 40;
    for (uint32_t i = 0, k = 0; i < g->nrows; i++) {
        const struct heatmap_row *r = &g->rows[i];
        const char *node = heatmap_node(g->h, r->first);
        if (!r->node_start || !*node)
            continue;
        double y = svg_y(g, i) + (g->ch > 10 ? g->ch / 2 + 4 : 9);
        struct svg_box b = svg_text_box(right + 6, y, node, 's');
        bool label = k++ % nstride == 0 && y - last >= SVG_FONT + 2 && svg_clear(g, &b);
        /* every boundary while rows are tall enough to see between them, else
         * those of the labelled nodes */
        if (i > 0 && (g->ch >= 4 || label))
            fprintf(g->out,
                    "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#555555\" "
                    "stroke-width=\"0.6\"/>\n",
                    SVG_LEFT, right, svg_y(g, i), svg_y(g, i));
        if (!label)
            continue;
        last = y;
        fprintf(g->out, "<text class=\"node\" x=\"%.1f\" y=\"%.1f\">", right + 6, y);
        heatmap_svg_escape(node, g->out);
        fputs("</text>\n", g->out);
    }
}

/* Rank ticks, node names and boundaries, the axis titles. */
static void svg_row_axes(const struct svg *g)
{
    double right = SVG_LEFT + (double)g->ncols * g->cw;

    svg_rank_ticks(g);
    svg_node_labels(g);
    fprintf(g->out,
            "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
            "text-anchor=\"middle\">rank (%s)</text>\n",
            SVG_TOP + g->nrows * g->ch / 2, SVG_TOP + g->nrows * g->ch / 2,
            g->rows[0].nodes ? "rows: nodes, worst rank of each" : "one row per rank");
    fprintf(g->out, "<text x=\"%.1f\" y=\"%.1f\">node</text>\n", right + 6, SVG_TOP - 6);
}

/* Step ticks at round steps (1-2-5 spacing, at most about 10, never
 * closer than their labels are wide) and the onset line. */
static void svg_step_axis(const struct svg *g)
{
    uint64_t first = heatmap_first_step(g->h), n = heatmap_nsteps(g->h), onset;
    double bottom = SVG_TOP + g->nrows * g->ch, px = g->cw / (double)g->sbin, min = n / 10.0;
    char text[24];

    snprintf(text, sizeof(text), "%llu", (unsigned long long)(first + n - 1));
    double gap = ((double)strlen(text) * SVG_FONT * 0.6 + 8) / px;
    uint64_t step = svg_round_step(min > gap ? min : gap);
    for (uint64_t v = (first + step - 1) / step * step; v - first < n; v += step) {
        double x = SVG_LEFT + ((double)(v - first) + 0.5) * px;
        fprintf(g->out,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\"/>"
                "<text class=\"step\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%llu</text>\n",
                x, x, bottom, bottom + 5, x, bottom + 17, (unsigned long long)v);
        if (v > UINT64_MAX - step)
            break;
    }
    fprintf(g->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n",
            SVG_LEFT + (double)g->ncols * g->cw / 2, bottom + 32);
    if (!heatmap_onset(g->h, &onset) || onset < first || onset - first >= n)
        return;
    double x = svg_x(g, (onset - first) / g->sbin);
    snprintf(text, sizeof(text), "%llu", (unsigned long long)onset);
    double half = (strlen("onset: step ") + strlen(text)) * SVG_FONT * 0.6 / 2 + 2;
    double right = SVG_LEFT + (double)g->ncols * g->cw, tx = x + half > right ? right - half : x;
    fprintf(g->out,
            "<line class=\"onset\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#000000\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"/>\n"
            "<text class=\"onset\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "font-weight=\"bold\">onset: step %s</text>\n",
            x, x, SVG_TOP - 14, bottom, tx, SVG_TOP - 18, text);
}

/* Each suspect: on aggregated rows its own cells as a strip on top of its
 * row; outlined, with a marker, its label at the left and its node's name
 * at the right (where svg_place_suspects put them). */
static int svg_suspects(const struct svg *g)
{
    float *own = malloc(g->ncols * sizeof(*own));
    double w = (double)g->ncols * g->cw;

    if (!own)
        return -ENOMEM;
    for (size_t i = 0; i < heatmap_nsuspects(g->h); i++) {
        const char *label;
        uint32_t rank = heatmap_suspect(g->h, i, &label), row = svg_row_of(g, rank);
        double y, ht;
        svg_strip(g, rank, &y, &ht);
        if (g->rows[row].nodes) {
            for (uint64_t c = 0; c < g->ncols; c++)
                own[c] =
                    (float)heatmap_max_ratio(g->h, rank, rank, c * g->sbin, (c + 1) * g->sbin - 1);
            fprintf(g->out,
                    "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" "
                    "fill=\"#ffffff\"/>\n",
                    SVG_LEFT, y, w, ht);
            svg_cells(g, own, y, ht, rank, rank, 1);
        }
        fprintf(g->out,
                "<rect class=\"suspect\" x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" "
                "fill=\"none\" stroke=\"#000000\" stroke-width=\"2\"/>\n"
                "<path d=\"M%.1f %.2f l-9 -6 v12 z\" fill=\"#cc0000\"/>\n",
                SVG_LEFT - 1, y - 1, w + 2, ht + 2, SVG_LEFT - 2, y + ht / 2);
        fprintf(g->out,
                "<text class=\"suspect\" x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" "
                "fill=\"#cc0000\" font-weight=\"bold\">",
                SVG_LEFT - 14, g->suspect_y[i]);
        heatmap_svg_escape(label, g->out);
        fputs("</text>\n", g->out);
        if (!*heatmap_node(g->h, rank))
            continue;
        fprintf(g->out,
                "<text class=\"node suspect\" x=\"%.1f\" y=\"%.2f\" fill=\"#cc0000\" "
                "font-weight=\"bold\">",
                SVG_LEFT + w + 6, g->suspect_y[i]);
        heatmap_svg_escape(heatmap_node(g->h, rank), g->out);
        fputs("</text>\n", g->out);
    }
    free(own);
    return 0;
}

/* The colour scale: 0.5x .. 1x .. 2x and the grey of no record. */
static void svg_legend(const struct svg *g)
{
    double y = SVG_TOP + g->nrows * g->ch + 50, x0 = SVG_LEFT, w = 8;
    char color[8];

    for (int l = -SVG_LEVELS; l <= SVG_LEVELS; l++)
        fprintf(g->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" fill=\"%s\"/>\n",
                x0 + (l + SVG_LEVELS) * w, y, w, svg_level_color(l, color));
    fprintf(g->out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" fill=\"none\" "
            "stroke=\"#888888\"/>\n"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">0.5x</text>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">1x (group median)</text>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">2x+</text>\n"
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"#dddddd\"/>"
            "<text x=\"%.1f\" y=\"%.1f\">no record</text>\n",
            x0, y, (2 * SVG_LEVELS + 1) * w, x0 + w / 2, y + 26, x0 + (SVG_LEVELS + 0.5) * w,
            y + 26, x0 + (2 * SVG_LEVELS + 0.5) * w, y + 26, x0 + (2 * SVG_LEVELS + 1) * w + 30, y,
            x0 + (2 * SVG_LEVELS + 1) * w + 46, y + 10);
}

static void svg_header(const struct svg *g)
{
    double W = SVG_LEFT + (double)g->ncols * g->cw + SVG_RIGHT;
    double H = SVG_TOP + g->nrows * g->ch + SVG_BOTTOM;

    fprintf(g->out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
            "font-size=\"11\">\n<title>",
            W, H, W, H);
    heatmap_svg_escape(g->o->title, g->out);
    fputs("</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
          "<text x=\"10\" y=\"18\" font-size=\"14\">",
          g->out);
    heatmap_svg_escape(g->o->title, g->out);
    fputs("</text>\n<text x=\"10\" y=\"34\">cell: own time (step less time inside "
          "collectives) / median of its peer group in that step; binned cells show the "
          "worst</text>\n",
          g->out);
}

int heatmap_write_svg(const struct heatmap *h, const struct heatmap_svg_options *o, FILE *out)
{
    struct svg g = {.h = h, .o = o, .out = out};
    int r = svg_layout(&g);

    if (r == 0) {
        svg_header(&g);
        svg_grid(&g);
        svg_row_axes(&g);
        svg_step_axis(&g);
        r = svg_suspects(&g);
        svg_legend(&g);
        fputs("</svg>\n", out);
    }
    free(g.rows);
    free(g.cells);
    free(g.suspect_y);
    if (r == 0 && ferror(out))
        r = -EIO;
    return r;
}
