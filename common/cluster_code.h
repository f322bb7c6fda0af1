/* The compact coding of a kernel group's clusters, a part of
 * StepRecord.packed_kernels (common/kernel_code.h): takes the Cluster
 * messages of a group, gives bytes that hold exactly the same values in
 * about 40% of the room (the default 8-bit values of the summarizer), and
 * back. Lossless for any values.
 *
 * Coding. A group needs B significant bits when every ns value of its
 * clusters is a B-bit number shifted left (the summarizer's default rounding
 * to 8 significant bits makes B <= 8; exact values need more). Each such
 * value v is sent as its code, its index among those numbers in increasing
 * order: v itself below 2^B, else e * 2^(B-1) + (v >> e) with
 * e = bitlen(v) - B. Codes grow with the values and neighbouring quantiles
 * have close codes, so the coding sends differences:
 *
 *   header   flags | (B - 1) << 2, 0..255; flags 1: sum_ns sent, 2: min/max
 *   cluster  varint count
 *            varint zigzag(code(p50) - code(p99 of the previous cluster, 0))
 *            varint zigzag(code(p99) - code(p50))
 *            [1] varint zigzag(code(sum) - code(count * p50 cut to B bits))
 *            [2] varint zigzag(code(min) - code(p50)),
 *                varint zigzag(code(max) - code(p99))
 *
 * once per cluster, under the header. The header and how many clusters
 * there are are the caller's to send (common/kernel_code.h: a group with
 * the same header as the one before it does not send it again). An unsent field is 0, as in a
 * Cluster; the differences are modulo 2^64, so any values code and decode exactly. Stateless;
 * thread-safe.
 */
#ifndef ARGUS_COMMON_CLUSTER_CODE_H
#define ARGUS_COMMON_CLUSTER_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* The largest header. */
#define CLUSTER_CODE_HEADER_MAX 255u

/* Most bytes cluster_code_encode writes for n clusters. */
size_t cluster_code_bound(size_t n);

/* The header the n clusters c[0..n) are coded under: what they need. */
unsigned cluster_code_header(Argus__V1__Cluster *const *c, size_t n);

/* Code the n clusters c[0..n) at out (cluster_code_bound(n) bytes of room)
 * under header, which is cluster_code_header(c, n). Returns the bytes
 * written (0 when n is 0). */
size_t cluster_code_encode(Argus__V1__Cluster *const *c, size_t n, unsigned header, uint8_t *out);

/* Step over the n clusters coded under header at *p (before end). Returns
 * 0, or -EBADMSG when they are malformed: truncated, a value past 64 bits,
 * or header over CLUSTER_CODE_HEADER_MAX (*p is not moved then). */
int cluster_code_skip(const uint8_t **p, const uint8_t *end, unsigned header, size_t n);

/* Decode the n clusters coded under header at *p (before end) into Cluster
 * messages allocated from a (NULL: malloc, so that protobuf-c's free_unpacked frees
 * them) and advance *p past them: *out gets the array of n pointers (NULL
 * when n is 0). Returns 0, -EBADMSG (as cluster_code_skip) or -ENOMEM;
 * nothing is left allocated on failure when a frees. */
int cluster_code_decode(const uint8_t **p, const uint8_t *end, unsigned header, size_t n,
                        ProtobufCAllocator *a, Argus__V1__Cluster ***out);

#endif
