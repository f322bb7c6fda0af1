/* /rank/RANK/JOB: one rank, where it runs and its last steps (see web.h). */
#ifndef ARGUS_COLLECTOR_WEB_RANK_H
#define ARGUS_COLLECTOR_WEB_RANK_H

#include <stdint.h>
#include <stdio.h>

struct store;

/* Write the page of rank of job to out. Returns 200, or 404 (a page saying
 * which of the two is unknown). */
int web_rank_page(struct store *s, const char *job, uint32_t rank, FILE *out);

#endif
