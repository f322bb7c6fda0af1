/* What work a group of kernels did (argus.v1.KernelGroup.work_id): each
 * kernel's launch shape (grid and block dimensions) as a 32-bit shape id,
 * and the group's work id from the shapes of all its kernels of one step.
 *
 * The work id must be the same on two ranks that launched the same kernels
 * with the same shapes, in whatever order, and differ when one launched more
 * kernels or other shapes (a bigger batch, a longer sequence): the sum over
 * the kernels of a 64-bit mix of each shape id is order-free and counts
 * every kernel, so n launches of a shape add n times its mix. The agent,
 * Kineto import and the simulator compute it alike; diagnosis only compares
 * ids (docs/design.md section 7: more work is imbalance, the same work slower
 * is hardware). Header-only: pure arithmetic. */
#ifndef ARGUS_COMMON_WORK_ID_H
#define ARGUS_COMMON_WORK_ID_H

#include <stdint.h>

#include "common/mix.h"

/* The shape id of one launch: FNV-1a 32 over the six dimensions; never 0
 * (0 means "no shape known"). */
static inline uint32_t work_id_shape(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                     uint32_t by, uint32_t bz)
{
    const uint32_t dims[6] = {gx, gy, gz, bx, by, bz};
    uint32_t h = 0x811c9dc5u;

    for (int i = 0; i < 6; i++)
        for (int b = 0; b < 32; b += 8) {
            h ^= (dims[i] >> b) & 0xffu;
            h *= 0x01000193u;
        }
    return h ? h : 1;
}

/* The 64-bit mix of a shape id (splitmix64's finaliser) that a group sums
 * over its kernels; 0 for shape 0, so kernels without a shape add nothing. */
static inline uint64_t work_id_mix(uint32_t shape)
{
    uint64_t z = shape;

    if (!shape)
        return 0;
    return mix64(z + 0x9e3779b97f4a7c15ULL);
}

/* The work id of a group from the sum of its kernels' work_id_mix: 0 when
 * no kernel had a shape, else a non-zero id, the sum folded to 32 bits (two
 * ranks with different work collide once in 4 billion groups). */
static inline uint32_t work_id_of_sum(uint64_t sum, uint32_t shaped)
{
    uint32_t id;

    if (!shaped)
        return 0;
    sum ^= (uint64_t)shaped * 0xd6e8feb86659fd93ULL;
    id = (uint32_t)(sum ^ (sum >> 32));
    return id ? id : 1;
}

#endif
