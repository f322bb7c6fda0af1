/* Who may write what, over real gRPC to an in-process collector (transport +
 * ingest + RocksDB store in a temp dir), once with mTLS (a test PKI made by
 * deploy/pki/make-pki.sh; skipped without openssl) and once in plaintext:
 * - mTLS: a batch must name its certificate's node as agent id and resource
 *   node (PERMISSION_DENIED naming both), a query certificate cannot push,
 *   and another node's certificate cannot move a victim's high-water mark:
 *   the victim's later batches are stored;
 * - plaintext: a spoofed seq = 2^64-1 under the victim's id and epoch is
 *   refused (FAILED_PRECONDITION), the victim's later batches are stored;
 *   another agent id writing the victim's rank is refused (PERMISSION_DENIED,
 *   rank ownership), its own rank is stored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/ingest/ingest.h"
#include "collector/store/store.h"
#include "collector/transport/transport.h"
#include "common/frame.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "common/tls.h"

struct side {
    struct store *store;
    struct ingest *ingest;
    struct transport_server *server;
    char target[64];
};

static char dir[64], pki[96];
static struct side tls_side, plain_side;
static char files[3][128];
static bool have_pki;
static uint32_t push_rank; /* the rank push() writes */

static void side_start(struct side *sd, const char *name, const struct tls_files *tls)
{
    struct store_options so = {0};
    struct ingest_limits l;
    struct transport_options to = {.listen = "127.0.0.1:0", .workers = 1, .max_message = 1 << 20};
    char err[256], sub[128];

    snprintf(sub, sizeof(sub), "%s/%s", dir, name);
    so.dir = sub;
    assert_int_equal(store_open(&so, &sd->store, err, sizeof(err)), 0);
    ingest_default_limits(&l);
    l.max_seq_jump = 1000;
    sd->ingest = ingest_new(sd->store, &l, NULL, NULL);
    if (tls)
        to.tls = *tls;
    sd->server = transport_new(&to);
    transport_add_stream(sd->server, RPC_INGEST_PUSH, &ingest_stream_ops, sd->ingest);
    int port = transport_start(sd->server);
    assert_true(port > 0);
    snprintf(sd->target, sizeof(sd->target), "127.0.0.1:%d", port);
}

static void side_stop(struct side *sd)
{
    transport_free(sd->server);
    ingest_free(sd->ingest);
    if (sd->store)
        store_close(sd->store);
}

static int setup(void **state)
{
    char cmd[512];

    strcpy(dir, "/tmp/argus-test-identity-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(pki, sizeof(pki), "%s/pki", dir);
    snprintf(cmd, sizeof(cmd),
             "command -v openssl >/dev/null && deploy/pki/make-pki.sh %s --collector col "
             "--agent node-a --agent node-b --query ops >/dev/null",
             pki);
    have_pki = system(cmd) == 0;
    if (have_pki) {
        snprintf(files[0], sizeof(files[0]), "%s/ca.crt", pki);
        snprintf(files[1], sizeof(files[1]), "%s/collector.crt", pki);
        snprintf(files[2], sizeof(files[2]), "%s/collector.key", pki);
        side_start(&tls_side, "tls", &(struct tls_files){files[0], files[1], files[2]});
    }
    side_start(&plain_side, "plain", NULL);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    side_stop(&tls_side);
    side_stop(&plain_side);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* A channel to sd as cert (a name in the PKI; NULL: plaintext). */
static struct rpc_channel *channel(struct side *sd, const char *cert)
{
    char ca[128], crt[128], key[128], err[256];
    struct tls_pem pem;
    struct rpc_channel_options o = {0};
    struct rpc_channel *ch;

    if (cert) {
        snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
        snprintf(crt, sizeof(crt), "%s/%s.crt", pki, cert);
        snprintf(key, sizeof(key), "%s/%s.key", pki, cert);
        assert_int_equal(tls_pem_load(&(struct tls_files){ca, crt, key}, &pem, err, sizeof(err)),
                         0);
        o.tls = &pem;
    }
    ch = rpc_channel_new(sd->target, &o);
    if (cert)
        tls_pem_free(&pem);
    assert_non_null(ch);
    return ch;
}

/* Send one batch of agent/epoch/seq (with a resource of node when not NULL)
 * on a fresh stream; return RPC_OK on an ack, else the closing status. */
static int push(struct rpc_channel *ch, const char *agent, uint64_t seq, const char *node,
                char *msg, size_t msglen)
{
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT, *sp = &s;
    Argus__V1__Resource r = ARGUS__V1__RESOURCE__INIT, *rp = &r;
    struct rpc_stream_event ev;
    size_t n, len;
    uint8_t raw[512];
    void *frame;
    int status = -1;

    s.job = "ident";
    s.rank = push_rank;
    s.step = seq % 1000000;
    s.duration_ns = 1000;
    b.agent_id = (char *)agent;
    b.epoch = 7;
    b.seq = seq;
    b.n_steps = 1;
    b.steps = &sp;
    if (node) {
        r.job = "ident";
        r.node = (char *)node;
        r.rank = push_rank;
        r.world_size = push_rank + 1;
        b.n_resources = 1;
        b.resources = &rp;
    }
    n = argus__v1__batch__pack(&b, raw);
    assert_int_equal(frame_encode(raw, n, FRAME_CODEC_LZ4, &frame, &len), 0);
    /* no wait for ready: a failed handshake ends the stream at once */
    struct rpc_stream *st = rpc_stream_open(ch, RPC_INGEST_PUSH, false);
    assert_int_equal(rpc_stream_send(st, frame, len), 0);
    msg[0] = '\0';
    for (int i = 0; i < 300 && status < 0; i++) {
        rpc_stream_poll(st, 100, &ev);
        if (ev.kind == RPC_STREAM_MESSAGE)
            status = RPC_OK;
        else if (ev.kind == RPC_STREAM_CLOSED) {
            status = ev.status;
            snprintf(msg, msglen, "%s", ev.message);
        }
    }
    rpc_stream_free(st);
    free(frame);
    return status;
}

static void expect_push(struct rpc_channel *ch, const char *agent, uint64_t seq, const char *node,
                        int status, const char *needle)
{
    char msg[256];
    int got = push(ch, agent, seq, node, msg, sizeof(msg));

    if (got != status)
        fail_msg("push %s seq %llu: status %d (%s), want %d", agent, (unsigned long long)seq, got,
                 msg, status);
    if (needle && !strstr(msg, needle))
        fail_msg("status message '%s' lacks '%s'", msg, needle);
}

static uint64_t stored(struct side *sd)
{
    struct ingest_stats st;

    ingest_get_stats(sd->ingest, &st);
    return st.batches;
}

static void test_tls_spoof_of_another_node(void **state)
{
    if (!have_pki)
        skip();
    struct rpc_channel *a = channel(&tls_side, "agent-node-a");
    struct rpc_channel *b = channel(&tls_side, "agent-node-b");
    uint64_t before = stored(&tls_side);

    expect_push(a, "node-a", 1, "node-a", RPC_OK, NULL);
    expect_push(b, "node-a", UINT64_MAX, NULL, RPC_PERMISSION_DENIED,
                "the certificate of 'node-b' may not write batches of agent 'node-a'");
    expect_push(b, "node-b", 1, "node-a", RPC_PERMISSION_DENIED,
                "may not write resources of node 'node-a'");
    /* the victim's later batches are stored, not taken for duplicates */
    expect_push(a, "node-a", 2, NULL, RPC_OK, NULL);
    expect_push(a, "node-a", 3, "node-a", RPC_OK, NULL);
    assert_int_equal(stored(&tls_side) - before, 3);
    rpc_channel_free(a);
    rpc_channel_free(b);
}

static void test_tls_query_cert_cannot_push(void **state)
{
    if (!have_pki)
        skip();
    struct rpc_channel *q = channel(&tls_side, "query-ops");

    expect_push(q, "ops", 1, NULL, RPC_PERMISSION_DENIED, "certificate 'ops' (roles: query)");
    rpc_channel_free(q);
}

static void test_tls_plaintext_client_refused(void **state)
{
    if (!have_pki)
        skip();
    struct rpc_channel *p = channel(&tls_side, NULL);
    char msg[256];

    assert_int_equal(push(p, "node-a", 10, NULL, msg, sizeof(msg)), RPC_UNAVAILABLE);
    rpc_channel_free(p);
}

static void test_plaintext_seq_jump_refused(void **state)
{
    struct rpc_channel *p = channel(&plain_side, NULL);
    uint64_t before = stored(&plain_side);

    expect_push(p, "victim", 1, NULL, RPC_OK, NULL);
    expect_push(p, "victim", 2, NULL, RPC_OK, NULL);
    expect_push(p, "victim", UINT64_MAX, NULL, RPC_FAILED_PRECONDITION,
                "above the last stored seq 2 (ingest.max_seq_jump)");
    expect_push(p, "victim", 2 + 1001, NULL, RPC_FAILED_PRECONDITION, "max_seq_jump");
    expect_push(p, "victim", 3, NULL, RPC_OK, NULL);
    expect_push(p, "victim", 3 + 1000, NULL, RPC_OK, NULL); /* a gap within the bound */
    /* the victim's rank is the victim's, whatever the seq */
    expect_push(p, "newcomer", 1u << 30, NULL, RPC_PERMISSION_DENIED,
                "rank 0 of job ident belongs to 'victim'");
    push_rank = 1;
    expect_push(p, "newcomer", 1u << 30, NULL, RPC_OK, NULL); /* no mark yet: any seq */
    push_rank = 0;
    assert_int_equal(stored(&plain_side) - before, 5);
    rpc_channel_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_spoof_of_another_node),
        cmocka_unit_test(test_tls_query_cert_cannot_push),
        cmocka_unit_test(test_tls_plaintext_client_refused),
        cmocka_unit_test(test_plaintext_seq_jump_refused),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
