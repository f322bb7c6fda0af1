/* argusctl trace ID: the drill-down windows captured for a report, as the
 * collector's Chrome-trace JSON (Query/Trace), written to a file that
 * Perfetto (ui.perfetto.dev) or chrome://tracing opens. */
#ifndef ARGUS_ARGUSCTL_TRACE_H
#define ARGUS_ARGUSCTL_TRACE_H

#include "proto/argus.pb-c.h"

/* The file a trace goes to when -o is left at its default: trace-ID.json. */
#define TRACE_DEFAULT_OUTPUT "heatmap.svg" /* the shared -o default */

/* Write resp's JSON to path ("-": stdout) and say what was written on
 * stderr. Returns 0, or -errno after printing why. */
int trace_write(const Argus__V1__TraceResponse *resp, const char *report_id, const char *path);

#endif
