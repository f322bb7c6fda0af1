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

/* "/" RANK "/" + the encoded job: the suffix of a rank page link
 * ("/rank/" RANK suffix), malloc'd (caller frees), NULL when out of memory. */
char *web_job_rank_suffix(const char *job);

#endif
