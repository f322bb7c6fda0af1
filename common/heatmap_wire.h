/* The heatmap's cell straight from a packed argus.v1.StepRecord, without
 * unpacking it: only rank, step, start, duration and the collectives'
 * times are read, the rest (kernels, phases, frames) is skipped. For the
 * collector, which holds records packed (store scans) and reads hundreds
 * of thousands of them per picture. */
#ifndef ARGUS_COMMON_HEATMAP_WIRE_H
#define ARGUS_COMMON_HEATMAP_WIRE_H

#include <stddef.h>
#include <stdint.h>

struct heatmap_wire_cell {
    uint32_t rank;
    uint64_t step;
    uint64_t duration_ns; /* the step time */
    uint64_t own_ns;      /* heatmap_own_ns of the record */
};

/* Decode buf (len bytes). Returns 0, or -EBADMSG when the bytes are not a
 * well-formed record (truncated field, bad wire type), -ENOMEM. */
int heatmap_wire_cell(const void *buf, size_t len, struct heatmap_wire_cell *out);

#endif
