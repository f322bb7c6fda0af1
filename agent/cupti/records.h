/* The one place in libargus-cupti.so that knows CUDA 13's activity record
 * layout (records.c): a CUPTI record in, a span of the shared-memory ring
 * (agent/cupti/ring.h) out. Called by the worker (worker.h). */
#ifndef ARGUS_AGENT_CUPTI_RECORDS_H
#define ARGUS_AGENT_CUPTI_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>

#include "agent/cupti/ring.h"

struct lib_record {
    struct cupti_span span;
    const char *name; /* kernel or marker name, NULL for others */
    bool name_stable; /* pointer may be cached (kernel names) */
    bool range_end;   /* NVTX range end (span.aux = marker id) */
};

/* Translate one CUPTI record into a span. Returns 1 and fills out (name_id
 * left 0) and out->name (CUPTI-owned, may be NULL) when the record is one
 * argus keeps, 0 to skip it. */
int records_translate(const CUpti_Activity *rec, struct lib_record *out);

/* The fixed name of a memcpy/memset kind. */
const char *records_copy_name(uint32_t copy_kind);

#endif
