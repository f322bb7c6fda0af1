/* collector/store/: the owners family, collector/ingest/owners.c's table of
 * which agent identity owns each rank of a job. Keys (job \0 | rank) and
 * values are the caller's bytes; the store only keeps them. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

int store_put_owners(struct store *s, const struct store_pair *kv, size_t n, char *err,
                     size_t errlen)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc;

    for (size_t i = 0; i < n; i++)
        rocksdb_writebatch_put_cf(wb, s->cf[CF_OWNERS], kv[i].key, kv[i].klen, kv[i].val,
                                  kv[i].vlen);
    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = store_commit(s, wb, false, err, errlen);
    pthread_mutex_unlock(&s->lock);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int store_delete_owners(struct store *s, const char *job, char *err, size_t errlen)
{
    size_t len = strlen(job) + 1;
    char *lo = malloc(len), *hi = malloc(len);
    rocksdb_writebatch_t *wb;
    int rc = -ENOMEM;

    if (!lo || !hi)
        goto out;
    memcpy(lo, job, len); /* job \0 ... up to job \1: every rank of it */
    memcpy(hi, job, len);
    hi[len - 1] = 1;
    wb = rocksdb_writebatch_create();
    rocksdb_writebatch_delete_range_cf(wb, s->cf[CF_OWNERS], lo, len, hi, len);
    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = store_commit(s, wb, false, err, errlen);
    pthread_mutex_unlock(&s->lock);
    rocksdb_writebatch_destroy(wb);
out:
    free(lo);
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
