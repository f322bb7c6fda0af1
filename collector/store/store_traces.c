/* The drill-down windows of reports (collector/trace/): one packed
 * argus.v1.TraceWindow per (report id, rank) in the traces family, key
 * report id \0 | rank (be32). Written by ingest when an agent answers a
 * capture request, read by the Trace query and the /trace/ page. */
#include "collector/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"

int store_put_trace(struct store *s, const char *report_id, uint32_t rank, const void *packed,
                    size_t len, char *err, size_t errlen)
{
    size_t kl;
    uint8_t *key = store_job_key(report_id, 0, 0, rank, 4, false, &kl);
    rocksdb_writebatch_t *wb;
    int rc;

    if (!key) {
        store_set_err(err, errlen, "put trace: out of memory");
        return -ENOMEM;
    }
    pthread_mutex_lock(&s->lock);
    rc = store_writer_ready(s, err, errlen);
    if (rc == 0) {
        wb = rocksdb_writebatch_create();
        rocksdb_writebatch_put_cf(wb, s->cf[CF_TRACES], (char *)key, kl, packed, len);
        rc = store_commit(s, wb, false, err, errlen);
        rocksdb_writebatch_destroy(wb);
    }
    pthread_mutex_unlock(&s->lock);
    free(key);
    return rc;
}

struct trace_scan {
    int64_t rank;
    store_scan_fn fn;
    void *ctx;
};

static int trace_scan_one(void *ctx, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    struct trace_scan *t = ctx;

    if (t->rank >= 0 && (klen < 4 || store_get_be32(key + klen - 4) != (uint32_t)t->rank))
        return 0;
    return t->fn(t->ctx, val, vlen);
}

int store_scan_traces(struct store *s, const char *report_id, int64_t rank, store_scan_fn fn,
                      void *ctx)
{
    struct trace_scan t = {rank, fn, ctx};
    size_t ll, hl;
    uint8_t *lo = store_job_key(report_id, 0, 0, 0, 0, false, &ll);
    uint8_t *hi = store_job_key(report_id, 0, 0, 0, 0, true, &hl);
    int rc = -ENOMEM;

    if (lo && hi) {
        rc = store_read_begin(s);
        if (rc == 0) {
            rc = store_scan_range(s, CF_TRACES, lo, ll, hi, hl, trace_scan_one, &t);
            store_read_end(s);
        }
    }
    free(lo);
    free(hi);
    return rc;
}
