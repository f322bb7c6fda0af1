/* collector/store/: the alerts family, the alert module's durable records
 * (collector/alerts/: its delivery queue and alert states). Keys and values
 * are the caller's bytes; the store only keeps them. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

struct alert_put {
    const void *key, *val;
    size_t klen, vlen;
    bool del;
};

static void alert_fill(struct store *s, rocksdb_writebatch_t *wb, const void *ctx)
{
    const struct alert_put *p = ctx;

    if (p->del)
        rocksdb_writebatch_delete_cf(wb, s->cf[CF_ALERTS], p->key, p->klen);
    else
        rocksdb_writebatch_put_cf(wb, s->cf[CF_ALERTS], p->key, p->klen, p->val, p->vlen);
}

int store_put_alert(struct store *s, const void *key, size_t klen, const void *val, size_t vlen,
                    char *err, size_t errlen)
{
    return store_write_locked(s, alert_fill, &(struct alert_put){key, val, klen, vlen, false}, err,
                              errlen);
}

int store_delete_alert(struct store *s, const void *key, size_t klen, char *err, size_t errlen)
{
    return store_write_locked(s, alert_fill, &(struct alert_put){key, NULL, klen, 0, true}, err,
                              errlen);
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
