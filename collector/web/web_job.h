/* /job/JOB: the job's reports with their evidence and the rank x step
 * heatmap of its last steps, suspects marked (see web.h). */
#ifndef ARGUS_COLLECTOR_WEB_JOB_H
#define ARGUS_COLLECTOR_WEB_JOB_H

#include <stdio.h>

#include "proto/argus.pb-c.h"

struct store;

/* Write the page of job to out. Returns 200, or 404 (a page saying the job
 * is unknown). */
int web_job_page(struct store *s, const char *job, FILE *out);

/* The job's JobInfo (caller frees with argus__v1__job_info__free_unpacked),
 * NULL when the store has no such job. */
Argus__V1__JobInfo *web_job_info(struct store *s, const char *job);

/* Page `page` of job's reports (0: the newest WEB_MAX_REPORTS, as the job
 * page shows them; 1: the ones before...), with links to the newer and
 * older pages. 200, or 404 for an unknown job. */
int web_job_reports_page(struct store *s, const char *job, size_t page, FILE *out);

/* One report as the job page shows it (its summary, cost, capture link and
 * suspects' table); suffix: web_job_rank_suffix of its job. */
void web_job_report(const Argus__V1__Report *r, const char *suffix, FILE *out);

/* "/" RANK "/" + the encoded job: the suffix of a rank page link
 * ("/rank/" RANK suffix), malloc'd (caller frees), NULL when out of memory. */
char *web_job_rank_suffix(const char *job);

#endif
