/* agent/delivery/exporter against a fake collector on loopback (the
 * collector's transport with a stream handler that acks or refuses): acked
 * batches move the ack cursor and reach on_ack (the test's owner acks the
 * spool with it, as fanout does), a refused batch reaches on_reject once and
 * is passed over, never retried; records not meant for it are passed over
 * unsent. */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/delivery/drops.h"
#include "agent/delivery/exporter.h"
#include "agent/delivery/spool.h"
#include "collector/transport/transport.h"
#include "common/clock.h"
#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"

/* The fake collector: a record "ok N" is acked as seq N of epoch, "bad N"
 * ends the stream with INVALID_ARGUMENT. Handlers run on transport threads;
 * the test reads the counters only after the exporter is idle. */
struct collector {
    uint64_t epoch;
    unsigned received, refused;
    unsigned busy;     /* refuse this many more messages as the per-peer cap does */
    uint32_t features; /* Ack.features */
    bool deny;         /* refuse every stream at open (PERMISSION_DENIED) */
};

struct fixture {
    char dir[64];
    struct collector col;
    struct transport_server *server;
    char target[64];
    struct spool *spool;
    struct drops *drops;
    uint64_t acks[8];
    size_t nacks;
    uint64_t unwanted; /* wants: every record but this one */
};

static void *col_open(void *ctx, const struct transport_peer *peer, struct transport_reply *reply)
{
    struct collector *c = ctx;

    if (__atomic_load_n(&c->deny, __ATOMIC_SEQ_CST)) {
        reply->status = TRANSPORT_PERMISSION_DENIED;
        snprintf(reply->message, sizeof(reply->message), "not this agent");
        return NULL;
    }
    return ctx;
}

static void col_message(void *stream, const void *data, size_t len, struct transport_reply *reply)
{
    struct collector *c = stream;
    Argus__V1__Ack ack = ARGUS__V1__ACK__INIT;
    char text[32] = "";
    unsigned long long seq = 0;

    memcpy(text, data, len < sizeof(text) - 1 ? len : sizeof(text) - 1);
    __atomic_fetch_add(&c->received, 1, __ATOMIC_SEQ_CST);
    if (sscanf(text, "ok %llu", &seq) != 1) {
        __atomic_fetch_add(&c->refused, 1, __ATOMIC_SEQ_CST);
        reply->status = TRANSPORT_INVALID_ARGUMENT;
        snprintf(reply->message, sizeof(reply->message), "not a batch: %s", text);
        return;
    }
    if (__atomic_load_n(&c->busy, __ATOMIC_SEQ_CST) > 0) {
        __atomic_fetch_sub(&c->busy, 1, __ATOMIC_SEQ_CST);
        reply->status = TRANSPORT_RESOURCE_EXHAUSTED;
        snprintf(reply->message, sizeof(reply->message), "ipv4:127.0.0.1 has 2 calls open (%s)",
                 RPC_PEER_CAP_MARK);
        return;
    }
    ack.epoch = __atomic_load_n(&c->epoch, __ATOMIC_SEQ_CST);
    ack.seq = seq;
    ack.features = __atomic_load_n(&c->features, __ATOMIC_SEQ_CST);
    reply->len = argus__v1__ack__get_packed_size(&ack);
    reply->data = malloc(reply->len);
    argus__v1__ack__pack(&ack, reply->data);
}

static void col_close(void *stream)
{
}

static const struct transport_stream_ops col_ops = {col_open, col_message, col_close};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct transport_options o = {.listen = "127.0.0.1:0", .workers = 1, .max_message = 1 << 20};
    int port;

    snprintf(f->dir, sizeof(f->dir), "/tmp/test_exporter.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(spool_open(f->dir, NULL, &f->spool), 0);
    f->col.epoch = spool_epoch(f->spool);
    f->drops = drops_new();
    f->server = transport_new(&o);
    assert_int_equal(transport_add_stream(f->server, RPC_INGEST_PUSH, &col_ops, &f->col), 0);
    port = transport_start(f->server);
    assert_true(port > 0);
    snprintf(f->target, sizeof(f->target), "127.0.0.1:%d", port);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    transport_free(f->server);
    spool_close(f->spool);
    drops_free(f->drops);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void on_ack(void *ctx, uint64_t seq)
{
    struct fixture *f = ctx;

    if (f->nacks < sizeof(f->acks) / sizeof(f->acks[0]))
        f->acks[f->nacks++] = seq;
    assert_int_equal(spool_ack(f->spool, seq), 0);
}

static void on_reject(void *ctx, uint64_t seq)
{
    struct fixture *f = ctx;

    drops_add(f->drops, EXPORTER_DROP_REJECTED, NULL, -1, 1);
}

static bool wants(void *ctx, uint64_t seq)
{
    return seq != ((struct fixture *)ctx)->unwanted;
}

static struct exporter *exporter(struct fixture *f)
{
    struct exporter_options o = {
        .collector = f->target,
        .keepalive_ns = 30 * NSEC_PER_SEC,
        .backoff_min_ns = NSEC_PER_MSEC,
        .backoff_max_ns = 10 * NSEC_PER_MSEC,
        .on_ack = on_ack,
        .on_ack_ctx = f,
        .on_reject = on_reject,
        .on_reject_ctx = f,
        .wants = wants,
        .wants_ctx = f,
    };
    struct exporter *e = exporter_new(&o, f->spool);

    assert_non_null(e);
    return e;
}

static void append(struct fixture *f, const char *verdict)
{
    char text[32];
    int n = snprintf(text, sizeof(text), "%s %llu", verdict,
                     (unsigned long long)spool_next_seq(f->spool));

    assert_int_equal(spool_append(f->spool, text, (size_t)n, NULL), 0);
}

/* Poll until every record is acked (or rejected); fails after 10 s. */
static void run_until_idle(struct exporter *e)
{
    uint64_t end = clock_mono_ns() + 10 * NSEC_PER_SEC;

    while (!exporter_idle(e)) {
        assert_true(clock_mono_ns() < end);
        exporter_poll(e, clock_mono_ns());
        clock_sleep_ns(NSEC_PER_MSEC);
    }
}

static void test_acks_reach_on_ack(void **state)
{
    struct fixture *f = *state;
    struct exporter *e = exporter(f);
    struct exporter_stats st;

    assert_true(exporter_idle(e));
    assert_int_equal(exporter_next_ns(e, 5), UINT64_MAX); /* nothing to send */
    append(f, "ok");
    append(f, "ok");
    assert_false(exporter_idle(e));
    assert_int_equal(exporter_next_ns(e, 5), 5); /* due now */
    run_until_idle(e);
    assert_int_equal(spool_acked_seq(f->spool), 2);
    assert_false(spool_has_unacked(f->spool));
    assert_true(f->nacks >= 1);
    assert_int_equal(f->acks[f->nacks - 1], 2);
    exporter_get_stats(e, &st);
    assert_int_equal(st.acked, 2);
    assert_int_equal(st.rejected, 0);
    assert_int_equal(drops_count(f->drops), 0);
    exporter_free(e);
}

static void test_rejected_batch_is_counted(void **state)
{
    struct fixture *f = *state;
    struct exporter *e = exporter(f);
    struct exporter_stats st;

    append(f, "ok");
    append(f, "bad");
    append(f, "ok");
    run_until_idle(e);
    assert_int_equal(exporter_acked(e), 3);
    assert_int_equal(drops_get(f->drops, EXPORTER_DROP_REJECTED, NULL, -1), 1);
    assert_int_equal(drops_count(f->drops), 1);
    assert_int_equal(__atomic_load_n(&f->col.refused, __ATOMIC_SEQ_CST), 1); /* never retried */
    assert_int_equal(f->acks[f->nacks - 1], 3);
    for (size_t i = 0; i < f->nacks; i++)
        assert_true(f->acks[i] != 2); /* a refused batch is no ack */
    exporter_get_stats(e, &st);
    assert_int_equal(st.rejected, 1);
    assert_true(st.reconnects >= 1);
    exporter_free(e);
}

/* What the collector reads (Ack.features) is its last ack's on the stream
 * up now: 0 before any ack, from a collector that says nothing (one from
 * before the field), and once the stream is gone. */
static void test_features_from_acks(void **state)
{
    struct fixture *f = *state;
    struct exporter *e = exporter(f);

    assert_int_equal(exporter_features(e), 0);
    append(f, "ok");
    run_until_idle(e);
    assert_int_equal(exporter_features(e), 0); /* an older collector */
    __atomic_store_n(&f->col.features, 1, __ATOMIC_SEQ_CST);
    append(f, "ok");
    run_until_idle(e);
    assert_int_equal(exporter_features(e), 1);
    append(f, "bad"); /* the collector ends the stream */
    run_until_idle(e);
    assert_int_equal(exporter_features(e), 0);
    exporter_free(e);
}

/* A stream refused for the calls its host has open is retried: the batch
 * in flight is not at fault, not dropped. */
static void test_peer_cap_is_retried(void **state)
{
    struct fixture *f = *state;
    struct exporter *e = exporter(f);
    struct exporter_stats st;

    f->col.busy = 2;
    append(f, "ok");
    append(f, "ok");
    run_until_idle(e);
    assert_int_equal(exporter_acked(e), 2);
    assert_int_equal(drops_count(f->drops), 0);
    exporter_get_stats(e, &st);
    assert_int_equal(st.rejected, 0);
    assert_true(st.reconnects >= 2);
    exporter_free(e);
}

/* A collector that refuses while connected is retried at the backoff, no
 * faster: the channel stays READY, which must not cut the wait short. */
static void test_refused_waits_backoff(void **state)
{
    struct fixture *f = *state;
    struct exporter *e = exporter(f);
    struct exporter_stats st;
    uint64_t end = clock_mono_ns() + 500 * NSEC_PER_MSEC;

    f->col.deny = true;
    append(f, "ok");
    while (clock_mono_ns() < end) {
        exporter_poll(e, clock_mono_ns());
        clock_sleep_ns(NSEC_PER_MSEC);
    }
    exporter_get_stats(e, &st);
    /* backoff 1 ms doubling to 10 ms, drawn from [b/2, b]: at most ~100 */
    assert_true(st.reconnects >= 10);
    assert_true(st.reconnects <= 110);
    exporter_free(e);
}

/* A record not meant for it is never sent, and the cursor passes it. */
static void test_unwanted_passed_over(void **state)
{
    struct fixture *f = *state;
    struct exporter *e;

    f->unwanted = 2;
    e = exporter(f);
    append(f, "ok");
    append(f, "bad"); /* would end the stream if it were sent */
    append(f, "ok");
    run_until_idle(e);
    assert_int_equal(exporter_acked(e), 3);
    assert_int_equal(__atomic_load_n(&f->col.received, __ATOMIC_SEQ_CST), 2);
    assert_int_equal(__atomic_load_n(&f->col.refused, __ATOMIC_SEQ_CST), 0);
    /* only unwanted records after the last ack: the cursor passes them unsent */
    f->unwanted = 4;
    append(f, "bad");
    assert_false(spool_peek(f->spool, exporter_acked(e), &(uint64_t){0}) == 0);
    exporter_poll(e, clock_mono_ns());
    assert_true(exporter_idle(e));
    assert_int_equal(exporter_acked(e), 4);
    exporter_advance(e, 2); /* lower: ignored */
    assert_int_equal(exporter_acked(e), 4);
    exporter_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unwanted_passed_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acks_reach_on_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejected_batch_is_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_features_from_acks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_cap_is_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_waits_backoff, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
