/* argusctl heatmap, the command: the job's size and last step, its ranks and
 * paging suspects, then the cells of --from..--to from the collector's
 * Heatmap query (a collector set's answers merged: target.h), written as an
 * SVG (common/heatmap_svg.h). */
#ifndef ARGUS_ARGUSCTL_HEATMAP_CMD_H
#define ARGUS_ARGUSCTL_HEATMAP_CMD_H

#include <stdbool.h>
#include <stdint.h>

struct ctl_target;

struct heatmap_cmd_options {
    struct ctl_target *target;
    uint64_t timeout_ms; /* of each call */
    bool quiet;
    const char *job;
    uint64_t from, to;  /* steps; to 0: the job's last */
    const char *metric; /* compute or step */
    const char *output; /* the SVG file */
};

/* Write the heatmap and say where. Returns an exit code (enum ctl_exit). */
int heatmap_cmd_run(const struct heatmap_cmd_options *o);

#endif
