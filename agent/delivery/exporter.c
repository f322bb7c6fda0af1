#include "agent/delivery/exporter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/delivery/spool.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "common/tls_why.h"
#include "proto/argus.pb-c.h"

/* How often the stream's completion queue is polled while anything is in
 * flight; an idle exporter is not polled at all. */
#define EXPORTER_POLL_NS (10 * NSEC_PER_MSEC)
/* how often a disconnected exporter polls its channel's connection attempt */
#define EXPORTER_CONNECT_POLL_NS (20 * NSEC_PER_MSEC)
/* Records passed over (not meant for it) in one poll at most: the index
 * walk is cheap, but a poll must stay short. */
#define EXPORTER_PASS_MAX 4096
/* A stream that ends UNAVAILABLE under TLS is diagnosed (tls_why.h: a
 * handshake of its own, each step bounded) at most this often. */
#define EXPORTER_WHY_EVERY_NS (10 * NSEC_PER_SEC)
#define EXPORTER_WHY_MS 1000

struct exporter {
    struct exporter_options o;
    char *collector;
    struct spool *spool;
    struct rpc_channel *ch;
    struct rpc_stream *st;
    uint64_t acked;  /* the ack cursor (exporter_acked) */
    uint64_t cursor; /* highest seq sent or passed over on this stream (>= acked) */
    uint64_t *sent;  /* seqs sent on this stream and not acked yet, oldest first, a ring */
    size_t sent_head, sent_count, sent_cap;
    uint64_t reconnect_ns, backoff_ns;
    uint32_t features; /* Ack.features of the last ack on this stream */
    bool channel_lost; /* seen not READY while backing off: READY again goes at once */
    uint64_t rng;
    struct exporter_stats stats;
    struct log_ratelimit rl;
    char why[256];   /* the last TLS reason logged ("" none) */
    uint64_t why_ns; /* when the last diagnosis ran (0: never) */
};

/* The channel's own reconnect backoff follows the exporter's: a stream
 * opened while the channel waits for its next attempt fails at once, so a
 * longer one would outlast collector.backoff_max. */
static struct rpc_channel_options exporter_channel_options(const struct exporter_options *o,
                                                           const struct tls_pem *tls)
{
    return (struct rpc_channel_options){
        .keepalive_ms = o->keepalive_ns / NSEC_PER_MSEC,
        .reconnect_min_ms = o->backoff_min_ns / NSEC_PER_MSEC,
        .reconnect_max_ms = o->backoff_max_ns / NSEC_PER_MSEC,
        .tls = tls,
    };
}

struct exporter *exporter_new(const struct exporter_options *o, struct spool *spool)
{
    struct exporter *e = calloc(1, sizeof(*e));
    struct rpc_channel_options co = exporter_channel_options(o, o->tls);

    if (!e)
        return NULL;
    e->o = *o;
    e->collector = strdup(o->collector);
    e->spool = spool;
    e->acked = e->cursor = o->start > spool_acked_seq(spool) ? o->start : spool_acked_seq(spool);
    e->rng = clock_real_ns() | 1;
    e->rl = (struct log_ratelimit){.interval_ns = 30 * NSEC_PER_SEC, .burst = 3};
    e->ch = e->collector ? rpc_channel_new(e->collector, &co) : NULL;
    if (!e->ch) {
        free(e->collector);
        free(e);
        return NULL;
    }
    return e;
}

void exporter_free(struct exporter *e)
{
    if (!e)
        return;
    rpc_stream_free(e->st);
    rpc_channel_free(e->ch);
    free(e->collector);
    free(e->sent);
    free(e);
}

static uint64_t exporter_jitter(struct exporter *e, uint64_t range)
{
    e->rng ^= e->rng << 13;
    e->rng ^= e->rng >> 7;
    e->rng ^= e->rng << 17;
    return range ? e->rng % range : 0;
}

/* Schedule the next connection attempt: backoff doubles up to the cap and
 * the delay is drawn from [backoff/2, backoff] so agents spread out. */
static void exporter_backoff(struct exporter *e, uint64_t now_ns)
{
    if (e->backoff_ns == 0)
        e->backoff_ns = e->o.backoff_min_ns;
    else if (e->backoff_ns < e->o.backoff_max_ns / 2)
        e->backoff_ns *= 2;
    else
        e->backoff_ns = e->o.backoff_max_ns;
    e->reconnect_ns = now_ns + e->backoff_ns / 2 + exporter_jitter(e, e->backoff_ns / 2 + 1);
}

static bool exporter_wants(const struct exporter *e, uint64_t seq)
{
    return !e->o.wants || e->o.wants(e->o.wants_ctx, seq);
}

/* The oldest seq sent and not acked, or 0. */
static uint64_t exporter_sent_oldest(const struct exporter *e)
{
    return e->sent_count ? e->sent[e->sent_head] : 0;
}

static int exporter_sent_push(struct exporter *e, uint64_t seq)
{
    if (e->sent_count == e->sent_cap) {
        size_t cap = e->sent_cap ? e->sent_cap * 2 : 64;
        uint64_t *grown = malloc(cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        for (size_t i = 0; i < e->sent_count; i++)
            grown[i] = e->sent[(e->sent_head + i) % e->sent_cap];
        free(e->sent);
        e->sent = grown;
        e->sent_cap = cap;
        e->sent_head = 0;
    }
    e->sent[(e->sent_head + e->sent_count++) % e->sent_cap] = seq;
    return 0;
}

/* Forget the sent seqs <= seq (acked, or the stream is gone: UINT64_MAX). */
static void exporter_sent_pop(struct exporter *e, uint64_t seq)
{
    while (e->sent_count && e->sent[e->sent_head] <= seq) {
        e->sent_head = (e->sent_head + 1) % e->sent_cap;
        e->sent_count--;
    }
}

/* The first record after the ack cursor meant for it, or 0. */
static uint64_t exporter_head(const struct exporter *e)
{
    uint64_t seq, after = e->acked;

    while (spool_peek(e->spool, after, &seq) == 1) {
        if (exporter_wants(e, seq))
            return seq;
        after = seq;
    }
    return 0;
}

/* Move the cursor over records not meant for it; while nothing awaits an
 * ack, the ack cursor moves with it (so a collector none of whose jobs is
 * in the spool never holds the spool's ack watermark, connected or not). */
static void exporter_pass_over(struct exporter *e)
{
    uint64_t seq;

    for (int i = 0; i < EXPORTER_PASS_MAX && spool_peek(e->spool, e->cursor, &seq) == 1; i++) {
        if (exporter_wants(e, seq))
            return;
        e->cursor = seq;
        if (!e->sent_count)
            e->acked = seq;
    }
}

void exporter_advance(struct exporter *e, uint64_t seq)
{
    exporter_sent_pop(e, seq); /* an ack of one of them no longer moves anything */
    if (seq > e->acked)
        e->acked = seq;
    if (seq > e->cursor)
        e->cursor = seq;
}

uint64_t exporter_acked(const struct exporter *e)
{
    return e->acked;
}

uint64_t exporter_sets_unknown(const struct exporter *e)
{
    return e->stats.kernel_sets_unknown;
}

uint32_t exporter_features(const struct exporter *e)
{
    return e->st ? e->features : 0;
}

static void exporter_disconnect(struct exporter *e, uint64_t now_ns)
{
    e->stats.resent += e->sent_count;
    exporter_sent_pop(e, UINT64_MAX);
    e->cursor = e->acked;
    rpc_stream_free(e->st);
    e->st = NULL;
    e->features = 0;
    e->stats.connected = false;
    exporter_backoff(e, now_ns);
}

int exporter_set_tls(struct exporter *e, const struct tls_pem *tls, uint64_t now_ns)
{
    struct rpc_channel_options co = exporter_channel_options(&e->o, tls);
    struct rpc_channel *ch = rpc_channel_new(e->collector, &co);

    if (!ch)
        return -ENOMEM;
    if (e->st)
        exporter_disconnect(e, now_ns);
    rpc_channel_free(e->ch);
    e->ch = ch;
    e->o.tls = tls;
    e->why_ns = 0;            /* new files: a failure is diagnosed again at once */
    e->reconnect_ns = now_ns; /* at once (counted as a reconnect) */
    e->backoff_ns = 0;
    return 0;
}

/* The collector refused the oldest batch it had not acked for what it is:
 * the owner drops it, and this exporter passes over it. */
static void exporter_reject_head(struct exporter *e)
{
    uint64_t seq = exporter_sent_oldest(e); /* what it refused: it takes them in order */

    if (!seq)
        return;
    e->stats.rejected++;
    if (e->o.on_reject)
        e->o.on_reject(e->o.on_reject_ctx, seq);
    e->acked = seq; /* the records before it are acked: it was the head */
}

/* A stream that ended UNAVAILABLE under TLS: when the collector is there
 * and the handshake is what fails, log why (tls_why.h) once per change of
 * the sentence, not per retry; it becomes the last error too. */
static void exporter_why(struct exporter *e, const struct rpc_stream_event *ev, uint64_t now)
{
    char why[sizeof(e->why)];

    if (!e->o.tls || ev->status != RPC_UNAVAILABLE ||
        (e->why_ns && now - e->why_ns < EXPORTER_WHY_EVERY_NS))
        return;
    e->why_ns = now;
    if (tls_why_diagnose(e->collector, e->o.tls, EXPORTER_WHY_MS, why, sizeof(why)) !=
        TLS_WHY_FOUND) {
        e->why[0] = '\0';
        return;
    }
    if (strcmp(why, e->why) != 0)
        log_warn("exporter", "collector %s refuses the TLS handshake: %s", e->collector, why);
    snprintf(e->why, sizeof(e->why), "%s", why);
}

static void exporter_closed(struct exporter *e, const struct rpc_stream_event *ev, uint64_t now)
{
    exporter_why(e, ev, now);
    if (ev->status == RPC_UNAVAILABLE && e->o.tls && e->why[0])
        snprintf(e->stats.last_error, sizeof(e->stats.last_error), "TLS: %s", e->why);
    else
        snprintf(e->stats.last_error, sizeof(e->stats.last_error), "status %d: %s", ev->status,
                 ev->message);
    log_ratelimited(&e->rl, LOG_LEVEL_WARN, "exporter", "stream to %s ended: status %d: %s",
                    e->collector, ev->status, ev->message);
    /* a refusal of the stream itself (too many calls from this host) is
     * retried like a collector that is down: the batch is not at fault */
    if (ev->status == RPC_INVALID_ARGUMENT ||
        (ev->status == RPC_RESOURCE_EXHAUSTED && !strstr(ev->message, RPC_PEER_CAP_MARK)))
        exporter_reject_head(e);
    exporter_disconnect(e, now);
}

static void exporter_ack(struct exporter *e, const void *data, size_t len, uint64_t now)
{
    Argus__V1__Ack *ack = argus__v1__ack__unpack(NULL, len, data);

    e->why[0] = '\0'; /* the handshake went through: a TLS failure again is news */
    if (!ack)
        return;
    e->features = ack->features;
    e->stats.kernel_sets_unknown += ack->kernel_sets_unknown;
    if (ack->epoch == spool_epoch(e->spool) && ack->seq > e->acked && ack->seq <= e->cursor) {
        /* up to the next record awaiting an ack: what was passed over counts */
        uint64_t acked;

        exporter_sent_pop(e, ack->seq);
        acked = e->sent_count ? exporter_sent_oldest(e) - 1 : e->cursor;
        e->acked = acked > e->acked ? acked : e->acked;
        if (e->o.on_ack)
            e->o.on_ack(e->o.on_ack_ctx, e->acked);
        e->stats.acked = e->acked;
        e->stats.last_ack_ns = now;
        e->backoff_ns = 0;
    }
    for (size_t i = 0; e->o.on_capture && i < ack->n_captures; i++)
        e->o.on_capture(e->o.on_capture_ctx, ack->captures[i]);
    argus__v1__ack__free_unpacked(ack, NULL);
}

static void exporter_send_next(struct exporter *e)
{
    uint64_t seq;
    const void *data;
    size_t len;

    exporter_pass_over(e);
    if (!e->st || !rpc_stream_can_send(e->st))
        return;
    if (spool_read(e->spool, e->cursor, &seq, &data, &len) != 1)
        return;
    if (!exporter_wants(e, seq)) /* past EXPORTER_PASS_MAX: the next poll goes on */
        return;
    if (exporter_sent_push(e, seq) < 0)
        return; /* out of memory: tried again at the next poll */
    if (rpc_stream_send(e->st, data, len) == 0) {
        e->cursor = seq;
        e->stats.sent++;
    } else {
        e->sent_count--;
    }
}

void exporter_poll(struct exporter *e, uint64_t now_ns)
{
    struct rpc_stream_event ev;

    if (!e->st)
        exporter_pass_over(e);
    /* waiting out the backoff: drive the channel's connection attempt, and
     * go at once when a collector that was unreachable answers again (one
     * that refused us while connected waits the backoff out) */
    if (!e->st && (e->o.eager || !exporter_idle(e)) && now_ns < e->reconnect_ns) {
        bool ready = rpc_channel_connect(e->ch);
        if (ready && e->channel_lost)
            e->reconnect_ns = now_ns;
        e->channel_lost = !ready;
    }
    if (!e->st && (e->o.eager || !exporter_idle(e)) && now_ns >= e->reconnect_ns) {
        e->st = rpc_stream_open(e->ch, RPC_INGEST_PUSH, false);
        e->cursor = e->acked;
        e->channel_lost = false;
        if (e->st) {
            e->stats.connected = true;
            if (e->reconnect_ns)
                e->stats.reconnects++;
        } else {
            exporter_backoff(e, now_ns);
        }
    }
    while (e->st) {
        exporter_send_next(e);
        if (rpc_stream_poll(e->st, 0, &ev) < 0 || ev.kind == RPC_STREAM_NONE)
            break;
        if (ev.kind == RPC_STREAM_MESSAGE)
            exporter_ack(e, ev.data, ev.len, now_ns);
        else if (ev.kind == RPC_STREAM_CLOSED)
            exporter_closed(e, &ev, now_ns);
    }
}

uint64_t exporter_next_ns(const struct exporter *e, uint64_t now_ns)
{
    bool unacked = !exporter_idle(e);

    if (!e->st) /* backing off: the channel is polled meanwhile (exporter_poll) */
        return unacked || e->o.eager ? (e->reconnect_ns > now_ns + EXPORTER_CONNECT_POLL_NS
                                            ? now_ns + EXPORTER_CONNECT_POLL_NS
                                            : (e->reconnect_ns > now_ns ? e->reconnect_ns : now_ns))
                                     : UINT64_MAX;
    if (unacked || !rpc_stream_can_send(e->st))
        return now_ns + EXPORTER_POLL_NS;
    return UINT64_MAX;
}

bool exporter_idle(const struct exporter *e)
{
    return exporter_head(e) == 0;
}

void exporter_get_stats(const struct exporter *e, struct exporter_stats *out)
{
    *out = e->stats;
}
