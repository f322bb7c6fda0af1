/* collector/store/: the alerts family, the alert module's durable records
 * (collector/alerts/: its delivery queue and alert states). Keys and values
 * are the caller's bytes; the store only keeps them. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

/* Write wb under s->lock (the writers' lock) after a reopen check. */
static int store_alerts_commit(struct store *s, rocksdb_writebatch_t *wb, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = store_commit(s, wb, false, err, errlen);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int store_put_alert(struct store *s, const void *key, size_t klen, const void *val, size_t vlen,
                    char *err, size_t errlen)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc;

    rocksdb_writebatch_put_cf(wb, s->cf[CF_ALERTS], key, klen, val, vlen);
    rc = store_alerts_commit(s, wb, err, errlen);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int store_delete_alert(struct store *s, const void *key, size_t klen, char *err, size_t errlen)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc;

    rocksdb_writebatch_delete_cf(wb, s->cf[CF_ALERTS], key, klen);
    rc = store_alerts_commit(s, wb, err, errlen);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

struct alerts_scan {
    store_alert_fn fn;
    void *ctx;
};

static int store_alerts_one(void *ctx, const uint8_t *key, size_t klen, const void *val,
                            size_t vlen)
{
    struct alerts_scan *c = ctx;

    return c->fn(c->ctx, key, klen, val, vlen);
}

int store_scan_alerts(struct store *s, const void *prefix, size_t plen, store_alert_fn fn,
                      void *ctx)
{
    struct alerts_scan c = {fn, ctx};
    uint8_t *end = NULL;
    size_t elen = plen;
    int rc;

    if (plen) { /* the smallest key above every key that starts with prefix */
        end = malloc(plen);
        if (!end)
            return -ENOMEM;
        memcpy(end, prefix, plen);
        while (elen && end[elen - 1] == 0xff)
            elen--;
        if (elen)
            end[elen - 1]++;
    }
    rc = store_read_begin(s);
    if (rc == 0) {
        rc = store_scan_range(s, CF_ALERTS, prefix, plen, elen ? end : NULL, elen, store_alerts_one,
                              &c);
        store_read_end(s);
    }
    free(end);
    return rc;
}
