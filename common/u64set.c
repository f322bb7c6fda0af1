#include "common/u64set.h"

#include <errno.h>
#include <stdlib.h>

static size_t u64set_slot(const uint64_t *keys, size_t cap, uint64_t key)
{
    /* keys are hashes already; mix anyway so sequential keys spread */
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);

    while (keys[i] && keys[i] != key)
        i = (i + 1) & (cap - 1);
    return i;
}

bool u64set_has(const struct u64set *s, uint64_t key)
{
    return s->cap && key && s->keys[u64set_slot(s->keys, s->cap, key)] == key;
}

static int u64set_grow(struct u64set *s)
{
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *keys = calloc(cap, sizeof(*keys));

    if (!keys)
        return -ENOMEM;
    for (size_t i = 0; i < s->cap; i++)
        if (s->keys[i])
            keys[u64set_slot(keys, cap, s->keys[i])] = s->keys[i];
    free(s->keys);
    s->keys = keys;
    s->cap = cap;
    return 0;
}

int u64set_add(struct u64set *s, uint64_t key)
{
    size_t i;

    if (!key)
        return -EINVAL;
    if ((s->count + 1) * 2 > s->cap && u64set_grow(s) < 0)
        return -ENOMEM;
    i = u64set_slot(s->keys, s->cap, key);
    if (s->keys[i] == key)
        return 0;
    s->keys[i] = key;
    s->count++;
    return 1;
}

void u64set_clear(struct u64set *s)
{
    free(s->keys);
    s->keys = NULL;
    s->cap = s->count = 0;
}
