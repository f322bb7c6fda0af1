/* The stored form of a step record: what the steps family holds for one
 * (job, step, rank) key. Takes in a StepRecord at ingest and gives out a
 * compact value; takes in a stored value with its key at read and gives out
 * the packed StepRecord the readers return.
 *
 * Two forms live side by side in one store, told apart by the first byte:
 *  - received: the record's protobuf bytes as they came (a protobuf message
 *    never opens with 0: field 0 does not exist). Stores written before the
 *    compact form hold only these, and a record the compact form would not
 *    restore exactly is still written so.
 *  - compact: STORE_STEPFORM_COMPACT, then a StepRecord without job, rank and
 *    step (the key has them) whose numbers are coded against each other:
 *    a cluster's p99 as p99 - p50, max as max - p99, min as p50 - min, sum
 *    as the zigzag of sum - count x p50 (all modulo 2^64, so any values come
 *    back); a collective's host arrival against the record's start, its GPU
 *    start against its host arrival, its GPU end against its GPU start, its
 *    host return against its host arrival, 0 (unknown) kept as 0. Small
 *    numbers take fewer varint bytes, which the block compressor does not
 *    find by itself (arithmetic between fields is not a repeat).
 *
 * Restoring a compact value rewrites it on the wire (the job, rank and step
 * fields put first, clusters and collectives decoded, every other byte
 * copied), unpacking and packing it again only for what that walk does not
 * know (a cluster with fields it does not write). The bytes are the
 * canonical encoding of what was received, which is what argus agents send
 * (tests/unit/test_store_stepform.c checks byte for byte).
 *
 * A struct store_stepform is scratch owned by one caller (not thread-safe);
 * zero-initialised, freed with store_stepform_free.
 */
#ifndef ARGUS_COLLECTOR_STORE_STEPFORM_H
#define ARGUS_COLLECTOR_STORE_STEPFORM_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* First byte of a value in the compact form. */
#define STORE_STEPFORM_COMPACT 0x00

struct store_stepform {
    Argus__V1__KernelGroup *kg, **kg_p;
    Argus__V1__Cluster *cl, **cl_p;
    Argus__V1__Collective *co, **co_p;
    size_t cap_kg, cap_cl, cap_co;
    uint8_t *buf;
    size_t cap_buf;
};

/* Encode r in the compact form into f->buf. Returns its length (> 0), 0
 * when r keeps its received form (a timestamp delta that would read back as
 * unknown: the caller stores the received bytes), or -ENOMEM. f->buf is
 * valid until the next call on f. */
long store_stepform_encode(struct store_stepform *f, const Argus__V1__StepRecord *r);

/* The StepRecord bytes of the value v (vlen bytes) stored under job (NUL
 * terminated), step and rank: *out, *outlen point at v itself for the
 * received form, at f->buf (valid until the next call on f) for the compact
 * one. Returns 0, -EBADMSG for a compact value that does not unpack, or
 * -ENOMEM. */
int store_stepform_decode(struct store_stepform *f, const char *job, uint64_t step, uint32_t rank,
                          const void *v, size_t vlen, const void **out, size_t *outlen);

/* Free f's buffers (f itself is the caller's). */
void store_stepform_free(struct store_stepform *f);

#endif
