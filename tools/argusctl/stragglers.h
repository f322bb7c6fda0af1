/* The human view of straggler reports, for argusctl stragglers and report.
 * A report pages an on-call when one of its suspects does (a rank-level
 * fault that persisted M of N steps: Suspect.pages, set by the collector);
 * everything else (a spike of a step or a few, data skew, a job regression)
 * is a finding. By default only what pages is printed, with a count of the
 * findings left out; `all` prints every report and suspect, each marked
 * "PAGES" or "finding", with persisted/window. */
#ifndef ARGUS_ARGUSCTL_STRAGGLERS_H
#define ARGUS_ARGUSCTL_STRAGGLERS_H

#include <stdbool.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

/* Print one report (every suspect) to out. */
void stragglers_print_report(FILE *out, const Argus__V1__Report *rep, bool all);

/* Print the reports of resp to out: those that page (all: every one), then
 * a line saying how many findings were left out, or that there is nothing
 * for job. Returns the number of reports printed. */
size_t stragglers_print(FILE *out, const Argus__V1__StragglersResponse *resp, bool all,
                        const char *job);

#endif
