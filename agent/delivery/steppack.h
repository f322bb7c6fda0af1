/* StepRecord packing for the batcher's hot path. protobuf-c's generic packer
 * sizes every nested message again at each level of nesting and walks field
 * descriptors for each of the ~200 KernelGroups of a step; here the kernels
 * (field 7) are written by hand, and the fields before and after them by
 * protobuf-c. The bytes are exactly what argus__v1__step_record__pack writes
 * (tests/unit/test_steppack.c checks it); records carrying unknown fields in
 * their kernels fall back to protobuf-c entirely. */
#ifndef ARGUS_AGENT_STEPPACK_H
#define ARGUS_AGENT_STEPPACK_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* argus__v1__step_record__get_packed_size(s), faster. */
size_t steppack_size(const Argus__V1__StepRecord *s);

/* argus__v1__step_record__pack(s, out), faster; returns the bytes written
 * (steppack_size(s)). */
size_t steppack_pack(const Argus__V1__StepRecord *s, uint8_t *out);

#endif
