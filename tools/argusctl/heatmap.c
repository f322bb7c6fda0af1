#include "tools/argusctl/heatmap.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct heatmap {
    uint32_t nranks;
    uint64_t first, nsteps;
    uint64_t *ns; /* nranks x nsteps, 0 = no record */
};

struct heatmap *heatmap_new(uint32_t nranks, uint64_t first_step, uint64_t nsteps)
{
    struct heatmap *h = calloc(1, sizeof(*h));

    if (!h || !nranks || !nsteps || (uint64_t)nranks * nsteps > (1ull << 28)) {
        free(h);
        return NULL;
    }
    h->nranks = nranks;
    h->first = first_step;
    h->nsteps = nsteps;
    h->ns = calloc((size_t)nranks * nsteps, sizeof(*h->ns));
    if (!h->ns) {
        free(h);
        return NULL;
    }
    return h;
}

void heatmap_free(struct heatmap *h)
{
    if (!h)
        return;
    free(h->ns);
    free(h);
}

void heatmap_set(struct heatmap *h, uint32_t rank, uint64_t step, uint64_t duration_ns)
{
    if (rank >= h->nranks || step < h->first || step - h->first >= h->nsteps)
        return;
    h->ns[(size_t)rank * h->nsteps + (step - h->first)] = duration_ns;
}

static int heatmap_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median of the non-zero times of each step. */
static uint64_t *heatmap_medians(const struct heatmap *h)
{
    uint64_t *med = calloc(h->nsteps, sizeof(*med)), *col = malloc(h->nranks * sizeof(*col));

    for (uint64_t s = 0; med && col && s < h->nsteps; s++) {
        size_t n = 0;
        for (uint32_t r = 0; r < h->nranks; r++)
            if (h->ns[(size_t)r * h->nsteps + s])
                col[n++] = h->ns[(size_t)r * h->nsteps + s];
        qsort(col, n, sizeof(*col), heatmap_cmp);
        med[s] = n ? col[n / 2] : 0;
    }
    free(col);
    return med;
}

/* Color of a ratio to the median: blue below, white at 1, red above. */
static void heatmap_color(double ratio, char *buf, size_t len)
{
    if (ratio <= 0) {
        snprintf(buf, len, "#dddddd"); /* no record */
        return;
    }
    double x = log2(ratio); /* -1 = half, +1 = double */
    if (x > 1)
        x = 1;
    if (x < -1)
        x = -1;
    int r = 255, g = 255, b = 255;
    if (x > 0) {
        g = b = (int)lround(255 * (1 - x));
        r = (int)lround(255 - 75 * x);
    } else {
        r = g = (int)lround(255 * (1 + x * 0.7));
    }
    snprintf(buf, len, "#%02x%02x%02x", r, g, b);
}

static void heatmap_escape(const char *s, FILE *out)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else if (*s == '&')
            fputs("&amp;", out);
        else
            fputc(*s, out);
    }
}

int heatmap_write_svg(const struct heatmap *h, const char *title, uint32_t max_rows,
                      uint32_t max_cols, FILE *out)
{
    uint64_t *med = heatmap_medians(h);
    uint32_t rbin = (h->nranks + max_rows - 1) / max_rows;
    uint64_t sbin = (h->nsteps + max_cols - 1) / max_cols;
    uint32_t rows = (h->nranks + rbin - 1) / rbin;
    uint64_t cols = (h->nsteps + sbin - 1) / sbin;
    double cw = cols < 200 ? 800.0 / cols : 4, ch = rows < 128 ? 512.0 / rows : 4;
    double W = 80 + cols * cw + 20, H = 50 + rows * ch + 60;
    char color[16];

    if (!med)
        return -ENOMEM;
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n<title>",
            W, H);
    heatmap_escape(title, out);
    fprintf(out, "</title>\n<text x=\"80\" y=\"20\" font-size=\"14\">");
    heatmap_escape(title, out);
    fprintf(out, "</text>\n<text x=\"80\" y=\"36\">value / step median: blue faster, white "
                 "median, red 2x slower or more; grey: no record</text>\n");
    for (uint32_t rr = 0; rr < rows; rr++) {
        for (uint64_t cc = 0; cc < cols; cc++) {
            double worst = 0;
            for (uint32_t r = rr * rbin; r < (rr + 1) * rbin && r < h->nranks; r++)
                for (uint64_t s = cc * sbin; s < (cc + 1) * sbin && s < h->nsteps; s++) {
                    uint64_t v = h->ns[(size_t)r * h->nsteps + s];
                    if (v && med[s] && (double)v / med[s] > worst)
                        worst = (double)v / med[s];
                }
            heatmap_color(worst, color, sizeof(color));
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>ranks %u-%u steps %llu-%llu: %.2fx</title></rect>\n",
                    80 + cc * cw, 50 + rr * ch, cw, ch, color, rr * rbin,
                    (rr + 1) * rbin - 1 < h->nranks ? (rr + 1) * rbin - 1 : h->nranks - 1,
                    (unsigned long long)(h->first + cc * sbin),
                    (unsigned long long)(h->first + (cc + 1) * sbin - 1), worst);
        }
    }
    fprintf(out,
            "<text x=\"75\" y=\"58\" text-anchor=\"end\">rank 0</text>\n"
            "<text x=\"75\" y=\"%.0f\" text-anchor=\"end\">rank %u</text>\n"
            "<text x=\"80\" y=\"%.0f\">step %llu</text>\n"
            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">step %llu</text>\n</svg>\n",
            50 + rows * ch, h->nranks - 1, 50 + rows * ch + 16, (unsigned long long)h->first,
            80 + cols * cw, 50 + rows * ch + 16, (unsigned long long)(h->first + h->nsteps - 1));
    free(med);
    return ferror(out) ? -EIO : 0;
}
