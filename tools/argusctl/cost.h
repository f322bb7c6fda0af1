/* argusctl cost: where a fleet's GPU-hours went. It takes in straggler
 * reports (of every job, each report once: a collector set's answers are
 * merged by report id first, target.h) and gives out a ranking by node (the
 * suspect's), cause or job of the GPU-hours their suspects cost
 * (Suspect.gpu_hours_lost; by job the report's own Report.gpu_hours_lost,
 * which costs all its suspects together), with the reports that cost the
 * most. Pure: no network, no clock. */
#ifndef ARGUS_ARGUSCTL_COST_H
#define ARGUS_ARGUSCTL_COST_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

#define COST_TOP_REPORTS 3 /* report ids listed per row */

enum cost_by { COST_BY_NODE = 0, COST_BY_CAUSE = 1, COST_BY_JOB = 2 };

struct cost_top {
    char id[80];
    double gpu_hours;
};

struct cost_row {
    char key[160]; /* node, cause name or job */
    double gpu_hours;
    uint32_t reports; /* reports that cost it something */
    struct cost_top top[COST_TOP_REPORTS];
    uint32_t n_top;
};

struct cost_table {
    enum cost_by by;
    struct cost_row *rows;
    size_t n, cap;
    double gpu_hours; /* all rows */
    uint32_t reports; /* reports added that cost something */
};

/* GPU-hours as people read them, into buf: whole hours from 100, two
 * decimals from 1, four below (a CPU demo's 0.0023 is not 0.00). */
const char *cost_hours(double hours, char *buf, size_t len);

/* "node", "cause" or "job" into *by. 0 or -EINVAL. */
int cost_parse_by(const char *text, enum cost_by *by);

/* Add what rep cost (rep stays the caller's; nothing of it is kept). A
 * suspect or report of 0 GPU-hours (not estimated) adds nothing. 0 or
 * -ENOMEM (t keeps what it had). */
int cost_add(struct cost_table *t, const Argus__V1__Report *rep);

/* Rows by GPU-hours, most first (ties: by key). */
void cost_sort(struct cost_table *t);

/* The ranking as a table on out; a line saying there is nothing when no
 * report cost anything. since is the --since text, for that line. */
void cost_print(FILE *out, const struct cost_table *t, const char *since);

/* The ranking as JSON: {"by", "gpu_hours", "reports", "rows": [{key,
 * gpu_hours, reports, top_reports: [{id, gpu_hours}]}]} (caller puts it).
 * NULL on ENOMEM. */
struct json_object *cost_json(const struct cost_table *t);

/* Free the rows; t is left empty (its by stays). */
void cost_free(struct cost_table *t);

#endif
