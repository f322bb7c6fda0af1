/* argusctl nodes and exclude, the commands: ask the collector (or every
 * member of a set, merged: target.h) for the culprit rows of its window and
 * print them with nodes.h. */
#ifndef ARGUS_ARGUSCTL_NODES_CMD_H
#define ARGUS_ARGUSCTL_NODES_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_target;

struct nodes_cmd_options {
    bool exclude;        /* argusctl exclude (else nodes) */
    uint64_t since_ns;   /* --since (UNIX ns); 0: nodes the collector's window, exclude 24 h */
    bool json, suspect;  /* nodes --suspect */
    uint32_t min_jobs;   /* exclude --min-jobs (0: the collector's fleet.suspect_jobs) */
    const char *format;  /* exclude --format: slurm or k8s */
    uint64_t timeout_ms; /* of each call */
    bool quiet;
};

/* Print to out. Returns an exit code (enum ctl_exit): CTL_USAGE for a bad
 * --format (said on stderr), a call's code, CTL_ERROR, or CTL_OK. */
int nodes_cmd_run(struct ctl_target *t, const struct nodes_cmd_options *o, FILE *out);

#endif
