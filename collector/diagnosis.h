/* Online diagnosis in the collector: one diag_engine (collector/diag/diag_engine.h)
 * per job, fed by ingest after every durable batch, ticked once a second so
 * steps close on timeout (a silent rank is a finding), with every report it
 * produces stored (store_put_report) and logged. Thread-safe: ingest workers
 * and the main loop call in concurrently; each job's engine has its own
 * lock. */
#ifndef ARGUS_COLLECTOR_DIAGNOSIS_H
#define ARGUS_COLLECTOR_DIAGNOSIS_H

#include <stdint.h>

#include "proto/argus.pb-c.h"

struct store;

struct diagnosis_options {
    uint64_t step_timeout_ns; /* 0: the engine's default */
    uint32_t window, min_hits;
    uint32_t max_jobs; /* engines at once; the least recently fed goes */
};

struct diagnosis;

struct diagnosis *diagnosis_new(struct store *store, const struct diagnosis_options *o);
void diagnosis_free(struct diagnosis *d);

/* The ingest hook (ingest_hook_fn): feed a durable batch's resources,
 * names and steps to the jobs' engines. */
void diagnosis_on_batch(void *ctx, const Argus__V1__Batch *b);

/* Close timed-out steps of every job and store the reports. */
void diagnosis_tick(struct diagnosis *d, uint64_t now_unix_ns);

struct diagnosis_stats {
    uint64_t jobs, records, steps_closed, reports, report_errors;
    uint64_t close_ns_max; /* slowest step close of any job */
    uint64_t last_report_ns;
};
void diagnosis_get_stats(struct diagnosis *d, struct diagnosis_stats *out);

#endif
