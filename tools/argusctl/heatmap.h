/* A rank x step heatmap of step time as SVG, for argusctl heatmap. Each
 * cell's color is the rank's step time relative to the median of its step
 * (white = the median, dark red = 2x or more, blue = faster), so a straggler
 * is a red row and a bad step a column. Large jobs are binned to at most
 * max_rows x max_cols cells, each showing the slowest of its bin. */
#ifndef ARGUS_ARGUSCTL_HEATMAP_H
#define ARGUS_ARGUSCTL_HEATMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct heatmap;

/* A grid for ranks [0, nranks) and steps [first_step, first_step + nsteps). */
struct heatmap *heatmap_new(uint32_t nranks, uint64_t first_step, uint64_t nsteps);
void heatmap_free(struct heatmap *h);

/* Record one step time; out-of-range cells are ignored. */
void heatmap_set(struct heatmap *h, uint32_t rank, uint64_t step, uint64_t duration_ns);

/* Write the SVG (title is escaped). Returns 0 or -EIO. */
int heatmap_write_svg(const struct heatmap *h, const char *title, uint32_t max_rows,
                      uint32_t max_cols, FILE *out);

#endif
