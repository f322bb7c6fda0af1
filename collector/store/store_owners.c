/* collector/store/: the owners family, collector/ingest/owners.c's table of
 * which agent identity owns each rank of a job. Keys (job \0 | rank) and
 * values are the caller's bytes; the store only keeps them. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

struct owners_put {
    const struct store_pair *kv;
    size_t n;
};

static void owners_fill_put(struct store *s, rocksdb_writebatch_t *wb, const void *ctx)
{
    const struct owners_put *p = ctx;

    for (size_t i = 0; i < p->n; i++)
        rocksdb_writebatch_put_cf(wb, s->cf[CF_OWNERS], p->kv[i].key, p->kv[i].klen, p->kv[i].val,
                                  p->kv[i].vlen);
}

int store_put_owners(struct store *s, const struct store_pair *kv, size_t n, char *err,
                     size_t errlen)
{
    return store_write_locked(s, owners_fill_put, &(struct owners_put){kv, n}, err, errlen);
}

struct owners_range {
    const char *lo, *hi;
    size_t len;
};

static void owners_fill_delete(struct store *s, rocksdb_writebatch_t *wb, const void *ctx)
{
    const struct owners_range *r = ctx;

    rocksdb_writebatch_delete_range_cf(wb, s->cf[CF_OWNERS], r->lo, r->len, r->hi, r->len);
}

/* Every rank of job: keys from job \0 up to job \1. */
int store_delete_owners(struct store *s, const char *job, char *err, size_t errlen)
{
    size_t len = strlen(job) + 1;
    char *hi = malloc(len);
    int rc;

    if (!hi) {
        store_set_err(err, errlen, "delete owners: out of memory");
        return -ENOMEM;
    }
    memcpy(hi, job, len);
    hi[len - 1] = 1;
    rc = store_write_locked(s, owners_fill_delete, &(struct owners_range){job, hi, len}, err,
                            errlen);
    free(hi);
    return rc;
}

struct owners_scan {
    store_alert_fn fn;
    void *ctx;
};

static int store_owners_one(void *ctx, const uint8_t *key, size_t klen, const void *val,
                            size_t vlen)
{
    struct owners_scan *c = ctx;

    return c->fn(c->ctx, key, klen, val, vlen);
}

int store_scan_owners(struct store *s, store_alert_fn fn, void *ctx)
{
    struct owners_scan c = {fn, ctx};
    int rc = store_read_begin(s);

    if (rc == 0) {
        rc = store_scan_range(s, CF_OWNERS, NULL, 0, NULL, 0, store_owners_one, &c);
        store_read_end(s);
    }
    return rc;
}
