/* Keyed sets and keys of the store: see store_kv.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* tdestroy */
#endif
#include "collector/store/store_kv.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

/* A malloc'd key: job \0 | a (8 bytes, unless alen 0) | b (4 bytes, unless
 * blen 0). tail_end replaces the \0 by \1: the exclusive end of job's keys. */
uint8_t *store_job_key(const char *job, uint64_t a, int alen, uint32_t b, int blen, bool tail_end,
                       size_t *len)
{
    size_t jl = strlen(job);
    uint8_t *k = malloc(jl + 13);

    if (!k)
        return NULL;
    memcpy(k, job, jl);
    k[jl] = tail_end ? 1 : 0;
    *len = jl + 1;
    if (alen) {
        store_put_be64(k + *len, a);
        *len += 8;
    }
    if (blen) {
        store_put_be32(k + *len, b);
        *len += 4;
    }
    return k;
}

/* ---- kvset: tsearch tree of kv_node ----------------------------------------- */

int store_kv_cmp(const void *a, const void *b)
{
    const struct kv_node *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n);

    if (c)
        return c;
    return (x->klen > y->klen) - (x->klen < y->klen);
}

struct kv_node *store_kv_find(struct kvset *set, const void *key, size_t klen)
{
    struct kv_node *q = malloc(sizeof(*q) + klen);
    void *found;

    if (!q)
        return NULL;
    q->klen = klen;
    memcpy(q->key, key, klen);
    found = tfind(q, &set->root, store_kv_cmp);
    free(q);
    return found ? *(struct kv_node **)found : NULL;
}

/* Find or insert; *created says which. NULL on ENOMEM. */
struct kv_node *store_kv_get(struct kvset *set, const void *key, size_t klen, bool *created)
{
    struct kv_node *n = malloc(sizeof(*n) + klen), *got;
    void *slot;

    if (!n)
        return NULL;
    memset(&n->v, 0, sizeof(n->v));
    n->klen = klen;
    memcpy(n->key, key, klen);
    slot = tsearch(n, &set->root, store_kv_cmp);
    if (!slot) {
        free(n);
        return NULL;
    }
    got = *(struct kv_node **)slot;
    *created = got == n;
    if (got != n)
        free(n);
    else
        set->count++;
    return got;
}

void store_kv_remove(struct kvset *set, struct kv_node *n)
{
    tdelete(n, &set->root, store_kv_cmp);
    set->count--;
    free(n);
}

void store_kv_clear(struct kvset *set, void (*free_fn)(void *))
{
    tdestroy(set->root, free_fn);
    set->root = NULL;
    set->count = 0;
}
