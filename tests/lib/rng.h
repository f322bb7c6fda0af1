/* Seed-deterministic random numbers for tests and benchmarks (splitmix64). */
#ifndef ARGUS_TESTS_RNG_H
#define ARGUS_TESTS_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double rng_uniform(uint64_t *x)
{
    return ((rng_next(x) >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline double rng_normal(uint64_t *x)
{
    return sqrt(-2 * log(rng_uniform(x))) * cos(2 * M_PI * rng_uniform(x));
}

#endif
