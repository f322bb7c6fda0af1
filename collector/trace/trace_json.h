/* The captured windows of a report as Chrome-trace JSON, the format
 * Perfetto (ui.perfetto.dev) and chrome://tracing open: {"traceEvents": [...]}
 * with one ph "X" event per span (ts and dur in microseconds since the UNIX
 * epoch, pid = rank, tid = the CUDA stream, or the host thread for host
 * spans), names from the job's dictionary (an unknown id as its hex), the
 * rank's step records of the window as "ProfilerStep#N" spans (tid 0),
 * phase begin/end as ph "B"/"E", steps and counters as instants. Every pid
 * has a process_name ("rank R") and every pid/tid used a thread_name
 * ("stream S", "thread T", "steps" for tid 0) metadata event (ph "M").
 * Each span's args carry its stream and host thread when known; a kernel's
 * also its correlation id and launch shape id (common/work_id.h: the agent
 * keeps grid and block only as that id), a collective's its bytes, a
 * counter's its increment. "otherData" says per window its rank,
 * range, span counts and the agent's error, if any. Reads the store only. */
#ifndef ARGUS_COLLECTOR_TRACE_JSON_H
#define ARGUS_COLLECTOR_TRACE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/http.h"

struct store;

/* The JSON of report_id's windows (rank < 0: all) in *json (malloc'd,
 * caller frees, *len bytes), *windows of them. Returns 0, -ENOENT (no such
 * report; err says so), -EIO or -ENOMEM. A report without windows yet gives
 * an empty traceEvents. */
int trace_json_export(struct store *store, const char *report_id, int64_t rank, char **json,
                      size_t *len, uint32_t *windows, char *err, size_t errlen);

/* GET /trace/<report id>.json on the collector's HTTP port: true when path
 * is one (resp filled: 200 JSON, 404 naming the report, 500); false
 * otherwise (resp untouched). */
bool trace_json_http(struct store *store, const char *path, struct http_response *resp);

#endif
