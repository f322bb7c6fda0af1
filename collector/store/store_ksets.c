/* collector/store/: kernel identity sets, in the names family beside the
 * job's names. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "collector/store/store_kv.h"
#include "common/kernel_code.h"

#define KSET_TAIL 0x6b736574u /* "kset" */
#define KSET_BYTES 16         /* a group: name id u64, stream u32, work id u32 */

static uint8_t *kset_key(const char *job, uint64_t set, size_t *len)
{
    return store_job_key(job, set, 8, KSET_TAIL, 4, false, len);
}

static void kset_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int b = 0; b < bytes; b++)
        p[b] = (uint8_t)(v >> (8 * b));
}

static uint64_t kset_get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int b = 0; b < bytes; b++)
        v |= (uint64_t)p[b] << (8 * b);
    return v;
}

/* The sets' keys and values, built before the lock. */
struct kset_put {
    uint8_t **keys, **vals;
    size_t *klens, *vlens, n;
};

static void kset_fill(struct store *s, rocksdb_writebatch_t *wb, const void *ctx)
{
    const struct kset_put *p = ctx;

    for (size_t i = 0; i < p->n; i++)
        rocksdb_writebatch_put_cf(wb, s->cf[CF_NAMES], (char *)p->keys[i], p->klens[i],
                                  (char *)p->vals[i], p->vlens[i]);
}

static void kset_put_free(struct kset_put *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->keys ? p->keys[i] : NULL);
        free(p->vals ? p->vals[i] : NULL);
    }
    free(p->keys);
    free(p->vals);
    free(p->klens);
    free(p->vlens);
}

/* Key and value of set at i of p. 0 or -ENOMEM. */
static int kset_encode(struct kset_put *p, size_t i, const struct store_kernel_set *set)
{
    uint8_t *v;

    p->keys[i] = kset_key(set->job, set->set, &p->klens[i]);
    p->vlens[i] = set->n * KSET_BYTES;
    p->vals[i] = v = malloc(p->vlens[i] ? p->vlens[i] : 1);
    if (!p->keys[i] || !v)
        return -ENOMEM;
    for (size_t k = 0; k < set->n; k++, v += KSET_BYTES) {
        kset_put_le(v, set->ids[k].name_id, 8);
        kset_put_le(v + 8, set->ids[k].stream, 4);
        kset_put_le(v + 12, set->ids[k].work_id, 4);
    }
    return 0;
}

int store_put_kernel_sets(struct store *s, const struct store_kernel_set *sets, size_t n, char *err,
                          size_t errlen)
{
    struct kset_put p = {.n = n};
    int rc = 0;

    p.keys = calloc(n ? n : 1, sizeof(*p.keys));
    p.vals = calloc(n ? n : 1, sizeof(*p.vals));
    p.klens = calloc(n ? n : 1, sizeof(*p.klens));
    p.vlens = calloc(n ? n : 1, sizeof(*p.vlens));
    if (!p.keys || !p.vals || !p.klens || !p.vlens)
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = kset_encode(&p, i, &sets[i]);
    if (rc == 0)
        rc = store_write_locked(s, kset_fill, &p, err, errlen);
    else
        store_set_err(err, errlen, "kernel sets: out of memory");
    kset_put_free(&p);
    return rc;
}

int store_get_kernel_set(struct store *s, const char *job, uint64_t set,
                         struct kernel_code_ident **ids, size_t *n)
{
    char *rerr = NULL, *v = NULL;
    size_t kl, vl = 0;
    uint8_t *key = kset_key(job, set, &kl);
    int rc = -ENOMEM;

    *ids = NULL;
    *n = 0;
    if (key && (rc = store_read_begin(s)) == 0) {
        v = rocksdb_get_cf(s->db, s->ro, s->cf[CF_NAMES], (char *)key, kl, &vl, &rerr);
        store_read_end(s);
        rc = rerr ? -EIO : !v || !vl || vl % KSET_BYTES ? -ENOENT : 0;
    }
    if (rc == 0 && !(*ids = malloc(vl / KSET_BYTES * sizeof(**ids))))
        rc = -ENOMEM;
    for (size_t k = 0; rc == 0 && k < vl / KSET_BYTES; k++) {
        const uint8_t *p = (const uint8_t *)v + k * KSET_BYTES;

        (*ids)[k] = (struct kernel_code_ident){kset_get_le(p, 8), (uint32_t)kset_get_le(p + 8, 4),
                                               (uint32_t)kset_get_le(p + 12, 4)};
    }
    if (rc == 0)
        *n = vl / KSET_BYTES;
    free(rerr);
    free(v);
    free(key);
    return rc;
}
