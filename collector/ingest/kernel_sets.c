/* The kernel identity sets a collector holds: see kernel_sets.h. */
#include "collector/ingest/kernel_sets.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "common/kernel_code.h"
#include "common/log.h"
#include "common/mix.h"
#include "common/name_id.h"
#include "common/u64set.h"

/* One set in the cache. */
struct ks_entry {
    struct ks_entry *next; /* in its bucket */
    uint64_t set;
    char *job;
    size_t n;
    struct kernel_code_ident ids[];
};

#define KS_BUCKETS 4096

struct kernel_sets {
    struct store *store;
    pthread_mutex_t lock;
    struct ks_entry *bucket[KS_BUCKETS];
    size_t bytes, max_bytes, count;
    atomic_uint_fast64_t defined, referred, unknown, bad;
};

struct kernel_sets *kernel_sets_new(struct store *store, size_t max_bytes)
{
    struct kernel_sets *k = calloc(1, sizeof(*k));

    if (!k)
        return NULL;
    k->store = store;
    k->max_bytes = max_bytes;
    pthread_mutex_init(&k->lock, NULL);
    return k;
}

/* Empty the cache (the lock held). */
static void ks_clear(struct kernel_sets *k)
{
    for (size_t i = 0; i < KS_BUCKETS; i++)
        while (k->bucket[i]) {
            struct ks_entry *e = k->bucket[i];

            k->bucket[i] = e->next;
            free(e->job);
            free(e);
        }
    k->bytes = k->count = 0;
}

void kernel_sets_free(struct kernel_sets *k)
{
    if (!k)
        return;
    ks_clear(k);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

static size_t ks_bucket(const char *job, uint64_t set)
{
    uint64_t h = set;

    for (const char *c = job; *c; c++)
        h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
    return (size_t)(h ^ (h >> 29)) % KS_BUCKETS;
}

/* The cached (job, set) or NULL (the lock held). */
static struct ks_entry *ks_find(struct kernel_sets *k, const char *job, uint64_t set)
{
    for (struct ks_entry *e = k->bucket[ks_bucket(job, set)]; e; e = e->next)
        if (e->set == set && strcmp(e->job, job) == 0)
            return e;
    return NULL;
}

/* Cache a copy of (job, set, ids) unless it is there; a full cache is
 * emptied first. Out of memory: not cached (read from the store again). */
static void ks_insert(struct kernel_sets *k, const char *job, uint64_t set,
                      const struct kernel_code_ident *ids, size_t n)
{
    size_t size = sizeof(struct ks_entry) + n * sizeof(*ids), b = ks_bucket(job, set);
    struct ks_entry *e;

    pthread_mutex_lock(&k->lock);
    if (ks_find(k, job, set) || !(e = malloc(size)))
        goto out;
    if (!(e->job = strdup(job))) {
        free(e);
        goto out;
    }
    if (k->bytes + size > k->max_bytes)
        ks_clear(k);
    e->set = set;
    e->n = n;
    memcpy(e->ids, ids, n * sizeof(*ids));
    e->next = k->bucket[b];
    k->bucket[b] = e;
    k->bytes += size;
    k->count++;
out:
    pthread_mutex_unlock(&k->lock);
}

/* kernel_code_sets.lookup: the cache, else the store (then cached). */
static int ks_lookup(void *ctx, const char *job, uint64_t set, struct kernel_code_ident **ids,
                     size_t *n)
{
    struct kernel_sets *k = ctx;
    struct ks_entry *e;
    int rc = 0;

    pthread_mutex_lock(&k->lock);
    if ((e = ks_find(k, job, set))) {
        *n = e->n;
        if ((*ids = malloc(e->n * sizeof(**ids))))
            memcpy(*ids, e->ids, e->n * sizeof(**ids));
        else
            rc = -ENOMEM;
    }
    pthread_mutex_unlock(&k->lock);
    if (e)
        return rc;
    rc = store_get_kernel_set(k->store, job, set, ids, n);
    if (rc == 0)
        ks_insert(k, job, set, *ids, *n);
    return rc;
}

long kernel_sets_expand(struct kernel_sets *k, Argus__V1__Batch *b, size_t max_groups,
                        size_t max_clusters, ProtobufCAllocator *a, size_t *unknown)
{
    struct kernel_code_sets sets = {ks_lookup, k};
    struct kernel_code_set_counts counts;
    long n = kernel_code_expand_batch_sets(b, max_groups, max_clusters, a, &sets, &counts);

    *unknown = n < 0 ? 0 : counts.unknown;
    if (n < 0)
        return n;
    atomic_fetch_add(&k->referred, counts.referred);
    if (counts.unknown) {
        static struct log_ratelimit rl = {.interval_ns = 60 * NSEC_PER_SEC, .burst = 3};
        atomic_fetch_add(&k->unknown, counts.unknown);
        log_ratelimited(&rl, LOG_LEVEL_WARN, "ingest",
                        "%zu step records of agent %s refer to kernel sets this collector does "
                        "not hold (its store was lost?): stored without their kernels, the agent "
                        "told to define them again",
                        counts.unknown, b->agent_id ? b->agent_id : "");
    }
    return n;
}

/* The identities of r's groups (malloc'd) or NULL. */
static struct kernel_code_ident *ks_idents(const Argus__V1__StepRecord *r)
{
    struct kernel_code_ident *ids = malloc(r->n_kernels * sizeof(*ids));

    if (ids)
        kernel_code_idents(r, ids);
    return ids;
}

/* Whether record r defines a set to keep: not held yet, not defined by a
 * record before it in the batch (seen: a key per (job, set), so that a
 * batch of many definitions costs one lookup each), and a right id. */
static bool ks_new_definition(struct kernel_sets *k, const Argus__V1__StepRecord *r,
                              struct u64set *seen)
{
    const char *job = r->job ? r->job : "";
    uint64_t key;
    bool held;

    if (!r->packed_kernels_set)
        return false;
    key = mix64(r->packed_kernels_set ^ name_id(job));
    if (u64set_has(seen, key))
        return false;
    pthread_mutex_lock(&k->lock);
    held = ks_find(k, job, r->packed_kernels_set) != NULL;
    pthread_mutex_unlock(&k->lock);
    if (held || u64set_add(seen, key) < 0)
        return false; /* out of memory: defined again by a later batch */
    if (kernel_code_record_set(r) != r->packed_kernels_set) {
        atomic_fetch_add(&k->bad, 1);
        return false;
    }
    return true;
}

int kernel_sets_keep(struct kernel_sets *k, Argus__V1__Batch *b, char *err, size_t errlen)
{
    struct store_kernel_set *sets = NULL;
    struct u64set seen = {0};
    size_t n = 0;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < b->n_steps; i++) {
        const Argus__V1__StepRecord *r = b->steps[i];
        struct store_kernel_set *grown;

        if (!ks_new_definition(k, r, &seen))
            continue;
        if (!(grown = realloc(sets, (n + 1) * sizeof(*sets)))) {
            rc = -ENOMEM;
            break;
        }
        sets = grown;
        sets[n] = (struct store_kernel_set){r->job ? r->job : "", r->packed_kernels_set,
                                            ks_idents(r), r->n_kernels};
        if (!sets[n].ids)
            rc = -ENOMEM;
        else
            n++;
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "kernel sets: out of memory");
    if (rc == 0 && n)
        rc = store_put_kernel_sets(k->store, sets, n, err, errlen);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            ks_insert(k, sets[i].job, sets[i].set, sets[i].ids, sets[i].n);
        free((void *)sets[i].ids);
    }
    free(sets);
    u64set_clear(&seen);
    if (rc < 0)
        return rc;
    atomic_fetch_add(&k->defined, n);
    for (size_t i = 0; i < b->n_steps; i++)
        b->steps[i]->packed_kernels_set = 0;
    return 0;
}

void kernel_sets_get_stats(struct kernel_sets *k, struct kernel_sets_stats *out)
{
    out->defined = atomic_load(&k->defined);
    out->referred = atomic_load(&k->referred);
    out->unknown = atomic_load(&k->unknown);
    out->bad = atomic_load(&k->bad);
    pthread_mutex_lock(&k->lock);
    out->cached = k->count;
    pthread_mutex_unlock(&k->lock);
}
