/* collector/store/: the actions family, collector/actions/'s records (what
 * it did to nodes, its breaker). Keys and values are the caller's bytes;
 * the store only keeps them. See store.h. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

struct actions_put {
    size_t n;
    const char *const *keys;
    const void *const *vals;
    const size_t *vlens;
};

static void actions_fill(struct store *s, rocksdb_writebatch_t *wb, const void *ctx)
{
    const struct actions_put *p = ctx;

    for (size_t i = 0; i < p->n; i++)
        rocksdb_writebatch_put_cf(wb, s->cf[CF_ACTIONS], p->keys[i], strlen(p->keys[i]), p->vals[i],
                                  p->vlens[i]);
}

int store_put_actions(struct store *s, size_t n, const char *const *keys, const void *const *vals,
                      const size_t *vlens, char *err, size_t errlen)
{
    return store_write_locked(s, actions_fill, &(struct actions_put){n, keys, vals, vlens}, err,
                              errlen);
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
