/* The collector's store (store.h): open, close and stats. The handle and
 * everything below it is store_db.h; the writers, readers, retention and
 * the alerts and traces families sit on it (store_write.c, store_read.c,
 * store_retention.c, store_alerts.c, store_traces.c), and this file opens
 * and closes the whole.
 */
#include "collector/store/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "collector/store/store_db.h"
#include "collector/store/store_seen.h"
#include "collector/store/store_write.h"

int store_open(const struct store_options *opts, struct store **out, char *err, size_t errlen)
{
    struct store *s;
    int rc;

    *out = NULL;
    if (!opts || !opts->dir || !opts->dir[0]) {
        store_set_err(err, errlen, "store: no directory given");
        return -EINVAL;
    }
    s = calloc(1, sizeof(*s));
    if (!s || !(s->dir = strdup(opts->dir))) {
        free(s);
        store_set_err(err, errlen, "store: out of memory");
        return -ENOMEM;
    }
    s->opts = *opts;
    s->opts.dir = s->dir;
    pthread_mutex_init(&s->lock, NULL);
    pthread_rwlock_init(&s->db_lock, NULL);
    rc = store_db_open(s, err, errlen);
    if (rc) {
        store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    store_db_close(s);
    store_stage_free(&s->stage);
    store_seen_free(s);
    pthread_rwlock_destroy(&s->db_lock);
    pthread_mutex_destroy(&s->lock);
    free(s->buf);
    store_stepform_free(&s->form);
    free(s->dir);
    free(s);
}

void store_get_stats(struct store *s, struct store_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    out->reserve_bytes = s->reserve.held;
    out->reserve_want = s->reserve.want;
    out->reserve_released = s->reserve.released;
    if (!s->db) {
        out->failing = true;
        if (!out->last_error[0])
            snprintf(out->last_error, sizeof(out->last_error), "store is closed");
    }
    pthread_mutex_unlock(&s->lock);
    if (store_disk_usage(s->dir, &out->disk_free_bytes, &out->disk_total_bytes) < 0)
        out->disk_free_bytes = out->disk_total_bytes = 0;
    out->live_sst_bytes = 0;
    if (store_read_begin(s))
        return;
    for (int i = 0; i < CF_COUNT; i++) {
        char *v = rocksdb_property_value_cf(s->db, s->cf[i], "rocksdb.live-sst-files-size");

        if (v)
            out->live_sst_bytes += strtoull(v, NULL, 10);
        free(v);
    }
    store_read_end(s);
}

int store_tick(struct store *s, uint64_t now_ns)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = store_reserve_tick(&s->reserve, now_ns);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
