/* /report/ID: one stored report, as the job page shows it, with links to
 * its job and its ranks (see web.h): what an alert's report link
 * (alerts.report_url, http.public_url) opens, however old the report. */
#ifndef ARGUS_COLLECTOR_WEB_REPORT_H
#define ARGUS_COLLECTOR_WEB_REPORT_H

#include <stdio.h>

struct store;

/* Write the page of report id to out. Returns 200, 404 (a page saying no
 * report has that id) or 500. */
int web_report_page(struct store *s, const char *id, FILE *out);

#endif
