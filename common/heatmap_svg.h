/* The heatmap (common/heatmap.h) drawn as SVG, the same picture for
 * argusctl heatmap (a file) and the collector's report page (inline).
 *
 * What is drawn: each cell's ratio to its peer group's median (white = the
 * median, red = slower up to 2x and more, blue = faster, grey = no record),
 * runs of equal colour as one rectangle (a healthy row is one white
 * background); rank ticks on the left, node names on the right and node
 * boundaries as lines; step ticks below; the onset as a dashed line; each
 * suspect outlined and labelled in red, drawn on top of aggregated rows as
 * its own strip; a colour scale. Every string from the data is escaped. */
#ifndef ARGUS_COMMON_HEATMAP_SVG_H
#define ARGUS_COMMON_HEATMAP_SVG_H

#include <stdint.h>
#include <stdio.h>

#include "common/heatmap.h"

struct heatmap_svg_options {
    const char *title;       /* escaped; NULL = none */
    uint32_t max_rows;       /* 0 = 256 */
    uint32_t max_cols;       /* 0 = 400 */
    const char *rank_prefix; /* rank labels link to prefix RANK suffix when set */
    const char *rank_suffix; /* (both already URL-safe; escaped as attributes) */
};

/* Write the SVG of a finished heatmap (heatmap_finish) to out. Returns 0,
 * -ENOMEM or -EIO. */
int heatmap_write_svg(const struct heatmap *h, const struct heatmap_svg_options *o, FILE *out);

/* Write s escaped for XML/HTML text and attribute values (& < > " '). */
void heatmap_svg_escape(const char *s, FILE *out);

/* The fill colour of a ratio ("#rrggbb" into buf of at least 8 bytes). */
const char *heatmap_svg_color(double ratio, char *buf);

#endif
