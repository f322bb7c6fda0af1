/* A growable open-addressing set of non-zero 64-bit keys (name ids, hashes). */
#ifndef ARGUS_COMMON_U64SET_H
#define ARGUS_COMMON_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64set {
    uint64_t *keys; /* 0 = empty slot */
    size_t cap;     /* power of two, or 0 */
    size_t count;
};

/* Zero-initialise a struct u64set to start. */
bool u64set_has(const struct u64set *s, uint64_t key);

/* Add key (non-zero). Returns 1 when added, 0 when already present,
 * -EINVAL for key 0, -ENOMEM. */
int u64set_add(struct u64set *s, uint64_t key);

/* Free the slots; the set is empty and reusable afterwards. */
void u64set_clear(struct u64set *s);

#endif
