/* collector/store/: reports (the reports family, keyed job \0 | created |
 * id, and the id index that finds one by its id). A report written again
 * under another key (its created time moved) replaces the one before. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

/* job \0 | created ns u64 | id, malloc'd. */
static uint8_t *report_key(const char *job, uint64_t created, const char *id, size_t *len)
{
    size_t jl = strlen(job), il = strlen(id);
    uint8_t *k = malloc(jl + 9 + il + 1);

    if (!k)
        return NULL;
    memcpy(k, job, jl);
    k[jl] = 0;
    store_put_be64(k + jl + 1, created);
    memcpy(k + jl + 9, id, il);
    *len = jl + 9 + il;
    return k;
}

static int report_put_locked(struct store *s, const Argus__V1__Report *r, char *err, size_t errlen)
{
    const char *id = r->id ? r->id : "";
    size_t kl, ol = 0, n = argus__v1__report__get_packed_size(r);
    uint8_t *key = report_key(r->job ? r->job : "", r->created_unix_ns, id, &kl);
    char *rerr = NULL, *old = NULL;
    rocksdb_writebatch_t *wb = NULL;
    int rc = -ENOMEM;

    if (!key || store_buf_reserve(s, n + 1)) {
        store_set_err(err, errlen, "put report: out of memory");
        goto out;
    }
    old = rocksdb_get_cf(s->db, s->ro, s->cf[CF_REPORT_IDS], id, strlen(id), &ol, &rerr);
    if (rerr) {
        rc = store_rocks_fail(rerr, err, errlen, "put report");
        goto out;
    }
    wb = rocksdb_writebatch_create();
    if (old && (ol != kl || memcmp(old, key, kl)))
        rocksdb_writebatch_delete_cf(wb, s->cf[CF_REPORTS], old, ol);
    argus__v1__report__pack(r, s->buf);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_REPORTS], (char *)key, kl, (char *)s->buf, n);
    rocksdb_writebatch_put_cf(wb, s->cf[CF_REPORT_IDS], id, strlen(id), (char *)key, kl);
    rc = store_commit(s, wb, false, err, errlen);
out:
    if (wb)
        rocksdb_writebatch_destroy(wb);
    free(old);
    free(key);
    return rc;
}

int store_put_report(struct store *s, const Argus__V1__Report *report, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0)
        rc = report_put_locked(s, report, err, errlen);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
