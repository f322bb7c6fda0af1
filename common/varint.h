/* Protobuf base-128 varints and zigzag differences, for the places that write or walk bytes
 * by hand (common/wire_steps, the kernel and cluster coding, the store's compact form, the span
 * ring). */
#ifndef ARGUS_COMMON_VARINT_H
#define ARGUS_COMMON_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes varint_put writes for v (1..10). */
static inline size_t varint_size(uint64_t v)
{
    size_t n = 1;

    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Write v at p; returns the byte after it. */
static inline uint8_t *varint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Read a varint from [*p, end) into *v and advance *p; false when it runs
 * past end or past 10 bytes. */
static inline bool varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t byte = *(*p)++;

        *v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

/* A difference d (modulo 2^64, as a two's complement int64) as an unsigned
 * number that is small when |d| is: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ... */
static inline uint64_t varint_zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

/* The inverse of varint_zigzag. */
static inline uint64_t varint_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

#endif
