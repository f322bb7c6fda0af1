/* Ingest against hostile input, each over a real gRPC connection to an
 * in-process collector (transport + ingest + RocksDB store in a temp dir):
 * the right status and message every time, and a healthy stream keeps being
 * served throughout. Also the pure validator, and a record whose kernels
 * come coded (StepRecord.packed_kernels, as the agent ships them) stored
 * with the same kernels as KernelGroups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4.h>

#include "collector/ingest/ingest.h"
#include "collector/ingest/validate.h"
#include "collector/store/store.h"
#include "collector/transport/transport.h"
#include "common/frame.h"
#include "common/kernel_code.h"
#include "common/name_id.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"

static struct store *store;
static struct ingest *ingest;
static struct transport_server *server;
static struct rpc_channel *ch;
static char dir[64];
static uint64_t good_seq;

static int setup(void **state)
{
    struct store_options so = {0};
    struct ingest_limits l;
    struct transport_options to = {.listen = "127.0.0.1:0", .workers = 2, .max_message = 16 << 20};
    char err[256], target[64];

    strcpy(dir, "/tmp/argus-test-ingest-XXXXXX");
    assert_non_null(mkdtemp(dir));
    so.dir = dir;
    assert_int_equal(store_open(&so, &store, err, sizeof(err)), 0);
    ingest_default_limits(&l);
    ingest = ingest_new(store, &l, NULL, NULL);
    server = transport_new(&to);
    transport_add_stream(server, RPC_INGEST_PUSH, &ingest_stream_ops, ingest);
    int port = transport_start(server);
    assert_true(port > 0);
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    ch = rpc_channel_new(target, NULL);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    rpc_channel_free(ch);
    transport_free(server);
    ingest_free(ingest);
    store_close(store);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* A small valid batch from agent "good". */
static Argus__V1__Batch *good_batch(Argus__V1__Batch *b, Argus__V1__StepRecord *s,
                                    Argus__V1__StepRecord **sp)
{
    argus__v1__batch__init(b);
    argus__v1__step_record__init(s);
    s->job = "hostile";
    s->rank = 1;
    s->step = ++good_seq;
    s->duration_ns = 1000;
    *sp = s;
    b->agent_id = "good";
    b->epoch = 1;
    b->seq = good_seq;
    b->n_steps = 1;
    b->steps = sp;
    return b;
}

static void *frame_of(const Argus__V1__Batch *b, size_t *len)
{
    size_t n = argus__v1__batch__get_packed_size(b);
    uint8_t *raw = malloc(n + 1);
    void *frame;

    argus__v1__batch__pack(b, raw);
    assert_int_equal(frame_encode(raw, n, FRAME_CODEC_LZ4, &frame, len), 0);
    free(raw);
    return frame;
}

/* Send one message on a fresh stream and return how the stream ended (or
 * RPC_OK with an ack). */
static int send_one(const void *data, size_t len, char *msg, size_t msglen)
{
    struct rpc_stream *st = rpc_stream_open(ch, RPC_INGEST_PUSH, true);
    struct rpc_stream_event ev;
    int status = -1;

    assert_int_equal(rpc_stream_send(st, data, len), 0);
    for (int i = 0; i < 200 && status < 0; i++) {
        rpc_stream_poll(st, 100, &ev);
        if (ev.kind == RPC_STREAM_MESSAGE)
            status = RPC_OK;
        else if (ev.kind == RPC_STREAM_CLOSED) {
            status = ev.status;
            snprintf(msg, msglen, "%s", ev.message);
        }
    }
    rpc_stream_free(st);
    return status;
}

/* The healthy stream: one more batch must be acked. */
static void assert_still_serving(void)
{
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    size_t len;
    char msg[256];
    void *f = frame_of(good_batch(&b, &s, &sp), &len);

    assert_int_equal(send_one(f, len, msg, sizeof(msg)), RPC_OK);
    free(f);
}

static void expect(const void *data, size_t len, int status, const char *needle)
{
    char msg[256] = "";

    assert_int_equal(send_one(data, len, msg, sizeof(msg)), status);
    if (!strstr(msg, needle))
        fail_msg("status message '%s' lacks '%s'", msg, needle);
    assert_still_serving();
}

static void *pack_frame(int codec, uint32_t raw_len, const void *payload, size_t plen, size_t *len)
{
    Argus__V1__Frame f = ARGUS__V1__FRAME__INIT;
    void *out;

    f.codec = codec;
    f.raw_len = raw_len;
    f.payload.data = (uint8_t *)payload;
    f.payload.len = plen;
    *len = argus__v1__frame__get_packed_size(&f);
    out = malloc(*len);
    argus__v1__frame__pack(&f, out);
    return out;
}

static void test_good_batch_acked_and_replay_deduplicated(void **state)
{
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    size_t len;
    char msg[256];
    struct ingest_stats st;
    void *f = frame_of(good_batch(&b, &s, &sp), &len);

    assert_int_equal(send_one(f, len, msg, sizeof(msg)), RPC_OK);
    assert_int_equal(send_one(f, len, msg, sizeof(msg)), RPC_OK); /* replay: acked again */
    ingest_get_stats(ingest, &st);
    assert_int_equal(st.duplicates, 1);
    free(f);
}

static void test_oversize_frame(void **state)
{
    size_t n = 5 << 20, len;
    uint8_t *junk = malloc(n);
    for (size_t i = 0; i < n; i++)
        junk[i] = (uint8_t)(i * 2654435761u >> 13);
    void *f = pack_frame(0, (uint32_t)n, junk, n, &len);

    expect(f, len, RPC_RESOURCE_EXHAUSTED, "larger than the collector's frame size limit");
    free(f);
    free(junk);
}

static void test_lying_raw_len(void **state)
{
    char raw[4096], comp[LZ4_COMPRESSBOUND(4096)];
    size_t len;
    memset(raw, 'a', sizeof(raw));
    int clen = LZ4_compress_default(raw, comp, sizeof(raw), sizeof(comp));

    void *f = pack_frame(1, 5000, comp, (size_t)clen, &len);
    expect(f, len, RPC_INVALID_ARGUMENT, "raw_len does not match");
    free(f);
    f = pack_frame(1, 30u << 20, comp, (size_t)clen, &len); /* a decompression bomb claim */
    expect(f, len, RPC_RESOURCE_EXHAUSTED, "larger than the payload could expand to");
    free(f);
}

static void test_truncated_and_random_payloads(void **state)
{
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    size_t len;
    uint8_t *f = frame_of(good_batch(&b, &s, &sp), &len);
    uint8_t rnd[777];

    expect(f, len / 2, RPC_INVALID_ARGUMENT, "not a valid argus.v1.Frame");
    free(f);
    srand(7);
    for (int round = 0; round < 5; round++) {
        for (size_t i = 0; i < sizeof(rnd); i++)
            rnd[i] = (uint8_t)rand();
        char msg[256];
        int st = send_one(rnd, sizeof(rnd), msg, sizeof(msg));
        assert_true(st == RPC_INVALID_ARGUMENT || st == RPC_RESOURCE_EXHAUSTED);
    }
    /* a valid frame whose payload is not a Batch */
    f = pack_frame(0, 9, "not proto", 9, &len);
    expect(f, len, RPC_INVALID_ARGUMENT, "not a valid argus.v1.Batch");
    free(f);
    assert_still_serving();
}

static void test_unknown_codec(void **state)
{
    size_t len;
    void *f = pack_frame(9, 3, "abc", 3, &len);

    expect(f, len, RPC_INVALID_ARGUMENT, "unknown codec");
    free(f);
}

static void test_absurd_rank(void **state)
{
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    size_t len;

    good_batch(&b, &s, &sp);
    b.agent_id = "absurd";
    s.rank = 4000000000u;
    void *f = frame_of(&b, &len);
    expect(f, len, RPC_INVALID_ARGUMENT, "rank 4000000000");
    free(f);
}

/* n names n0..n(n-1) of job in one batch from agent, starting at first. */
static void *names_frame(const char *agent, uint64_t seq, size_t first, size_t n, size_t *len)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    Argus__V1__NameEntry *e = calloc(n, sizeof(*e)), **ep = calloc(n, sizeof(*ep));
    char *text = calloc(n, 16);

    for (size_t i = 0; i < n; i++) {
        argus__v1__name_entry__init(&e[i]);
        snprintf(text + i * 16, 16, "n%zu", first + i);
        e[i].job = "names";
        e[i].name = text + i * 16;
        e[i].id = name_id(e[i].name);
        ep[i] = &e[i];
    }
    b.agent_id = (char *)agent;
    b.epoch = 1;
    b.seq = seq;
    b.n_names = n;
    b.names = ep;
    void *f = frame_of(&b, len);
    free(e);
    free(ep);
    free(text);
    return f;
}

static void test_million_names(void **state)
{
    size_t len;
    char msg[256];
    void *f = names_frame("names", 1, 0, 100000, &len);

    expect(f, len, RPC_RESOURCE_EXHAUSTED, "carries 100000 names; limit 65536");
    free(f);
    /* 10^6 names over 20 batches are accepted; the next new name is not */
    for (uint64_t k = 0; k < 20; k++) {
        f = names_frame("names", k + 2, (size_t)k * 50000, 50000, &len);
        assert_int_equal(send_one(f, len, msg, sizeof(msg)), RPC_OK);
        free(f);
    }
    f = names_frame("names", 30, 1000000, 1, &len);
    expect(f, len, RPC_RESOURCE_EXHAUSTED, "already has 1000000 names");
    free(f);
}

static void test_validate_pure(void **state)
{
    struct ingest_limits l;
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    Argus__V1__NameEntry e = ARGUS__V1__NAME_ENTRY__INIT, *ep = &e;
    char err[256];

    ingest_default_limits(&l);
    good_batch(&b, &s, &sp);
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_OK);
    b.agent_id = "has space";
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    b.agent_id = "good";
    b.seq = 0;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "epoch and seq must be > 0"));
    b.seq = 5;
    e.job = "hostile";
    e.name = "gemm";
    e.id = 42; /* not the FNV-1a of "gemm" */
    b.n_names = 1;
    b.names = &ep;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "is not FNV-1a 64"));
    e.id = name_id("gemm");
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_OK);
    s.job = "";
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
}

/* Rank statuses: each bad field refused with a sentence that names it. */
static void test_validate_statuses(void **state)
{
    struct ingest_limits l;
    Argus__V1__Batch b;
    Argus__V1__StepRecord s, *sp;
    Argus__V1__RankStatus st = ARGUS__V1__RANK_STATUS__INIT, *stp = &st;
    Argus__V1__CommProgress c = ARGUS__V1__COMM_PROGRESS__INIT;
    Argus__V1__CommProgress *comms[65];
    uint64_t stack[65] = {0};
    char err[256], wait[200];

    (void)state;
    ingest_default_limits(&l);
    good_batch(&b, &s, &sp);
    st.job = "j";
    st.rank = 2;
    st.wait = "read";
    for (int i = 0; i < 65; i++)
        comms[i] = &c;
    c.entered_seq = 10;
    c.entered_unix_ns = 5;
    c.done_seq = 9;
    c.done_unix_ns = 4;
    st.n_comms = 1;
    st.comms = comms;
    b.n_statuses = 1;
    b.statuses = &stp;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_OK);
    st.job = "bad job";
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "rank status has an invalid job id"));
    st.job = "j";
    memset(wait, 'x', sizeof(wait) - 1);
    wait[sizeof(wait) - 1] = 0;
    st.wait = wait;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "rank status of rank 2 (job j): wait of 199 bytes; limit 128"));
    st.wait = "";
    st.n_comms = 65;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "has 65 communicators; limit 64"));
    st.n_comms = 64;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_OK);
    st.n_stack = 65;
    st.stack = stack;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "a stack of 65 frames; limit 64"));
    st.n_stack = 64;
    st.state = (Argus__V1__ProcState)9;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "unknown process state 9"));
    st.state = ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED;
    c.done_seq = 11;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "finished #11 but entered only #10"));
    c.done_seq = 9;
    b.n_statuses = l.max_statuses_per_batch + 1;
    assert_int_equal(ingest_validate(&b, &l, err, sizeof(err)), TRANSPORT_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(err, "batch carries 4097 rank statuses; limit 4096"));
}

/* The record of step s as the store holds it (the first one scanned). */
static int first_record(void *ctx, const void *value, size_t len)
{
    Argus__V1__StepRecord **r = ctx;

    if (!*r)
        *r = argus__v1__step_record__unpack(NULL, len, value);
    return 0;
}

/* A record shipped with its kernels coded is stored with them expanded: the
 * same groups and clusters; malformed coded bytes are refused. */
static void test_coded_kernels_stored_expanded(void **state)
{
    Argus__V1__Cluster c[2] = {ARGUS__V1__CLUSTER__INIT, ARGUS__V1__CLUSTER__INIT};
    Argus__V1__Cluster *cp[2] = {&c[0], &c[1]};
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT, *gp = &g;
    Argus__V1__StepRecord s, *sp, coded, *back = NULL;
    Argus__V1__Batch b;
    struct kernel_code_buf buf = {0};
    uint8_t junk[] = {0x12, 1, 2};
    char msg[256];
    size_t len;
    void *f;

    good_batch(&b, &s, &sp);
    s.job = "coded";
    g.name_id = 0x1234567890abcdefULL;
    g.stream = 7;
    g.work_id = 99;
    g.n_clusters = 2;
    g.clusters = cp;
    c[0] = (Argus__V1__Cluster){
        .base = c[0].base, .count = 40, .sum_ns = 41984, .p50_ns = 1024, .p99_ns = 1152};
    c[1] = (Argus__V1__Cluster){
        .base = c[1].base, .count = 3, .sum_ns = 12288, .p50_ns = 4096, .p99_ns = 4352};
    s.n_kernels = 1;
    s.kernels = &gp;
    assert_int_equal(kernel_code_compact(&buf, &s, NULL, &coded), 0);
    assert_true(coded.packed_kernels.len > 0);
    sp = &coded;
    f = frame_of(&b, &len);
    assert_int_equal(send_one(f, len, msg, sizeof(msg)), RPC_OK);
    free(f);
    assert_int_equal(store_scan_steps(store, "coded", 1, 0, 0, first_record, &back), 0);
    assert_non_null(back);
    assert_int_equal(back->packed_kernels.len, 0);
    assert_int_equal(back->n_kernels, 1);
    assert_int_equal(back->kernels[0]->name_id, g.name_id);
    assert_int_equal(back->kernels[0]->stream, 7);
    assert_int_equal(back->kernels[0]->work_id, 99);
    assert_int_equal(back->kernels[0]->n_clusters, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(back->kernels[0]->clusters[i]->count, c[i].count);
        assert_int_equal(back->kernels[0]->clusters[i]->sum_ns, c[i].sum_ns);
        assert_int_equal(back->kernels[0]->clusters[i]->p50_ns, c[i].p50_ns);
        assert_int_equal(back->kernels[0]->clusters[i]->p99_ns, c[i].p99_ns);
    }
    argus__v1__step_record__free_unpacked(back, NULL);
    good_batch(&b, &s, &sp);
    s.packed_kernels.data = junk;
    s.packed_kernels.len = sizeof(junk);
    f = frame_of(&b, &len);
    expect(f, len, RPC_INVALID_ARGUMENT, "malformed or oversized StepRecord.packed_kernels");
    free(f);
    kernel_code_buf_free(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_pure),
        cmocka_unit_test(test_validate_statuses),
        cmocka_unit_test(test_good_batch_acked_and_replay_deduplicated),
        cmocka_unit_test(test_oversize_frame),
        cmocka_unit_test(test_lying_raw_len),
        cmocka_unit_test(test_truncated_and_random_payloads),
        cmocka_unit_test(test_unknown_codec),
        cmocka_unit_test(test_absurd_rank),
        cmocka_unit_test(test_million_names),
        cmocka_unit_test(test_coded_kernels_stored_expanded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
