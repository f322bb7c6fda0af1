/* common/cluster_code: the format pinned on one hand-coded group; random
 * clusters of 1 to 64 significant bits coded and decoded back to the same
 * values; malformed bytes refused. (The whole record's path, agent to
 * collector, is tests/unit/test_kernel_code.c.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cluster_code.h"
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
    static const uint8_t want[] = {0x03, 0xfa, 0x04, 0x06, 0x02}; /* under header 0x19 */
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cp = &c, **back;
    const uint8_t *p = want;
    uint8_t out[64];

    (void)state;
    c.count = 3;
    c.p50_ns = 1000;
    c.p99_ns = 1024;
    c.sum_ns = 3008;
    assert_int_equal(cluster_code_header(&cp, 1), 0x19);
    assert_int_equal(cluster_code_encode(&cp, 1, 0x19, out), sizeof(want));
    assert_memory_equal(out, want, sizeof(want));
    assert_int_equal(cluster_code_decode(&p, want + sizeof(want), 0x19, 1, NULL, &back), 0);
    assert_ptr_equal(p, want + sizeof(want));
    clusters_equal(&cp, back, 1);
    clusters_free(back, 1);
}

/* Random clusters whose values need up to `bits` significant bits. */
static void random_round_trip(uint64_t *rng, unsigned bits)
{
    Argus__V1__Cluster c[MAX_CLUSTERS], *cp[MAX_CLUSTERS], **back;
    size_t n = 1 + rng_next(rng) % MAX_CLUSTERS, len;
    uint8_t out[1024];
    const uint8_t *p = out;
    unsigned h;

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
    h = cluster_code_header(cp, n);
    assert_true(h <= CLUSTER_CODE_HEADER_MAX);
    len = cluster_code_encode(cp, n, h, out);
    assert_true(len > 0 && len <= cluster_code_bound(n));
    assert_int_equal(cluster_code_skip(&p, out + len, h, n), 0);
    assert_ptr_equal(p, out + len);
    p = out;
    assert_int_equal(cluster_code_decode(&p, out + len, h, n, NULL, &back), 0);
    assert_ptr_equal(p, out + len);
    clusters_equal(cp, back, n);
    clusters_free(back, n);
}

static void test_random_round_trip(void **state)
{
    uint64_t rng = 7;

    (void)state;
    for (int i = 0; i < 20000; i++)
        random_round_trip(&rng, 1 + (unsigned)(rng_next(&rng) % 64));
}

/* Truncated at every byte, a header past 8 bits, a value past 64 bits. */
static void test_malformed(void **state)
{
    static const uint8_t good[] = {0x03, 0xfa, 0x04, 0x06, 0x02}; /* header 0x19 */
    static const uint8_t too_far[] = {0x01, 0x82, 0x01, 0x00};    /* B 1, code 65: 2^64 */
    static const uint8_t two[] = {0x01, 0x02, 0x00, 0x01, 0x00, 0x00};
    Argus__V1__Cluster **c;
    const uint8_t *p;

    (void)state;
    for (size_t len = 0; len < sizeof(good); len++) {
        p = good;
        assert_int_equal(cluster_code_skip(&p, good + len, 0x19, 1), -EBADMSG);
        assert_int_equal(cluster_code_decode(&p, good + len, 0x19, 1, NULL, &c), -EBADMSG);
        assert_ptr_equal(p, good); /* not moved */
    }
    assert_int_equal(cluster_code_skip(&p, good + sizeof(good), 256, 1), -EBADMSG);
    assert_int_equal(cluster_code_decode(&p, good + sizeof(good), 256, 1, NULL, &c), -EBADMSG);
    p = too_far;
    assert_int_equal(cluster_code_decode(&p, too_far + sizeof(too_far), 0, 1, NULL, &c), -EBADMSG);
    p = two;
    assert_int_equal(cluster_code_decode(&p, two + sizeof(two), 0, 3, NULL, &c), -EBADMSG);
    assert_int_equal(cluster_code_decode(&p, two + sizeof(two), 0, 2, NULL, &c), 0);
    assert_int_equal(c[1]->p50_ns, 1); /* coded against the first one's p99 (1): +0 */
    clusters_free(c, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_bytes),
        cmocka_unit_test(test_random_round_trip),
        cmocka_unit_test(test_malformed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
