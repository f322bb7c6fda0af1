/* The compact coding of a step record's kernel groups
 * (StepRecord.packed_kernels, proto/argus.proto): takes the KernelGroup
 * messages of a record, gives bytes that hold exactly the same groups in
 * half the room or less, and back. The agent's batcher ships every record
 * coded (kernel_code_compact) while its collectors say they read the coding
 * (KERNEL_CODE_ACK_FEATURE in their acks); the collector's ingest turns the bytes back
 * into KernelGroup messages right after unpacking a batch
 * (kernel_code_expand_batch), so that the store, diagnosis and every reader
 * see kernels as before; argus-sim's record mode does the same.
 *
 * Coding: the groups one after the other, in the record's order, each
 *
 *   varint  head: n_clusters << 4 | flags
 *   8 bytes name_id, little-endian    unless flags & 1: the previous group's
 *   varint  stream                    unless flags & 4: the previous group's
 *   4 bytes work_id, little-endian    when flags & 2 (else 0)
 *   varint  the clusters' header      unless flags & 8: the header of the
 *                                     last group before with clusters
 *   the n_clusters clusters (common/cluster_code.h)
 *
 * to the end of the bytes (the first group's "previous" stream is 0).
 *
 * A record whose groups have the same name ids, streams and work ids, in
 * the same order, as the record before it in the batch (of the same job:
 * the next rank of a node, the next step of a rank) sends only their
 * clusters: StepRecord.packed_kernels_as_previous, and each group is
 *
 *   varint  head: n_clusters << 4 | flags, flags only 8 and 2
 *   4 bytes work_id, little-endian    when flags & 2: this group's, not
 *                                     the one it is coded against
 *   varint  the clusters' header      unless flags & 8
 *   the n_clusters clusters
 *
 * one per group of the previous record, no more, no fewer (as previous,
 * flag 2 is never set: the work ids are the same).
 *
 * Identity sets, across batches: a record's groups' identities (name id,
 * stream, work id, in order) have a 64-bit id (kernel_code_set_id). A
 * record that carries StepRecord.packed_kernels_set without
 * packed_kernels_as_set defines that set (the collector checks the id
 * against its groups and keeps the set with the job's names); a record with
 * packed_kernels_as_set is coded the same way against the set: its groups
 * have the set's names and streams, in order, and the groups whose work id
 * is not the set's send theirs (flag 2; a work id sums the shapes of a
 * group's kernels in the step, so it moves with the step's work while names
 * and streams stay). An agent refers to a set only once a batch that
 * defined it was acked (agent/delivery/ksets.h), so the collector holds
 * it; one it does not (its store lost) gives a record without kernels,
 * counted, never a refused batch.
 *
 * A KernelGroup's keys and
 * lengths (4 to 8 bytes a group) are not sent, and its clusters take a third of their room as
 * Cluster messages. Stateless apart from the buffer a caller owns;
 * thread-safe.
 */
#ifndef ARGUS_COMMON_KERNEL_CODE_H
#define ARGUS_COMMON_KERNEL_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

/* Most bytes kernel_code_encode writes for the kernels of r. */
size_t kernel_code_bound(const Argus__V1__StepRecord *r);

/* Code the kernels of r at out (kernel_code_bound(r) bytes of room), all
 * of each group, or only the clusters (as_previous: the caller has checked
 * that the previous record's groups are the same). Returns the bytes
 * written (0 for no kernels). */
size_t kernel_code_encode(const Argus__V1__StepRecord *r, bool as_previous, uint8_t *out);

/* Decode the len coded bytes at p into KernelGroup messages (and their
 * clusters) allocated from a (NULL: malloc, so that protobuf-c's
 * free_unpacked frees them): *out gets the array of *n pointers. as: NULL,
 * or the record whose groups these are coded against (only their clusters
 * are in the bytes). Returns 0, -EBADMSG when the bytes are malformed
 * (truncated, a value past 64 bits, not as many groups as as has),
 * -EMSGSIZE when they hold more than max_groups groups or a group more than
 * max_clusters clusters (nothing is allocated then), or -ENOMEM (nothing is
 * left allocated when a frees). */
int kernel_code_decode(const uint8_t *p, size_t len, const Argus__V1__StepRecord *as,
                       size_t max_groups, size_t max_clusters, ProtobufCAllocator *a,
                       Argus__V1__KernelGroup ***out, size_t *n);

/* One group's identity. */
struct kernel_code_ident {
    uint64_t name_id;
    uint32_t stream, work_id;
};

/* The identities of r's groups into ids (room for r->n_kernels). */
void kernel_code_idents(const Argus__V1__StepRecord *r, struct kernel_code_ident *ids);

/* The id of an identity set of n groups (never 0 for n > 0; 0 for none). */
uint64_t kernel_code_set_id(const struct kernel_code_ident *ids, size_t n);

/* kernel_code_set_id of r's groups (its kernels). */
uint64_t kernel_code_record_set(const Argus__V1__StepRecord *r);

/* Where a decoder finds the identities of a set. */
struct kernel_code_sets {
    /* The n identities of set of job into *ids (malloc'd, the caller frees).
     * 0, -ENOENT (not known), -ENOMEM. Called from the decoding thread. */
    int (*lookup)(void *ctx, const char *job, uint64_t set, struct kernel_code_ident **ids,
                  size_t *n);
    void *ctx;
};

/* What kernel_code_expand_batch_sets met: records decoded with a set held
 * (referred), and records left without kernels (unknown: their set, or the
 * set of the record they were coded against, not held). */
struct kernel_code_set_counts {
    size_t referred, unknown;
};

/* kernel_code_expand_batch, records coded as a set decoded with the set's
 * identities from sets (NULL: none known), counted in *counts. A record
 * whose set is not known, or coded as the previous record when that one's
 * set was not known, gets no kernels. A defining record keeps its
 * packed_kernels_set (the caller keeps the set, then zeroes it); a
 * referring one has it zeroed. Errors as kernel_code_expand_batch, and what
 * lookup returns besides -ENOENT. */
long kernel_code_expand_batch_sets(Argus__V1__Batch *b, size_t max_groups, size_t max_clusters,
                                   ProtobufCAllocator *a, const struct kernel_code_sets *sets,
                                   struct kernel_code_set_counts *counts);

/* Turn the packed_kernels of every step record of b, in order, into its
 * kernels (as kernel_code_decode, from a; against the record before it when
 * packed_kernels_as_previous) and empty packed_kernels. Returns the number
 * of records expanded (0: b is as it came), or the first error of
 * kernel_code_decode, or -EBADMSG for a record with both kernels and
 * packed_kernels, or coded as the previous record when there is none or it
 * is of another job (b is then partly expanded: drop it). Records coded as
 * an identity set get no kernels (no sets known here); every
 * packed_kernels_set is zeroed. */
long kernel_code_expand_batch(Argus__V1__Batch *b, size_t max_groups, size_t max_clusters,
                              ProtobufCAllocator *a);

/* Ack.features bit of a collector that reads packed_kernels: an agent codes
 * only for collectors that say so (proto/argus.proto, Ack.features). */
#define KERNEL_CODE_ACK_FEATURE 1u

/* Ack.features bit of a collector that keeps identity sets and reads
 * records coded as one. */
#define KERNEL_CODE_SET_ACK_FEATURE 2u

/* Room for the coded copy of a step record; owned by its caller, reused
 * record after record. Zero it before the first use. */
struct kernel_code_buf {
    uint8_t *bytes;
    size_t cap;
};

/* What the batch holds last: its last step record's job and the identities
 * of its groups, which the next record may be coded against. Owned by its
 * caller (the batcher); zero it before the first use. */
struct kernel_code_prev {
    bool valid; /* false: nothing to code against (a new batch) */
    char *job;
    struct kernel_code_ident *ids;
    size_t n, cap;
};

/* Make *out a shallow copy of in with its kernels coded into packed_kernels
 * (none of its own), against prev when prev is valid and holds the same
 * job and group identities (NULL: never). A record with no kernels, already
 * coded, or with unknown fields in its groups or clusters (a newer
 * sender's, replayed) is copied as it is. out points into in and buf: valid
 * until either changes or the next call. Returns 0 or -ENOMEM (*out is then
 * a plain copy). */
int kernel_code_compact(struct kernel_code_buf *buf, const Argus__V1__StepRecord *in,
                        const struct kernel_code_prev *prev, Argus__V1__StepRecord *out);

/* Whether kernel_code_compact codes in (memory permitting): it has groups,
 * not coded already, with no unknown fields. */
bool kernel_code_codable(const Argus__V1__StepRecord *in);

/* An identity set the reader holds: its id and identities. */
struct kernel_code_set {
    uint64_t id;
    const struct kernel_code_ident *ids;
    size_t n;
};

/* kernel_code_compact, and when the record is not coded as the previous
 * one, as the set as (NULL: not) when its groups have as's names and
 * streams, in order: only their clusters, and the work ids that are not
 * as's (4 bytes each). Otherwise whole. */
int kernel_code_compact_as(struct kernel_code_buf *buf, const Argus__V1__StepRecord *in,
                           const struct kernel_code_prev *prev, const struct kernel_code_set *as,
                           Argus__V1__StepRecord *out);

/* Free what buf holds and zero it. */
void kernel_code_buf_free(struct kernel_code_buf *buf);

/* r is now the last step record of the batch: remember its job and group
 * identities. 0, or -ENOMEM (prev is then not valid). */
int kernel_code_prev_set(struct kernel_code_prev *prev, const Argus__V1__StepRecord *r);

/* A new batch: nothing to code against. */
void kernel_code_prev_clear(struct kernel_code_prev *prev);

/* Free what prev holds and zero it. */
void kernel_code_prev_free(struct kernel_code_prev *prev);

#endif
