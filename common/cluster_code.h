/* The compact coding of a kernel group's clusters (KernelGroup.packed_clusters,
 * proto/argus.proto): takes the Cluster messages of a group, gives bytes that
 * hold exactly the same values in about a third of the room, and back. The
 * agent's batcher codes every record it ships (cluster_code_compact); the
 * collector's ingest turns the bytes back into Cluster messages right after
 * unpacking a batch (cluster_code_expand_batch), so the store, diagnosis and
 * every reader see clusters as before. Lossless for any values: a group whose
 * values need too many significant bits is left as Cluster messages.
 *
 * Coding. A group needs B significant bits when every ns value of its
 * clusters is a B-bit number shifted left (the summarizer's default rounding
 * to 8 significant bits makes B <= 8). Each such value v is sent as its code,
 * its index among those numbers in increasing order: v itself below 2^B,
 * else e * 2^(B-1) + (v >> e) with e = bitlen(v) - B. Codes grow with the
 * values and neighbouring quantiles have close codes, so the coding sends
 * differences:
 *
 *   header   varint (B - 1) | flags << 5; flags 1: sum_ns sent, 2: min/max
 *   cluster  varint count
 *            varint zigzag(code(p50) - code(p99 of the previous cluster, 0))
 *            varint zigzag(code(p99) - code(p50))
 *            [1] varint zigzag(code(sum) - code(count * p50 cut to B bits))
 *            [2] varint zigzag(code(min) - code(p50)),
 *                varint zigzag(code(max) - code(p99))
 *
 * repeated to the end of the bytes. An unsent field is 0, as in a Cluster.
 * Stateless; thread-safe.
 */
#ifndef ARGUS_COMMON_CLUSTER_CODE_H
#define ARGUS_COMMON_CLUSTER_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Most significant bits a coded group may need; more: Cluster messages. */
#define CLUSTER_CODE_MAX_BITS 32u

/* Most bytes cluster_code_encode writes for n clusters. */
size_t cluster_code_bound(size_t n);

/* Code the n clusters c[0..n) at out (cluster_code_bound(n) bytes of room).
 * Returns the bytes written, or 0 when they are better left as Cluster
 * messages: no clusters, a value that needs more than
 * CLUSTER_CODE_MAX_BITS significant bits, or a count over 32 bits. */
size_t cluster_code_encode(Argus__V1__Cluster *const *c, size_t n, uint8_t *out);

/* Decode the len bytes at p into Cluster messages allocated from a (NULL:
 * malloc, so that protobuf-c's free_unpacked frees them): *out gets the
 * array of *n pointers (NULL, 0 for no bytes). Returns 0, -EBADMSG when the
 * bytes are malformed (truncated, a value past 64 bits), -EMSGSIZE when they
 * hold more than max clusters, or -ENOMEM; nothing is left allocated on
 * failure when a frees. */
int cluster_code_decode(const uint8_t *p, size_t len, size_t max, ProtobufCAllocator *a,
                        Argus__V1__Cluster ***out, size_t *n);

/* Turn the packed_clusters of every kernel group of every step of b into its
 * clusters (allocated from a, as cluster_code_decode) and empty
 * packed_clusters. A group with both keeps its Cluster messages first.
 * Returns the number of groups expanded (0: b is as it came), or the first
 * error of cluster_code_decode (b is then partly expanded: drop it). */
long cluster_code_expand_batch(Argus__V1__Batch *b, size_t max, ProtobufCAllocator *a);

/* Room for the coded copy of a step record; owned by its caller, reused
 * record after record. Zero it before the first use. */
struct cluster_code_buf {
    Argus__V1__KernelGroup *groups;
    Argus__V1__KernelGroup **ptrs;
    size_t cap_groups;
    uint8_t *bytes;
    size_t cap_bytes;
};

/* Make *out a shallow copy of in whose kernel groups have their clusters
 * coded into packed_clusters (those cluster_code_encode declines, and
 * groups already packed, are copied as they are). out points into in and
 * buf: valid until either changes or the next call. Returns 0 or -ENOMEM
 * (*out is then a plain shallow copy of in). */
int cluster_code_compact(struct cluster_code_buf *buf, const Argus__V1__StepRecord *in,
                         Argus__V1__StepRecord *out);

/* Free what buf holds and zero it. */
void cluster_code_buf_free(struct cluster_code_buf *buf);

#endif
