/* A growable open-addressing map from non-zero 64-bit ids (name ids) to
 * strings it owns: the agent's and the collector's name dictionaries. */
#ifndef ARGUS_COMMON_STRMAP_H
#define ARGUS_COMMON_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap {
    struct strmap_entry *slots; /* power-of-two count, or NULL */
    size_t cap, count;
};

/* Zero-initialise a struct strmap to start. */

/* Remember id -> a copy of value; an id already present keeps its first
 * string. Returns 1 added, 0 present, -EINVAL (id 0 or value NULL), -ENOMEM. */
int strmap_put(struct strmap *m, uint64_t id, const char *value);

/* The string of id (valid until strmap_clear), or NULL. */
const char *strmap_get(const struct strmap *m, uint64_t id);

/* Free every string and the slots; the map is empty and reusable. */
void strmap_clear(struct strmap *m);

#endif
