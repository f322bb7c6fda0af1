/* Name ids: 64-bit FNV-1a of the UTF-8 name, 0 reserved for "no name". Every
 * agent computes the same id for the same name, so a job's dictionary needs no
 * coordination (see proto/argus.proto). */
#ifndef ARGUS_COMMON_NAME_ID_H
#define ARGUS_COMMON_NAME_ID_H

#include <stddef.h>
#include <stdint.h>

#define NAME_ID_BASIS 0xcbf29ce484222325ULL /* FNV-1a offset basis */

/* FNV-1a of len bytes at p, continuing from h (NAME_ID_BASIS to start). */
static inline uint64_t name_id_update(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static inline uint64_t name_id_n(const char *name, size_t len)
{
    uint64_t h = name_id_update(NAME_ID_BASIS, name, len);

    return h ? h : 1;
}

static inline uint64_t name_id(const char *name)
{
    size_t len = 0;

    while (name[len])
        len++;
    return name_id_n(name, len);
}

#endif
