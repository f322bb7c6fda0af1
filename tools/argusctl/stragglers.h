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
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/argus.pb-c.h"

/* Print one report (every suspect) to out. */
void stragglers_print_report(FILE *out, const Argus__V1__Report *rep, bool all);

/* Print the reports of resp to out: those that page (all: every one), then
 * a line saying how many findings were left out, or that there is nothing
 * for job. Returns the number of reports printed. */
size_t stragglers_print(FILE *out, const Argus__V1__StragglersResponse *resp, bool all,
                        const char *job);

/* What --cause and --node keep: suspects whose cause is in causes (a bit
 * per Cause value; 0: any) and whose node is node (NULL or "": any). */
struct stragglers_filter {
    uint32_t causes;
    const char *node;
};

/* Parse a comma-separated list of cause names, as argus.proto spells them
 * with or without "CAUSE_", any case ("host,link", "CAUSE_SILENT"), into
 * f->causes. Returns 0, or -EINVAL with the bad name and the allowed ones
 * in err. "" is any cause. */
int stragglers_parse_causes(const char *list, struct stragglers_filter *f, char *err,
                            size_t errlen);

/* Parse --since: a duration back from now_ns ("10m", "2h", "7d") or an
 * RFC 3339 time ("2026-12-03T12:00:00Z", "...T12:00:00.5+01:00"). Returns
 * 0 with *unix_ns set, or -EINVAL. */
int stragglers_parse_since(const char *text, uint64_t now_ns, uint64_t *unix_ns);

/* True when f keeps everything (no --cause, no --node). */
bool stragglers_filter_empty(const struct stragglers_filter *f);

/* A view of resp with only the reports that have a suspect f keeps, each
 * holding only those suspects, and pages recomputed from them. The view
 * points into resp (which must outlive it); free it with
 * stragglers_view_free (not protobuf-c). NULL on allocation failure. */
Argus__V1__StragglersResponse *stragglers_view(const Argus__V1__StragglersResponse *resp,
                                               const struct stragglers_filter *f);
void stragglers_view_free(Argus__V1__StragglersResponse *view);

#endif
