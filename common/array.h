/* Growable arrays. */
#ifndef ARGUS_COMMON_ARRAY_H
#define ARGUS_COMMON_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

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

#endif
