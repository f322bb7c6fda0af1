/* collector/web/: the report page, served on the collector's HTTP port next
 * to /metrics. It takes in GET paths and reads the store directly (jobs,
 * reports, ranks, steps; read-only, no JavaScript needed, nothing fetched
 * from elsewhere) and gives out HTML with the heatmap inline as SVG:
 *   /                    jobs, newest reports first
 *   /job/JOB             the job's reports with their evidence and the rank x
 *                        step heatmap of its last steps (common/heatmap_svg.h)
 *   /rank/RANK/JOB       one rank: where it runs and its steps (own time,
 *                        step time, phases), with a small chart
 *   /report/ID           one report, however old (alerts link here)
 *   /reports/PAGE/JOB    the job's older reports, WEB_MAX_REPORTS a page
 * JOB is the job id percent-encoded (libmicrohttpd decodes the path, so a
 * job id with '/' still works: it is the rest of the path). Every string
 * that came from agents is HTML-escaped. Files: web.c (routing, the job
 * list, the HTML frame), web_job.c, web_rank.c, web_report.c. */
#ifndef ARGUS_COLLECTOR_WEB_H
#define ARGUS_COLLECTOR_WEB_H

#include <stdbool.h>

#include "common/http.h"

struct store;

/* Steps the job page's heatmap covers at most (the job's last ones), and
 * the records it reads at most (fewer steps for very wide jobs). */
#define WEB_HEATMAP_STEPS 200
#define WEB_HEATMAP_RECORDS 500000u
/* Steps the rank page lists (the rank's last ones). */
#define WEB_RANK_STEPS 200

/* Answer path when it is a page of the report (true; resp filled: 200,
 * 404 naming what was not found, or 500); false when the path is not
 * one (resp untouched). Runs on the HTTP thread; the store is
 * thread-safe for reads. */
bool web_handle(struct store *store, const char *path, struct http_response *resp);

#endif
