/* The agent's delivery: batcher -> spool -> fan-out to the collector set,
 * with the drop counters (see agent_delivery.h). */
#include "agent/agent_delivery.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/dropstate.h"
#include "agent/delivery/fanout.h"
#include "agent/delivery/ksets.h"
#include "agent/delivery/names.h"
#include "common/clock.h"
#include "common/collector_set.h"
#include "common/http.h"
#include "common/kernel_code.h"
#include "common/log.h"
#include "common/tls.h"

struct agent_delivery {
    struct agent_delivery_options o;
    struct drops *drops; /* every drop counter (agent/delivery/drops.h) */
    struct batcher *batcher;
    struct spool *spool;
    struct fanout *fanout;               /* one exporter per collector of the set */
    struct collector_set_watch *watch;   /* collector.set or .dns; NULL: collector.address */
    uint64_t watch_gen;                  /* the set's generation fanout has */
    char collectors[COLLECTOR_SET_NAME]; /* what the log says the set is */
    uint64_t batch_errors;
};

/* --- batches into the spool ----------------------------------------------- */

/* Drop counters the spool does not rebuild itself go on from where the
 * last run of this spool epoch left them (agent/delivery/dropstate.h). */
static const char *const agent_spool_counters[] = {SPOOL_LOSS_CAP, SPOOL_LOSS_CORRUPT, NULL};
/* (SPOOL_LOSS_BEHIND is not among them: the spool counts it since open only) */

static void agent_load_drops(struct agent_delivery *d)
{
    const char *dir = d->o.cfg->spool_dir;
    int n = dropstate_load(dir, spool_epoch(d->spool), d->drops, agent_spool_counters);

    if (n < 0)
        log_warn("agent", "%s/%s: %s; drop counters start from 0", dir, DROPSTATE_FILE,
                 n == -EBADMSG ? "not a drop counter file" : strerror(-n));
    else if (n > 0)
        log_info("agent", "%d drop counters carried over from the last run", n);
    /* what was loaded is saved again with the next batch, in this build's form */
}

static void agent_save_drops(struct agent_delivery *d)
{
    const char *dir = d->o.cfg->spool_dir;
    int r;

    if (!drops_changed(d->drops))
        return;
    r = dropstate_save(dir, spool_epoch(d->spool), d->drops, agent_spool_counters);
    if (r < 0)
        log_ratelimited(d->o.rl, LOG_LEVEL_WARN, "agent",
                        "cannot save drop counters in %s: %s (a restart would count from 0)", dir,
                        strerror(-r));
    else
        drops_saved(d->drops);
}

static void agent_seal(struct agent_delivery *d)
{
    void *frame;
    size_t len;
    int r;

    agent_save_drops(d); /* before any batch carries the new totals */
    r = batcher_seal(d->batcher, spool_epoch(d->spool), spool_next_seq(d->spool), &frame, &len);

    if (r == -ENODATA)
        return;
    if (r == 0) {
        uint64_t seq;
        struct batcher_sealed sealed;

        r = spool_append(d->spool, frame, len, &seq);
        free(frame);
        batcher_last_sealed(d->batcher, &sealed);
        if (r == 0)
            fanout_sealed(d->fanout, seq, &sealed, clock_mono_ns());
    }
    if (r < 0) {
        d->batch_errors++;
        ksets_reset(names_ksets(d->o.names)); /* it may have defined kernel sets */
        drops_add(d->drops, r == -ENOSPC ? "spool_disk_full" : "spool_write", NULL, -1, 1);
        log_ratelimited(d->o.rl, LOG_LEVEL_ERROR, "agent", "batch lost before the spool: %s",
                        strerror(-r));
    }
}

/* The spool's own losses (cap, corruption) become drop counters that travel
 * to the collector (spool_options.on_loss). */
static void agent_on_spool_loss(void *ctx, const char *reason, uint64_t count)
{
    struct agent_delivery *d = ctx;

    drops_add(d->drops, reason, NULL, -1, count);
    ksets_reset(names_ksets(d->o.names)); /* a lost batch may have defined kernel sets */
    if (strcmp(reason, SPOOL_LOSS_CAP) == 0)
        log_ratelimited(d->o.rl, LOG_LEVEL_WARN, "agent",
                        "spool over spool.cap: %llu oldest batches dropped so far",
                        (unsigned long long)drops_get(d->drops, reason, NULL, -1));
}

/* --- setup ------------------------------------------------------------------ */

static int agent_open_spool(struct agent_delivery *d)
{
    const struct agent_config *c = d->o.cfg;
    struct spool_options so = {
        .cap_bytes = c->spool_cap,
        .segment_bytes = c->spool_segment,
        .fsync = (enum spool_fsync)c->spool_fsync,
        .fsync_interval_ns = c->spool_fsync_interval,
        .on_loss = agent_on_spool_loss,
        .on_loss_ctx = d,
    };
    struct spool_stats ss;
    int r;

    if (so.segment_bytes > so.cap_bytes / 4)
        so.segment_bytes = so.cap_bytes / 4;
    r = spool_open(c->spool_dir, &so, &d->spool);
    if (r < 0) {
        log_error("agent", "cannot open spool.dir %s: %s", c->spool_dir,
                  r == -EBUSY ? "another agent holds it" : strerror(-r));
        return r;
    }
    spool_stats(d->spool, &ss);
    log_info("agent",
             "spool %s: epoch %llu, next seq %llu, %llu unacked batches (%llu bytes), "
             "%llu dropped and %llu corrupt so far",
             c->spool_dir, (unsigned long long)ss.epoch, (unsigned long long)ss.next_seq,
             (unsigned long long)ss.records, (unsigned long long)ss.bytes,
             (unsigned long long)ss.dropped_records, (unsigned long long)ss.corrupt_records);
    return 0;
}

/* The exporter's channel: mTLS from tls.*, or plaintext when asked for. */
static int agent_load_tls(const struct agent_config *c, struct tls_pem *pem, bool *use)
{
    struct tls_files f = {c->tls_ca, c->tls_cert, c->tls_key};
    char err[512];
    int r = tls_choose(c->grpc_plaintext, &f, "grpc.plaintext = true",
                       "tls.ca, tls.cert and tls.key", err, sizeof(err));

    *use = r == 1;
    if (r == 1)
        r = tls_pem_load(&f, pem, err, sizeof(err));
    if (r < 0)
        log_error("agent", "%s", err);
    else if (c->grpc_plaintext)
        log_warn("agent", "grpc.plaintext = true: batches go to the collectors unencrypted and "
                          "unauthenticated");
    return r < 0 ? r : 0;
}

/* The fan-out on the open spool, over TLS or not. */
static int agent_open_fanout(struct agent_delivery *d)
{
    const struct agent_config *c = d->o.cfg;
    struct fanout_options fo = {.keepalive_ns = c->collector_keepalive,
                                .backoff_min_ns = c->collector_backoff_min,
                                .backoff_max_ns = c->collector_backoff_max,
                                .standby_wait_ns = c->collector_standby_wait,
                                .eager = true,
                                .on_capture = d->o.on_capture,
                                .on_capture_ctx = d->o.on_capture_ctx};
    struct tls_pem pem = {0};
    bool tls;

    if (agent_load_tls(c, &pem, &tls) < 0)
        return -EINVAL;
    fo.tls = tls ? &pem : NULL;
    if (agent_open_spool(d) < 0) {
        tls_pem_free(&pem);
        return -EIO;
    }
    agent_load_drops(d);
    d->fanout = fanout_new(&fo, d->spool, d->o.names, d->drops);
    tls_pem_free(&pem); /* the fan-out keeps its own copy */
    return d->fanout ? 0 : -ENOMEM;
}

/* Hand the fan-out the watch's set when it changed (and log it). */
static void agent_refresh_set(struct agent_delivery *d, uint64_t now)
{
    struct collector_set set;
    char err[256];

    if (!d->watch || collector_set_watch_generation(d->watch) == d->watch_gen)
        return;
    d->watch_gen = collector_set_watch_get(d->watch, &set);
    if (fanout_set_members(d->fanout, &set, now) < 0)
        log_ratelimited(d->o.rl, LOG_LEVEL_ERROR, "agent",
                        "cannot reach every collector of the set (out of memory, or an address "
                        "gRPC refuses)");
    collector_set_watch_error(d->watch, err, sizeof(err));
    log_info("agent", "collector set %s: %zu collectors (generation %llu)%s%s", d->collectors,
             set.n, (unsigned long long)d->watch_gen, err[0] ? "; last resolution: " : "", err);
}

/* The collectors: collector.set or collector.dns (watched), else the one
 * collector.address as a set of one. */
static int agent_open_set(struct agent_delivery *d)
{
    const struct agent_config *c = d->o.cfg;
    struct collector_set_spec spec = {c->collector_set, c->collector_dns,
                                      c->collector_dns_interval};
    struct collector_set one = {.n = 1};
    char err[300];

    if (!c->collector_set[0] && !c->collector_dns[0]) {
        snprintf(d->collectors, sizeof(d->collectors), "%s", c->collector_address);
        snprintf(one.member[0].name, sizeof(one.member[0].name), "%s", c->collector_address);
        snprintf(one.member[0].address, sizeof(one.member[0].address), "%s", c->collector_address);
        return fanout_set_members(d->fanout, &one, clock_mono_ns());
    }
    snprintf(d->collectors, sizeof(d->collectors), "%s",
             c->collector_set[0] ? c->collector_set : c->collector_dns);
    if (collector_set_watch_new(&spec, &d->watch, err, sizeof(err)) < 0) {
        log_error("agent", "collectors: %s", err);
        return -EINVAL;
    }
    agent_refresh_set(d, clock_mono_ns());
    if (!d->watch_gen) {
        collector_set_watch_error(d->watch, err, sizeof(err));
        log_warn("agent",
                 "collector.dns %s: no collector yet (%s); batches wait in the spool until "
                 "one resolves",
                 c->collector_dns, err);
    }
    return 0;
}

struct agent_delivery *agent_delivery_new(const struct agent_delivery_options *o)
{
    const struct agent_config *c = o->cfg;
    struct batcher_options bo = {o->agent_id, c->batch_max_steps, c->batch_max_bytes,
                                 c->batch_max_age};
    struct agent_delivery *d = calloc(1, sizeof(*d));

    if (!d)
        return NULL;
    d->o = *o;
    d->drops = drops_new();
    d->batcher = d->drops ? batcher_new(&bo, o->names, d->drops) : NULL;
    if (!d->batcher)
        log_error("agent", "out of memory");
    if (!d->batcher || agent_open_fanout(d) < 0 || agent_open_set(d) < 0) {
        agent_delivery_free(d);
        return NULL;
    }
    return d;
}

void agent_delivery_free(struct agent_delivery *d)
{
    if (!d)
        return;
    collector_set_watch_free(d->watch); /* first: it stops its thread */
    fanout_free(d->fanout);
    spool_close(d->spool);
    batcher_free(d->batcher);
    drops_free(d->drops);
    free(d);
}

/* --- running ------------------------------------------------------------------ */

void agent_delivery_add_step(struct agent_delivery *d, const Argus__V1__StepRecord *s)
{
    if (batcher_add_step(d->batcher, s, clock_mono_ns()) == -ENOMEM)
        drops_add(d->drops, BATCHER_DROP_NOMEM, s->job, (int32_t)s->rank, 1);
}

void agent_delivery_add_status(struct agent_delivery *d, const Argus__V1__RankStatus *s)
{
    if (batcher_add_status(d->batcher, s, clock_mono_ns()) == -ENOMEM)
        drops_add(d->drops, BATCHER_DROP_NOMEM, s->job, (int32_t)s->rank, 1);
}

int agent_delivery_add_trace(struct agent_delivery *d, const void *packed, size_t len)
{
    return batcher_add_trace(d->batcher, packed, len);
}

void agent_delivery_drop(struct agent_delivery *d, const char *reason, const char *job,
                         int32_t rank, uint64_t count)
{
    drops_add(d->drops, reason, job, rank, count);
}

void agent_delivery_tick(struct agent_delivery *d, uint64_t now)
{
    if (batcher_due(d->batcher, now))
        agent_seal(d);
    agent_refresh_set(d, now);
    fanout_poll(d->fanout, now);
    /* what the collectors said in the acks just read: code kernels or not */
    uint32_t features = fanout_features(d->fanout);
    batcher_set_coding(d->batcher, features & KERNEL_CODE_ACK_FEATURE);
    batcher_set_kernel_sets(d->batcher, features & KERNEL_CODE_SET_ACK_FEATURE);
    spool_tick(d->spool, now);
}

uint64_t agent_delivery_due_ns(const struct agent_delivery *d, uint64_t now)
{
    uint64_t batch = batcher_next_ns(d->batcher), spool = spool_next_ns(d->spool, now);

    return batch < spool ? batch : spool;
}

uint64_t agent_delivery_send_ns(const struct agent_delivery *d, uint64_t now)
{
    return fanout_next_ns(d->fanout, now);
}

bool agent_delivery_flush(struct agent_delivery *d, uint64_t end_ns)
{
    agent_seal(d);
    while (!fanout_idle(d->fanout, clock_mono_ns()) && clock_mono_ns() < end_ns) {
        fanout_poll(d->fanout, clock_mono_ns());
        clock_sleep_ns(5 * NSEC_PER_MSEC);
    }
    return fanout_idle(d->fanout, clock_mono_ns());
}

void agent_delivery_reload_tls(struct agent_delivery *d)
{
    const struct agent_config *c = d->o.cfg;
    struct tls_pem pem = {0};
    bool tls;

    if (c->grpc_plaintext || agent_load_tls(c, &pem, &tls) < 0) {
        if (!c->grpc_plaintext)
            log_error("agent", "TLS files not reloaded, the running ones stay in use");
        return;
    }
    if (fanout_set_tls(d->fanout, &pem, clock_mono_ns()) == 0)
        log_info("agent", "TLS files reloaded (%s); reconnecting to the collectors", c->tls_cert);
    tls_pem_free(&pem);
}

void agent_delivery_get_stats(const struct agent_delivery *d, struct agent_delivery_stats *out)
{
    batcher_get_stats(d->batcher, &out->batcher);
    spool_stats(d->spool, &out->spool);
    fanout_get_stats(d->fanout, &out->exporter);
    out->batch_errors = d->batch_errors;
}

const char *agent_delivery_collectors(const struct agent_delivery *d)
{
    return d->collectors;
}

/* One labelled family: HELP and TYPE, then a sample per member. */
static void agent_member_family(const struct fanout *f, struct http_buf *b, const char *name,
                                const char *type, const char *help,
                                double (*value)(const struct fanout_member_stats *))
{
    struct fanout_member_stats m;
    char labels[2 * COLLECTOR_SET_NAME + 16], name_esc[2 * COLLECTOR_SET_NAME];

    for (size_t i = 0; i < fanout_members(f); i++) {
        fanout_member_stats(f, i, &m);
        http_label_escape(name_esc, sizeof(name_esc), m.name);
        snprintf(labels, sizeof(labels), "collector=\"%s\"", name_esc);
        if (i == 0)
            http_buf_metric(b, name, type, help, labels, value(&m));
        else
            http_buf_sample(b, name, labels, value(&m));
    }
}

static double member_connected(const struct fanout_member_stats *m)
{
    return m->connected;
}
static double member_behind(const struct fanout_member_stats *m)
{
    return m->behind;
}
static double member_unacked(const struct fanout_member_stats *m)
{
    return (double)m->unacked;
}
static double member_acked(const struct fanout_member_stats *m)
{
    return (double)m->acked;
}
static double member_dropped(const struct fanout_member_stats *m)
{
    return (double)m->behind_dropped;
}
static double member_reconnects(const struct fanout_member_stats *m)
{
    return (double)m->exporter.reconnects;
}

void agent_delivery_member_metrics(const struct agent_delivery *d, struct http_buf *b)
{
    const struct fanout *f = d->fanout;

    agent_member_family(f, b, "argus_agent_collector_member_connected", "gauge",
                        "stream to this collector of the set up", member_connected);
    agent_member_family(f, b, "argus_agent_collector_behind", "gauge",
                        "1: this collector acked nothing for collector.standby_wait with batches "
                        "waiting (not waited for; its batches kept up to spool.cap)",
                        member_behind);
    agent_member_family(f, b, "argus_agent_collector_unacked", "gauge",
                        "spooled batches this collector needs and has not acked", member_unacked);
    agent_member_family(f, b, "argus_agent_collector_acked_seq", "gauge",
                        "this collector's ack cursor (acked, or not meant for it, up to it)",
                        member_acked);
    agent_member_family(f, b, "argus_agent_collector_behind_dropped_total", "counter",
                        "batches this collector needed that spool.cap deleted before it acked them",
                        member_dropped);
    agent_member_family(f, b, "argus_agent_collector_reconnects_total", "counter",
                        "stream reconnects to this collector", member_reconnects);
}
