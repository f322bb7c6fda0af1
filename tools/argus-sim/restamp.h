/* What argus-sim changes in a batch or record after it was built: a node's
 * clock offset in the times of its records, and a batch's delivery identity
 * and seal time at the moment it is sent (delivery.h).
 *
 * A sealed frame is restamped without unpacking its records: the payload is
 * decoded, the new epoch, seq and created_unix_ns are appended as fields 2, 3
 * and 8 (for a singular scalar field the last occurrence wins, so every
 * reader, the collector's raw step slicer included, sees the new values), and
 * the result is encoded again. */
#ifndef ARGUS_SIM_RESTAMP_H
#define ARGUS_SIM_RESTAMP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Add offset_ns to every absolute time of r (start, collectives); relative
 * times (phase offsets, durations) do not move. */
void restamp_record(Argus__V1__StepRecord *r, int64_t offset_ns);

/* A copy of the packed Frame in (len bytes) whose Batch carries epoch, seq and
 * created_unix_ns. Returns 0 and *out (malloc'd, caller frees) of *out_len
 * bytes, or the frame_decode error, or -ENOMEM. */
int restamp_frame(const void *in, size_t len, uint64_t epoch, uint64_t seq,
                  uint64_t created_unix_ns, void **out, size_t *out_len);

#endif
