/* The wire format of Batch.steps (proto/argus.proto), written and walked by
 * hand on the two hot paths that handle every step record: the agent's
 * batcher appends each StepRecord to the open batch as one Batch.steps entry
 * (tag, length, record), and the collector's ingest finds the bytes of those
 * entries again in a packed batch, so that the store keeps them without
 * packing each record a second time. Both sides are here, next to the field
 * numbers they rely on; tests/unit/test_wire_steps.c checks the numbers
 * against the protobuf-c descriptors, the encoder byte for byte against
 * protobuf-c and the decoder against both encoders.
 *
 * Encoding. protobuf-c's generic packer sizes every nested message again at
 * each level of nesting and walks field descriptors for each of the ~200
 * KernelGroups of a step; here the kernels (StepRecord field 7) are written
 * by hand, and the fields before and after them by protobuf-c. The bytes are
 * exactly what argus__v1__step_record__pack writes; a record carrying unknown
 * fields in its kernels or clusters falls back to protobuf-c entirely.
 *
 * Decoding. wire_steps_next walks the top-level fields of a packed Batch and
 * returns the Batch.steps entries in order, skipping the other fields. It
 * checks only the framing (tags, lengths, bounds), not the records inside:
 * the caller unpacks the batch with protobuf-c anyway. Truncated or
 * malformed framing is -EBADMSG.
 *
 * Stateless apart from the reader the caller owns; thread-safe.
 */
#ifndef ARGUS_COMMON_WIRE_STEPS_H
#define ARGUS_COMMON_WIRE_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Protobuf wire types. */
#define WIRE_TYPE_VARINT 0
#define WIRE_TYPE_FIXED64 1
#define WIRE_TYPE_LEN 2 /* length-delimited: strings, bytes, messages */
#define WIRE_TYPE_FIXED32 5

/* The key of a field on the wire: field number and wire type. */
#define WIRE_TAG(field, type) (((field) << 3) | (type))

/* Field numbers of proto/argus.proto that the hand-written code uses. */
#define WIRE_BATCH_STEPS_FIELD 6           /* repeated StepRecord */
#define WIRE_STEP_RECORD_KERNELS_FIELD 7   /* repeated KernelGroup */
#define WIRE_KERNEL_GROUP_NAME_ID_FIELD 1  /* fixed64 */
#define WIRE_KERNEL_GROUP_STREAM_FIELD 2   /* uint32 */
#define WIRE_KERNEL_GROUP_CLUSTERS_FIELD 3 /* repeated Cluster */
#define WIRE_KERNEL_GROUP_WORK_ID_FIELD 4  /* fixed32 */
#define WIRE_CLUSTER_COUNT_FIELD 1         /* uint32 */
#define WIRE_CLUSTER_SUM_NS_FIELD 2        /* uint64, like the four below */
#define WIRE_CLUSTER_P50_NS_FIELD 3
#define WIRE_CLUSTER_P99_NS_FIELD 4
#define WIRE_CLUSTER_MIN_NS_FIELD 5
#define WIRE_CLUSTER_MAX_NS_FIELD 6

/* Most bytes an entry adds around its record: the tag and a 10-byte length. */
#define WIRE_STEPS_ENTRY_OVERHEAD 11

/* argus__v1__step_record__get_packed_size(s), faster. */
size_t wire_steps_record_size(const Argus__V1__StepRecord *s);

/* True when s's kernel groups and clusters carry only the fields this
 * build knows (none a newer sender's, kept as unknown fields). */
bool wire_steps_kernels_plain(const Argus__V1__StepRecord *s);

/* argus__v1__step_record__pack(s, out), faster: out has room for
 * wire_steps_record_size(s) bytes. Returns the bytes written (that size). */
size_t wire_steps_record_pack(const Argus__V1__StepRecord *s, uint8_t *out);

/* Write s at out as one Batch.steps entry: the tag, record_size (which must
 * be wire_steps_record_size(s)) and the record. out has room for
 * record_size + WIRE_STEPS_ENTRY_OVERHEAD bytes. Returns the bytes written.
 * Entries appended after a packed Batch without steps make a Batch with
 * those steps (protobuf merges concatenated messages). */
size_t wire_steps_entry_put(uint8_t *out, const Argus__V1__StepRecord *s, size_t record_size);

/* A walk over the top-level fields of one packed Batch; the caller owns it
 * and the batch bytes, which must outlive it. */
struct wire_steps_reader {
    const uint8_t *p, *end;
};

/* Start a walk over the len bytes of a packed Batch at batch. */
void wire_steps_reader_init(struct wire_steps_reader *r, const void *batch, size_t len);

/* The next Batch.steps entry: points *record at its packed StepRecord
 * (inside the batch bytes, not copied) and *len at its size, and returns 1;
 * returns 0 at the end of the batch. Returns -EBADMSG when the framing is
 * truncated or malformed: a varint over 10 bytes or past the end, a length
 * or fixed-size value past the end, or a wire type other than varint,
 * fixed64, length-delimited or fixed32. The walk ends at the first return
 * other than 1. */
int wire_steps_next(struct wire_steps_reader *r, const uint8_t **record, size_t *len);

#endif
