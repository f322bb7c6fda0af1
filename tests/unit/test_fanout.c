/* agent/delivery/fanout over a real spool and real exporters to three fake
 * collectors on loopback (the collector's transport; a record "ok N" is
 * acked, "bad N" refused): a job's records reach its primary and standby
 * and not the third member, the spool's ack watermark is the lowest cursor,
 * a dead member holds it until the bound and then is not waited for, the
 * cap deleting what only it lacks counts as behind (not a loss), a refused
 * batch is counted once, records the fan-out does not know go to all, and
 * a new set re-sends the names. */
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

#include "agent/delivery/batcher.h"
#include "agent/delivery/drops.h"
#include "agent/delivery/fanout.h"
#include "agent/delivery/names.h"
#include "agent/delivery/spool.h"
#include "collector/transport/transport.h"
#include "common/clock.h"
#include "common/collector_set.h"
#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"

#define MAXSEQ 512

struct collector {
    uint64_t epoch;
    unsigned char got[MAXSEQ]; /* records received, by seq */
    unsigned refused;
    struct transport_server *server;
    int port;
};

struct fixture {
    char dir[64];
    struct collector col[3];
    struct collector_set set;
    struct spool *spool;
    struct drops *drops;
    struct names *names;
    struct fanout *fan;
};

static void *col_open(void *ctx, const struct transport_peer *peer, struct transport_reply *reply)
{
    return ctx;
}

static void col_message(void *stream, const void *data, size_t len, struct transport_reply *reply)
{
    struct collector *c = stream;
    Argus__V1__Ack ack = ARGUS__V1__ACK__INIT;
    char text[64] = "";
    unsigned long long seq = 0;

    memcpy(text, data, len < sizeof(text) - 1 ? len : sizeof(text) - 1);
    if (sscanf(text, "ok %llu", &seq) != 1) {
        __atomic_fetch_add(&c->refused, 1, __ATOMIC_SEQ_CST);
        reply->status = TRANSPORT_INVALID_ARGUMENT;
        snprintf(reply->message, sizeof(reply->message), "not a batch");
        return;
    }
    if (seq < MAXSEQ)
        __atomic_store_n(&c->got[seq], 1, __ATOMIC_SEQ_CST);
    ack.epoch = __atomic_load_n(&c->epoch, __ATOMIC_SEQ_CST);
    ack.seq = seq;
    reply->len = argus__v1__ack__get_packed_size(&ack);
    reply->data = malloc(reply->len);
    argus__v1__ack__pack(&ack, reply->data);
}

static void col_close(void *stream)
{
}

static const struct transport_stream_ops col_ops = {col_open, col_message, col_close};

/* Start collector i on its port (0: any, the first time). */
static void col_start(struct fixture *f, int i)
{
    struct collector *c = &f->col[i];
    char listen[32];
    struct transport_options o = {.listen = listen, .workers = 1, .max_message = 1 << 20};

    snprintf(listen, sizeof(listen), "127.0.0.1:%d", c->port);
    c->server = transport_new(&o);
    assert_int_equal(transport_add_stream(c->server, RPC_INGEST_PUSH, &col_ops, c), 0);
    c->port = transport_start(c->server);
    assert_true(c->port > 0);
}

static void col_stop(struct fixture *f, int i)
{
    transport_free(f->col[i].server);
    f->col[i].server = NULL;
}

static void on_loss(void *ctx, const char *reason, uint64_t count)
{
    drops_add(((struct fixture *)ctx)->drops, reason, NULL, -1, count);
}

static struct fanout *fan_new(struct fixture *f, uint64_t wait_ns)
{
    struct fanout_options o = {.keepalive_ns = 30 * NSEC_PER_SEC,
                               .backoff_min_ns = NSEC_PER_MSEC,
                               .backoff_max_ns = 20 * NSEC_PER_MSEC,
                               .standby_wait_ns = wait_ns,
                               .eager = true};
    struct fanout *fan = fanout_new(&o, f->spool, f->names, f->drops);

    assert_non_null(fan);
    return fan;
}

static int setup_cap(void **state, uint64_t cap)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct spool_options so = {.cap_bytes = cap, .segment_bytes = cap / 4, .on_loss = on_loss};
    char list[128];

    so.on_loss_ctx = f;
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_fanout.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(spool_open(f->dir, &so, &f->spool), 0);
    f->drops = drops_new();
    f->names = names_new();
    for (int i = 0; i < 3; i++) {
        f->col[i].epoch = spool_epoch(f->spool);
        col_start(f, i);
    }
    snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", f->col[0].port,
             f->col[1].port, f->col[2].port);
    assert_int_equal(collector_set_parse(list, &f->set, NULL, 0), 0);
    f->fan = fan_new(f, 300 * NSEC_PER_MSEC);
    assert_int_equal(fanout_set_members(f->fan, &f->set, clock_mono_ns()), 0);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_cap(state, 0);
}

static int setup_small(void **state)
{
    return setup_cap(state, 64 << 10);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    fanout_free(f->fan);
    for (int i = 0; i < 3; i++)
        col_stop(f, i);
    spool_close(f->spool);
    drops_free(f->drops);
    names_free(f->names);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* The collector (its index in col[]) that member m of f->set is. */
static int col_of(const struct fixture *f, size_t m)
{
    for (int i = 0; i < 3; i++) {
        char addr[32];
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->col[i].port);
        if (!strcmp(f->set.member[m].address, addr))
            return i;
    }
    fail();
    return -1;
}

/* job's primary, standby and the third, as col[] indexes. */
static void placed(const struct fixture *f, const char *job, int out[3])
{
    size_t p[2];

    assert_int_equal(collector_set_place(&f->set, job, p), 2);
    out[0] = col_of(f, p[0]);
    out[1] = col_of(f, p[1]);
    out[2] = 3 - out[0] - out[1];
}

/* Append a record of job (NULL: of no job; "" : one the fan-out is not
 * told of), padded to pad bytes. Returns its seq. */
static uint64_t append(struct fixture *f, const char *verdict, const char *job, size_t pad)
{
    char text[4096];
    uint64_t seq = spool_next_seq(f->spool);
    int n = snprintf(text, sizeof(text), "%s %llu", verdict, (unsigned long long)seq);
    long j = job && *job ? names_job_index(f->names, job) : -1;
    struct batcher_sealed sealed = {.jobs = &j, .njobs = j >= 0, .jobless = j < 0};

    if (pad > (size_t)n) {
        memset(text + n, ' ', pad - n);
        n = (int)pad;
    }
    assert_int_equal(spool_append(f->spool, text, (size_t)n, &seq), 0);
    if (!job || *job)
        fanout_sealed(f->fan, seq, &sealed, clock_mono_ns());
    return seq;
}

static bool got(struct fixture *f, int c, uint64_t seq)
{
    return __atomic_load_n(&f->col[c].got[seq], __ATOMIC_SEQ_CST);
}

/* Poll until fanout_idle, or fail after 10 s. */
static void run_until_idle(struct fixture *f)
{
    uint64_t end = clock_mono_ns() + 10 * NSEC_PER_SEC;

    do {
        assert_true(clock_mono_ns() < end);
        fanout_poll(f->fan, clock_mono_ns());
        clock_sleep_ns(NSEC_PER_MSEC);
    } while (!fanout_idle(f->fan, clock_mono_ns()));
}

static void test_job_to_primary_and_standby(void **state)
{
    struct fixture *f = *state;
    int a[3];
    uint64_t s1, s2, s3, s4;

    placed(f, "jobA", a);
    s1 = append(f, "ok", "jobA", 0);
    s2 = append(f, "ok", "jobA", 0);
    s3 = append(f, "ok", NULL, 0); /* of no job: where jobA goes, it being active */
    s4 = append(f, "ok", "", 0);   /* unknown (spooled before a restart): all */
    run_until_idle(f);
    for (uint64_t s = s1; s <= s3; s++) {
        assert_true(got(f, a[0], s));
        assert_true(got(f, a[1], s));
        assert_false(got(f, a[2], s));
    }
    assert_true(got(f, a[0], s4) && got(f, a[1], s4) && got(f, a[2], s4));
    assert_int_equal(spool_acked_seq(f->spool), s4);
    assert_false(spool_has_unacked(f->spool));
    for (size_t i = 0; i < fanout_members(f->fan); i++) {
        struct fanout_member_stats m;
        fanout_member_stats(f->fan, i, &m);
        assert_int_equal(m.acked, s4);
        assert_false(m.behind);
    }
    (void)s2;
}

/* Member index of col[c] in the fan-out. */
static size_t member_of(struct fixture *f, int c)
{
    for (size_t i = 0; i < f->set.n; i++)
        if (col_of(f, i) == c)
            return i;
    fail();
    return 0;
}

static void test_dead_standby_holds_watermark_until_bound(void **state)
{
    struct fixture *f = *state;
    int a[3];
    uint64_t first, last = 0;
    struct fanout_member_stats m;

    placed(f, "jobB", a);
    first = append(f, "ok", "jobB", 0);
    run_until_idle(f);
    col_stop(f, a[1]); /* the standby dies */
    for (int i = 0; i < 5; i++)
        last = append(f, "ok", "jobB", 0);
    uint64_t start = clock_mono_ns();
    while (!got(f, a[0], last) && clock_mono_ns() - start < 5 * NSEC_PER_SEC) {
        fanout_poll(f->fan, clock_mono_ns());
        clock_sleep_ns(NSEC_PER_MSEC);
    }
    assert_true(got(f, a[0], last)); /* the primary goes on */
    fanout_poll(f->fan, clock_mono_ns());
    assert_int_equal(spool_acked_seq(f->spool), first); /* held by the standby */
    assert_true(spool_has_unacked(f->spool));
    /* within the bound a stopping agent waits for it; past it, not */
    if (clock_mono_ns() - start < 250 * NSEC_PER_MSEC)
        assert_false(fanout_idle(f->fan, clock_mono_ns()));
    clock_sleep_ns(400 * NSEC_PER_MSEC);
    fanout_poll(f->fan, clock_mono_ns() + NSEC_PER_SEC); /* and its counts are taken */
    assert_true(fanout_idle(f->fan, clock_mono_ns()));
    fanout_member_stats(f->fan, member_of(f, a[1]), &m);
    assert_true(m.behind);
    assert_false(m.connected);
    assert_int_equal(m.unacked, 5);
    assert_int_equal(m.acked, first);
    fanout_member_stats(f->fan, member_of(f, a[0]), &m);
    assert_false(m.behind);
    assert_int_equal(m.unacked, 0);
    /* it comes back on its port: it catches up from the spool */
    col_start(f, a[1]);
    run_until_idle(f);
    start = clock_mono_ns();
    while (spool_acked_seq(f->spool) != last && clock_mono_ns() - start < 10 * NSEC_PER_SEC) {
        fanout_poll(f->fan, clock_mono_ns());
        clock_sleep_ns(NSEC_PER_MSEC);
    }
    assert_int_equal(spool_acked_seq(f->spool), last);
    for (uint64_t s = first + 1; s <= last; s++)
        assert_true(got(f, a[1], s));
}

/* The cap deletes records the live primary acked and the dead standby did
 * not: behind, not a loss; records nobody acked stay a spool_cap loss. */
static void test_cap_behind_is_not_a_loss(void **state)
{
    struct fixture *f = *state;
    int a[3];
    struct fanout_member_stats m;

    placed(f, "jobC", a);
    col_stop(f, a[1]);
    for (int i = 0; i < 40; i++) {
        append(f, "ok", "jobC", 3000);
        uint64_t end = clock_mono_ns() + 5 * NSEC_PER_SEC;
        while (!got(f, a[0], spool_next_seq(f->spool) - 1) && clock_mono_ns() < end) {
            fanout_poll(f->fan, clock_mono_ns());
            clock_sleep_ns(NSEC_PER_MSEC);
        }
        fanout_poll(f->fan, clock_mono_ns());
        if (i == 2) /* past the bound from here on */
            clock_sleep_ns(400 * NSEC_PER_MSEC);
    }
    fanout_poll(f->fan, clock_mono_ns());
    fanout_member_stats(f->fan, member_of(f, a[1]), &m);
    assert_true(m.behind);
    assert_true(m.behind_dropped > 0);
    assert_true(drops_get(f->drops, SPOOL_LOSS_BEHIND, NULL, -1) > 0);
    /* the first records were deleted before the standby was behind: a loss */
    assert_true(drops_get(f->drops, SPOOL_LOSS_CAP, NULL, -1) <= 3);
    assert_true(drops_get(f->drops, SPOOL_LOSS_BEHIND, NULL, -1) +
                    drops_get(f->drops, SPOOL_LOSS_CAP, NULL, -1) >=
                m.behind_dropped);
    fanout_member_stats(f->fan, member_of(f, a[0]), &m);
    assert_int_equal(m.behind_dropped, 0);
}

static void test_refused_counted_once(void **state)
{
    struct fixture *f = *state;
    int a[3];
    uint64_t ok;

    placed(f, "jobD", a);
    append(f, "bad", "jobD", 0); /* both collectors refuse it */
    ok = append(f, "ok", "jobD", 0);
    run_until_idle(f);
    assert_true(got(f, a[0], ok) && got(f, a[1], ok));
    assert_int_equal(drops_get(f->drops, EXPORTER_DROP_REJECTED, NULL, -1), 1);
    assert_int_equal(spool_acked_seq(f->spool), ok);
}

/* A new member: it gets what is spooled of its jobs, and names are sent
 * again (it has none). */
static void test_new_set_resends_names(void **state)
{
    struct fixture *f = *state;
    struct collector_set two = f->set;
    long j = names_job_index(f->names, "jobE");
    Argus__V1__NameEntry **entries;
    uint64_t seq;

    assert_int_equal(names_define(f->names, 7, "kernel"), 0);
    names_reference_at(f->names, j, 7);
    assert_int_equal(names_take(f->names, 1, &entries), 1);
    names_ack(f->names, 1);
    names_reference_at(f->names, j, 7); /* acked: not queued again */
    assert_int_equal(names_take(f->names, 2, &entries), 0);
    /* the set loses its last member: jobs move, names go again */
    two.n = 2;
    assert_int_equal(fanout_set_members(f->fan, &two, clock_mono_ns()), 0);
    assert_int_equal(fanout_members(f->fan), 2);
    names_reference_at(f->names, j, 7);
    assert_int_equal(names_take(f->names, 3, &entries), 1);
    /* records spooled before the change go by the new placement */
    seq = append(f, "ok", "jobE", 0);
    run_until_idle(f);
    assert_int_equal(spool_acked_seq(f->spool), seq);
    assert_true(got(f, col_of(f, 0), seq) && got(f, col_of(f, 1), seq));
    /* back to three: the new member starts at the watermark */
    assert_int_equal(fanout_set_members(f->fan, &f->set, clock_mono_ns()), 0);
    for (size_t i = 0; i < fanout_members(f->fan); i++) {
        struct fanout_member_stats m;
        fanout_member_stats(f->fan, i, &m);
        assert_int_equal(m.acked, seq);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_job_to_primary_and_standby, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_standby_holds_watermark_until_bound, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cap_behind_is_not_a_loss, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_refused_counted_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_set_resends_names, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
