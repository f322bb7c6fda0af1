/* Dense slots for rank numbers: see diag_slots.h. */
#include "collector/diag/diag_slots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_slots_free(struct diag_slots *s)
{
    free(s->rank_of);
    free(s->table);
    memset(s, 0, sizeof(*s));
}

static uint32_t slots_hash(uint32_t rank)
{
    return rank * 2654435761u;
}

uint32_t diag_slots_find(const struct diag_slots *s, uint32_t rank)
{
    if (!s->size)
        return 0;
    for (uint32_t h = slots_hash(rank) & (s->size - 1);; h = (h + 1) & (s->size - 1))
        if (!s->table[h] || s->rank_of[s->table[h]] == rank)
            return s->table[h];
}

static void slots_place(struct diag_slots *s, uint32_t *table, uint32_t size, uint32_t slot)
{
    uint32_t h = slots_hash(s->rank_of[slot]) & (size - 1);

    while (table[h])
        h = (h + 1) & (size - 1);
    table[h] = slot;
}

/* Room for one more slot: rank_of and a table at most half full. */
static int slots_grow(struct diag_slots *s)
{
    if (s->n + 1 > s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 8;
        uint32_t *r = realloc(s->rank_of, (size_t)cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        s->rank_of = r;
        s->cap = cap;
    }
    if (2 * (s->n + 1) <= s->size)
        return 0;
    uint32_t size = s->size ? s->size * 2 : 16;
    uint32_t *t = calloc(size, sizeof(*t));
    if (!t)
        return -ENOMEM;
    for (uint32_t i = 1; i < s->n; i++)
        slots_place(s, t, size, i);
    free(s->table);
    s->table = t;
    s->size = size;
    return 0;
}

int diag_slots_get(struct diag_slots *s, uint32_t rank, uint32_t *slot)
{
    uint32_t found = diag_slots_find(s, rank);

    if (found) {
        *slot = found;
        return 0;
    }
    if (!s->n)
        s->n = 1; /* slot 0 is no rank's */
    if (slots_grow(s) < 0)
        return -ENOMEM;
    s->rank_of[s->n] = rank;
    slots_place(s, s->table, s->size, s->n);
    *slot = s->n++;
    return 0;
}

uint32_t diag_slots_rank(const struct diag_slots *s, uint32_t slot)
{
    return s && slot && slot < s->n ? s->rank_of[slot] : slot;
}

uint32_t diag_slots_count(const struct diag_slots *s)
{
    return s->n ? s->n - 1 : 0;
}

size_t diag_slots_bytes(const struct diag_slots *s)
{
    return (size_t)s->cap * sizeof(*s->rank_of) + (size_t)s->size * sizeof(*s->table);
}

static int slots_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* "a" or "a-b" after a comma when buf has room, else "..." once. */
static void slots_append(char *buf, size_t len, size_t *at, uint32_t from, uint32_t to)
{
    char part[32];
    int n = from == to ? snprintf(part, sizeof(part), "%s%u", *at ? "," : "", from)
                       : snprintf(part, sizeof(part), "%s%u-%u", *at ? "," : "", from, to);

    if (*at + (size_t)n + 4 >= len) {
        if (*at + 4 < len && strcmp(buf + (*at > 3 ? *at - 3 : 0), "...") != 0)
            *at += (size_t)snprintf(buf + *at, len - *at, "...");
        return;
    }
    memcpy(buf + *at, part, (size_t)n + 1);
    *at += (size_t)n;
}

uint32_t diag_slots_ranks_text(const struct diag_slots *s, uint32_t cap,
                               bool (*pick)(const void *ctx, uint32_t slot), const void *ctx,
                               char *buf, size_t len)
{
    uint32_t *ranks = malloc(((size_t)cap + 1) * sizeof(*ranks)), n = 0;
    size_t at = 0;

    buf[0] = 0;
    for (uint32_t i = 0; i < cap; i++) {
        if (!pick(ctx, i))
            continue;
        if (ranks)
            ranks[n] = diag_slots_rank(s, i);
        n++;
    }
    if (!ranks) {
        snprintf(buf, len, "...");
        return n;
    }
    qsort(ranks, n, sizeof(*ranks), slots_cmp);
    for (uint32_t i = 0, from = 0; i < n; i++) {
        if (i + 1 < n && ranks[i + 1] == ranks[i] + 1)
            continue;
        slots_append(buf, len, &at, ranks[from], ranks[i]);
        from = i + 1;
    }
    free(ranks);
    return n;
}
