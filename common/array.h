/* Growable arrays. */
#ifndef ARGUS_COMMON_ARRAY_H
#define ARGUS_COMMON_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Make *arr (*cap elements of size bytes) hold at least need elements:
 * capacity doubles from 64. Returns 0, or -ENOMEM with *arr unchanged. */
static inline int array_reserve(void **arr, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap * 2 : 64;
    void *p;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    p = realloc(*arr, c * size);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

/* Resize *arr from old to exactly n elements of size bytes (n >= old) and
 * zero the new ones, [old, n): for parallel arrays whose one capacity the
 * caller keeps. Returns 0, or -ENOMEM with *arr unchanged. */
static inline int array_grow_zeroed(void **arr, size_t old, size_t n, size_t size)
{
    void *p;

    if (size && n > SIZE_MAX / size)
        return -ENOMEM;
    p = realloc(*arr, n * size);
    if (!p)
        return -ENOMEM;
    memset((char *)p + old * size, 0, (n - old) * size);
    *arr = p;
    return 0;
}

#endif
