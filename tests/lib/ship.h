/* What the agent ships for a set of step records, for the benchmarks and
 * tests that measure it: the packed Batch, its kernels coded as the agent's
 * batcher codes them (common/kernel_code.h), and the LZ4 Frame of it. */
#ifndef ARGUS_TESTS_SHIP_H
#define ARGUS_TESTS_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define SHIP_AGENT "gpu-node-0417"
#define BATCH_MAX 16 /* steps in a batch here */

/* The names a set of steps needs, for the first batch of a job. */
struct dictionary {
    Argus__V1__NameEntry *entries;
    Argus__V1__NameEntry **ptrs;
    size_t n;
    size_t bytes; /* raw: sum of name lengths */
};

/* false: the kernels go as KernelGroup messages, as before the coding
 * (default true) */
extern bool ship_code_kernels;

/* true: a record of the skeleton of a learned kernel identity set
 * (ship_sets_learn) goes against that set (its clusters and the work ids
 * that moved), as the agent's batcher sends it once the collectors hold the
 * set (agent/delivery/ksets.h); false: never (default true) */
extern bool ship_kernel_sets;

/* The collectors hold the identity sets of steps[0..n) (earlier steps of
 * the job, acked), up to 64 sets; forget: none. */
void ship_sets_learn(Argus__V1__StepRecord *const *steps, size_t n);
void ship_sets_forget(void);

/* The packed Batch of steps[0..n) (n <= BATCH_MAX) with dict (NULL: names
 * already sent); malloc'd, *len bytes; NULL on ENOMEM. */
uint8_t *ship_batch_pack(Argus__V1__StepRecord **steps, size_t n, const struct dictionary *dict,
                         uint64_t seq, size_t *len);

/* Bytes of the Frame the agent sends: frame_encode(LZ4) of the Batch. */
size_t ship_bytes(Argus__V1__StepRecord **steps, size_t n, const struct dictionary *dict,
                  uint64_t seq);

/* For comparison only: the same Batch as one LZ4HC block (level 12) and as
 * zstd (level 3), plus a Frame's header bytes. */
void ship_other_codecs(Argus__V1__StepRecord **steps, size_t n, size_t *hc, size_t *zs);

#endif
