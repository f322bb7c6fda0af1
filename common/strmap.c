#include "common/strmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct strmap_entry {
    uint64_t id; /* 0 = empty */
    char *value;
};

static size_t strmap_slot(const struct strmap_entry *t, size_t cap, uint64_t id)
{
    size_t i = (size_t)((id * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);

    while (t[i].id && t[i].id != id)
        i = (i + 1) & (cap - 1);
    return i;
}

static int strmap_grow(struct strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct strmap_entry *t = calloc(cap, sizeof(*t));

    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].id)
            t[strmap_slot(t, cap, m->slots[i].id)] = m->slots[i];
    free(m->slots);
    m->slots = t;
    m->cap = cap;
    return 0;
}

int strmap_put(struct strmap *m, uint64_t id, const char *value)
{
    size_t i;

    if (!id || !value)
        return -EINVAL;
    if ((m->count + 1) * 2 > m->cap && strmap_grow(m) < 0)
        return -ENOMEM;
    i = strmap_slot(m->slots, m->cap, id);
    if (m->slots[i].id)
        return 0;
    m->slots[i].value = strdup(value);
    if (!m->slots[i].value)
        return -ENOMEM;
    m->slots[i].id = id;
    m->count++;
    return 1;
}

const char *strmap_get(const struct strmap *m, uint64_t id)
{
    if (!m->cap || !id)
        return NULL;
    size_t i = strmap_slot(m->slots, m->cap, id);
    return m->slots[i].id ? m->slots[i].value : NULL;
}

void strmap_clear(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].value);
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}
