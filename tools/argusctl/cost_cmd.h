/* argusctl cost, the command: asks the collector (or every member of a set,
 * merged: target.h) for its jobs and their reports since a time, and ranks
 * the GPU-hours they cost with cost.h. */
#ifndef ARGUS_ARGUSCTL_COST_CMD_H
#define ARGUS_ARGUSCTL_COST_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_target;

struct cost_cmd_options {
    const char *by;         /* node, cause or job */
    const char *job;        /* "": every job */
    uint64_t since_ns;      /* reports created since (UNIX ns) */
    const char *since_text; /* how --since was given, for the header */
    uint32_t limit;         /* jobs asked for (0: the collector's default) */
    bool json;
    uint64_t timeout_ms; /* of each call */
    bool quiet;          /* the calls say nothing on stderr */
};

/* Print the ranking to out. Returns an exit code (enum ctl_exit):
 * CTL_USAGE for a bad --by (said on stderr), a call's code, or CTL_OK. */
int cost_cmd_run(struct ctl_target *t, const struct cost_cmd_options *o, FILE *out);

#endif
