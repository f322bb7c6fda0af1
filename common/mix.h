/* 64-bit mixing: splitmix64's finaliser (Steele, Lea and Flood), a
 * bijection whose every output bit depends on every input bit. What a hash
 * table's slot, a placement weight, a report id and a work or set id are
 * made from. Inline, no state. */
#ifndef ARGUS_COMMON_MIX_H
#define ARGUS_COMMON_MIX_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
