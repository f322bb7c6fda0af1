/* collector/store/: the actions family, collector/actions/'s records (what
 * it did to nodes, its breaker). Keys and values are the caller's bytes;
 * the store only keeps them. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

int store_put_actions(struct store *s, size_t n, const char *const *keys, const void *const *vals,
                      const size_t *vlens, char *err, size_t errlen)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc;

    for (size_t i = 0; i < n; i++)
        rocksdb_writebatch_put_cf(wb, s->cf[CF_ACTIONS], keys[i], strlen(keys[i]), vals[i],
                                  vlens[i]);
    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = store_commit(s, wb, false, err, errlen);
    pthread_mutex_unlock(&s->lock);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

struct actions_scan {
    store_alert_fn fn;
    void *ctx;
    const void *prefix;
    size_t plen;
};

/* Keys past the prefix end the scan. */
static int store_actions_one(void *ctx, const uint8_t *key, size_t klen, const void *val,
                             size_t vlen)
{
    struct actions_scan *c = ctx;

    if (c->plen && (klen < c->plen || memcmp(key, c->prefix, c->plen) != 0))
        return 1;
    return c->fn(c->ctx, key, klen, val, vlen);
}

int store_scan_actions(struct store *s, const void *prefix, size_t plen, store_alert_fn fn,
                       void *ctx)
{
    struct actions_scan c = {fn, ctx, prefix, plen};
    int rc = store_read_begin(s);

    if (rc == 0) {
        rc = store_scan_range(s, CF_ACTIONS, prefix, plen, NULL, 0, store_actions_one, &c);
        store_read_end(s);
    }
    return rc;
}
