/* The double's record store, shared by double.c and double_kineto.c. */
#ifndef ARGUS_TESTS_CUPTI_DOUBLE_REC_H
#define ARGUS_TESTS_CUPTI_DOUBLE_REC_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

struct rec {
    uint64_t emit_ns; /* when CUPTI would write it (trace time) */
    uint32_t size;
    uint32_t seq; /* trace order, breaks emit_ns ties */
    CUpti_ActivityKind kind;
    union {
        CUpti_Activity any;
        CUpti_ActivityKernel10 k;
        CUpti_ActivityMemcpy6 c;
        CUpti_ActivityMemset4 s;
        CUpti_ActivityAPI a;
        CUpti_ActivityMarker2 m;
    } u;
};

/* Parse a gzip'd Kineto trace into records sorted by emission time (what
 * CUPTI would write when). *out is malloc'd (names strdup'd, kept for the
 * process life). Returns the record count or -errno. */
int kineto_load(const char *path, struct rec **out, size_t *n);

#endif
