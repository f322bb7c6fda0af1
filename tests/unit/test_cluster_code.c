/* common/cluster_code: the format pinned on one hand-coded group; random
 * clusters of 1 to 64 significant bits coded and decoded back to the same
 * values (or declined past 32 bits); the summarizer's records shipped the
 * way the agent ships them (batcher copy, hand encoder) and expanded the way
 * the collector expands them (protobuf-c unpack, cluster_code_expand_batch)
 * come back with the same clusters, in fewer bytes; malformed bytes, too
 * many clusters and a group with both forms are refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/summarize.h"
#include "common/cluster_code.h"
#include "common/wire_steps.h"
#include "tests/lib/rng.h"

#define MAX_CLUSTERS 16

/* A value of 1 to bits significant bits at a random position, or 0. */
static uint64_t value(uint64_t *rng, unsigned bits)
{
    uint64_t m = rng_next(rng) >> (64 - bits);
    unsigned len = 64 - (unsigned)__builtin_clzll(m | 1);

    if (rng_next(rng) % 8 == 0)
        return 0;
    return m << (rng_next(rng) % (65 - len));
}

static void clusters_equal(Argus__V1__Cluster *const *a, Argus__V1__Cluster *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i]->count, b[i]->count);
        assert_int_equal(a[i]->sum_ns, b[i]->sum_ns);
        assert_int_equal(a[i]->p50_ns, b[i]->p50_ns);
        assert_int_equal(a[i]->p99_ns, b[i]->p99_ns);
        assert_int_equal(a[i]->min_ns, b[i]->min_ns);
        assert_int_equal(a[i]->max_ns, b[i]->max_ns);
    }
}

static void clusters_free(Argus__V1__Cluster **c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i]);
    free(c);
}

/* count 3, p50 1000, p99 1024, sum 3008: 7 significant bits, sum sent. */
static void test_pinned_bytes(void **state)
{
    static const uint8_t want[] = {0x26, 0x03, 0xfa, 0x04, 0x06, 0x02};
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cp = &c, **back;
    uint8_t out[64];
    size_t n;

    (void)state;
    c.count = 3;
    c.p50_ns = 1000;
    c.p99_ns = 1024;
    c.sum_ns = 3008;
    assert_int_equal(cluster_code_encode(&cp, 1, out), sizeof(want));
    assert_memory_equal(out, want, sizeof(want));
    assert_int_equal(cluster_code_decode(want, sizeof(want), 8, NULL, &back, &n), 0);
    assert_int_equal(n, 1);
    clusters_equal(&cp, back, 1);
    clusters_free(back, n);
}

/* Random clusters whose values need up to `bits` significant bits. */
static void random_round_trip(uint64_t *rng, unsigned bits)
{
    Argus__V1__Cluster c[MAX_CLUSTERS], *cp[MAX_CLUSTERS], **back;
    size_t n = 1 + rng_next(rng) % MAX_CLUSTERS, k, len;
    uint8_t out[1024];

    for (size_t i = 0; i < n; i++) {
        argus__v1__cluster__init(&c[i]);
        c[i].count = (uint32_t)rng_next(rng) >> (rng_next(rng) % 32);
        c[i].p50_ns = value(rng, bits);
        c[i].p99_ns = value(rng, bits);
        c[i].sum_ns = rng_next(rng) % 3 ? value(rng, bits) : 0;
        c[i].min_ns = rng_next(rng) % 3 ? 0 : value(rng, bits);
        c[i].max_ns = rng_next(rng) % 3 ? 0 : value(rng, bits);
        cp[i] = &c[i];
    }
    assert_true(cluster_code_bound(n) <= sizeof(out));
    len = cluster_code_encode(cp, n, out);
    if (len == 0) { /* declined: only when some value needs more bits than coded */
        assert_true(bits > CLUSTER_CODE_MAX_BITS);
        return;
    }
    assert_true(len <= cluster_code_bound(n));
    assert_int_equal(cluster_code_decode(out, len, MAX_CLUSTERS, NULL, &back, &k), 0);
    assert_int_equal(k, n);
    clusters_equal(cp, back, n);
    clusters_free(back, k);
}

static void test_random_round_trip(void **state)
{
    uint64_t rng = 7;

    (void)state;
    for (int i = 0; i < 20000; i++)
        random_round_trip(&rng, 1 + (unsigned)(rng_next(&rng) % 64));
}

/* A record of rank 3 as the summarizer makes it: groups of 1-3 modes. */
static void summarized(Argus__V1__StepRecord *r, const struct summarize_options *o)
{
    struct summarizer *s = summarizer_new(o);
    uint64_t rng = 2606;

    assert_non_null(s);
    for (uint64_t g = 0; g < 60; g++)
        for (int i = 0; i < 400; i++) {
            double mode = 3000.0 * (double)(g + 1) * (1 + (double)(i % (1 + g % 3)) * 2.5);

            summarizer_add(s, 0x9e3779b97f4a7c15ULL * (g + 1), (uint32_t)(g % 2),
                           (uint64_t)(mode * (1 + 0.05 * rng_normal(&rng))));
        }
    argus__v1__step_record__init(r);
    r->job = "job-7";
    r->rank = 3;
    r->step = 41;
    assert_int_equal(summarizer_finish(s, r), 0);
    summarizer_free(s);
}

/* The agent's path (compact copy, hand encoder), then the collector's
 * (protobuf-c unpack of the batch, expansion): the same clusters. */
static void ship_and_expand(const struct summarize_options *o)
{
    Argus__V1__StepRecord r, copy;
    Argus__V1__Batch *b;
    struct cluster_code_buf buf = {0};
    uint8_t *wire;
    size_t n, plain;

    summarized(&r, o);
    plain = wire_steps_record_size(&r);
    assert_int_equal(cluster_code_compact(&buf, &r, &copy), 0);
    n = wire_steps_record_size(&copy);
    assert_true(n * 5 < plain * 4); /* a fifth smaller at least (default: 43%) */
    wire = malloc(n + WIRE_STEPS_ENTRY_OVERHEAD);
    assert_non_null(wire);
    n = wire_steps_entry_put(wire, &copy, n);
    b = argus__v1__batch__unpack(NULL, n, wire);
    assert_non_null(b);
    assert_int_equal(b->n_steps, 1);
    assert_int_equal(cluster_code_expand_batch(b, 64, NULL), (long)r.n_kernels);
    assert_int_equal(b->steps[0]->n_kernels, r.n_kernels);
    for (size_t i = 0; i < r.n_kernels; i++) {
        assert_int_equal(b->steps[0]->kernels[i]->name_id, r.kernels[i]->name_id);
        assert_int_equal(b->steps[0]->kernels[i]->packed_clusters.len, 0);
        assert_int_equal(b->steps[0]->kernels[i]->n_clusters, r.kernels[i]->n_clusters);
        clusters_equal(b->steps[0]->kernels[i]->clusters, r.kernels[i]->clusters,
                       r.kernels[i]->n_clusters);
    }
    argus__v1__batch__free_unpacked(b, NULL); /* the expanded clusters too */
    free(wire);
    cluster_code_buf_free(&buf);
    summarizer_free_groups(&r);
}

static void test_summarizer_round_trip(void **state)
{
    struct summarize_options o;

    (void)state;
    summarize_options_default(&o);
    ship_and_expand(&o);
    o.fields = SUMMARIZE_FIELDS_ALL; /* min/max too */
    ship_and_expand(&o);
    o.quantize_bits = 0; /* exact ns: under 32 significant bits, still coded */
    ship_and_expand(&o);
}

/* A value of 40 significant bits: left as Cluster messages, same bytes. */
static void test_declined(void **state)
{
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cp = &c;
    uint8_t out[64];

    (void)state;
    c.count = 1;
    c.p50_ns = (1ULL << 39) + 1;
    c.p99_ns = c.p50_ns;
    assert_int_equal(cluster_code_encode(&cp, 1, out), 0);
    assert_int_equal(cluster_code_encode(&cp, 0, out), 0);
}

static void test_malformed(void **state)
{
    static const uint8_t good[] = {0x26, 0x03, 0xfa, 0x04, 0x06, 0x02};
    static const uint8_t header[] = {0x80, 0x01, 0x03, 0x00, 0x00};
    static const uint8_t too_far[] = {0x00, 0x01, 0x82, 0x01, 0x00}; /* B 1, code 65: 2^64 */
    static const uint8_t two[] = {0x00, 0x01, 0x02, 0x00, 0x01, 0x00, 0x00};
    Argus__V1__Cluster **c;
    size_t n;

    (void)state;
    for (size_t len = 2; len < sizeof(good); len++) /* a header alone: no clusters */
        assert_int_equal(cluster_code_decode(good, len, 8, NULL, &c, &n), -EBADMSG);
    assert_int_equal(cluster_code_decode(header, sizeof(header), 8, NULL, &c, &n), -EBADMSG);
    assert_int_equal(cluster_code_decode(too_far, sizeof(too_far), 8, NULL, &c, &n), -EBADMSG);
    assert_int_equal(cluster_code_decode(two, sizeof(two), 1, NULL, &c, &n), -EMSGSIZE);
    assert_int_equal(cluster_code_decode(two, sizeof(two), 2, NULL, &c, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(c[1]->p50_ns, 1); /* coded against the first one's p99 (1): +0 */
    clusters_free(c, n);
}

/* A group with clusters in both forms is malformed: refused, not merged. */
static void test_both_forms(void **state)
{
    static uint8_t good[] = {0x26, 0x03, 0xfa, 0x04, 0x06, 0x02};
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cp = &c;
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT, *gp = &g;
    Argus__V1__StepRecord r = ARGUS__V1__STEP_RECORD__INIT, *rp = &r;
    Argus__V1__Batch b = ARGUS__V1__BATCH__INIT;

    (void)state;
    g.n_clusters = 1;
    g.clusters = &cp;
    g.packed_clusters.data = good;
    g.packed_clusters.len = sizeof(good);
    r.n_kernels = 1;
    r.kernels = &gp;
    b.n_steps = 1;
    b.steps = &rp;
    assert_int_equal(cluster_code_expand_batch(&b, 8, NULL), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_bytes),
        cmocka_unit_test(test_random_round_trip),
        cmocka_unit_test(test_summarizer_round_trip),
        cmocka_unit_test(test_declined),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_both_forms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
