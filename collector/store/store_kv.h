/* The store's in-memory building blocks, below every other file of
 * collector/store/: byte-string keyed sets (a tsearch tree of kv_node, for
 * the caches, the per-batch staging and the index aggregations), the
 * big-endian integers keys are made of (so they sort by number), and the
 * job-prefixed keys of the steps, ranks, names and reports families
 * (store.h). No RocksDB and no struct store here.
 */
#ifndef ARGUS_COLLECTOR_STORE_KV_H
#define ARGUS_COLLECTOR_STORE_KV_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct job_entry; /* store_db.h */
struct seen_job;  /* store_seen.c */

/* A byte-string keyed node of a tsearch tree (caches and per-batch staging). */
struct kv_node {
    union {
        uint64_t seq;
        struct {
            uint64_t min, max;
        } range;
        struct job_entry *job;
        struct seen_job *seen;
        size_t index;
    } v;
    size_t klen;
    uint8_t key[];
};

struct kvset {
    void *root;
    size_t count;
};

/* ---- key layout: big-endian integers ------------------------------------- */

static inline void store_put_be64(uint8_t *p, uint64_t v)
{
    v = htobe64(v);
    memcpy(p, &v, 8);
}

static inline void store_put_be32(uint8_t *p, uint32_t v)
{
    v = htobe32(v);
    memcpy(p, &v, 4);
}

static inline uint64_t store_get_be64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return be64toh(v);
}

static inline uint32_t store_get_be32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return be32toh(v);
}

/* kvset: keys compared as byte strings, shorter first on a tie. */
int store_kv_cmp(const void *a, const void *b);

/* The node with this key, or NULL (absent, or ENOMEM). */
struct kv_node *store_kv_find(struct kvset *set, const void *key, size_t klen);

/* Find or insert (v zeroed); *created says which. NULL on ENOMEM. */
struct kv_node *store_kv_get(struct kvset *set, const void *key, size_t klen, bool *created);

/* Remove n from set and free it (not what its v points to). */
void store_kv_remove(struct kvset *set, struct kv_node *n);

/* Free every node with free_fn and empty the set. */
void store_kv_clear(struct kvset *set, void (*free_fn)(void *));

/* A malloc'd key (caller frees; NULL on ENOMEM): job \0 | a (8 bytes, unless
 * alen 0) | b (4 bytes, unless blen 0); *len its length. tail_end replaces
 * the \0 by \1: the exclusive end of job's keys. */
uint8_t *store_job_key(const char *job, uint64_t a, int alen, uint32_t b, int blen, bool tail_end,
                       size_t *len);

#endif
