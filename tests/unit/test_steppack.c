/* agent/delivery/steppack: byte for byte what protobuf-c writes, on random records
 * with every field present or absent, and on records with unknown fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/delivery/steppack.h"
#include "tests/lib/rng.h"

/* A value that is 0 a third of the time, else of 1 to 64 significant bits. */
static uint64_t value(uint64_t *rng)
{
    uint64_t r = rng_next(rng);

    if (r % 3 == 0)
        return 0;
    return rng_next(rng) >> (rng_next(rng) % 64);
}

struct arena {
    char *p;
    size_t used, cap;
};

static void *take(struct arena *a, size_t n)
{
    void *p;

    n = (n + 15) & ~(size_t)15;
    assert_true(a->used + n <= a->cap);
    p = a->p + a->used;
    a->used += n;
    memset(p, 0, n);
    return p;
}

static void random_kernels(uint64_t *rng, struct arena *a, Argus__V1__StepRecord *s)
{
    s->n_kernels = rng_next(rng) % 60;
    s->kernels = take(a, s->n_kernels * sizeof(void *));
    for (size_t i = 0; i < s->n_kernels; i++) {
        Argus__V1__KernelGroup *g = take(a, sizeof(*g));

        argus__v1__kernel_group__init(g);
        g->name_id = value(rng);
        g->stream = (uint32_t)value(rng);
        g->n_clusters = rng_next(rng) % 5;
        g->clusters = take(a, g->n_clusters * sizeof(void *));
        for (size_t k = 0; k < g->n_clusters; k++) {
            Argus__V1__Cluster *c = take(a, sizeof(*c));

            argus__v1__cluster__init(c);
            c->count = (uint32_t)value(rng);
            c->sum_ns = value(rng);
            c->p50_ns = value(rng);
            c->p99_ns = value(rng);
            c->min_ns = value(rng);
            c->max_ns = value(rng);
            g->clusters[k] = c;
        }
        s->kernels[i] = g;
    }
}

static void random_rest(uint64_t *rng, struct arena *a, Argus__V1__StepRecord *s)
{
    static char *jobs[] = {NULL, "", "job-7", "a-much-longer-job-name-from-slurm-1234567"};

    s->job = jobs[rng_next(rng) % 4];
    s->rank = (uint32_t)value(rng);
    s->step = value(rng);
    s->start_unix_ns = value(rng);
    s->duration_ns = value(rng);
    s->n_phases = rng_next(rng) % 3;
    s->phases = take(a, s->n_phases * sizeof(void *));
    for (size_t i = 0; i < s->n_phases; i++) {
        Argus__V1__Phase *p = take(a, sizeof(*p));

        argus__v1__phase__init(p);
        p->name_id = value(rng);
        p->duration_ns = value(rng);
        s->phases[i] = p;
    }
    if (rng_next(rng) % 2) {
        s->host = take(a, sizeof(*s->host));
        argus__v1__host_counters__init(s->host);
        s->host->off_cpu_ns = value(rng);
        s->host->sync_wait_ns = value(rng);
    }
    s->n_collectives = rng_next(rng) % 3;
    s->collectives = take(a, s->n_collectives * sizeof(void *));
    for (size_t i = 0; i < s->n_collectives; i++) {
        Argus__V1__Collective *c = take(a, sizeof(*c));

        argus__v1__collective__init(c);
        c->seq = value(rng);
        c->name_id = value(rng);
        c->bytes = value(rng);
        s->collectives[i] = c;
    }
    s->sampled = rng_next(rng) % 2;
    s->source = (Argus__V1__StepSource)(rng_next(rng) % 5);
    s->kernel_events = value(rng);
    s->n_top_frames = rng_next(rng) % 3;
    s->top_frames = take(a, s->n_top_frames * sizeof(void *));
    for (size_t i = 0; i < s->n_top_frames; i++) {
        Argus__V1__StackFrame *f = take(a, sizeof(*f));

        argus__v1__stack_frame__init(f);
        f->name_id = value(rng);
        f->self = (uint32_t)value(rng);
        s->top_frames[i] = f;
    }
}

static void assert_same_bytes(const Argus__V1__StepRecord *s)
{
    size_t n = argus__v1__step_record__get_packed_size(s);
    uint8_t *want = malloc(n + 1), *got = malloc(n + 16);

    assert_int_equal(steppack_size(s), n);
    assert_int_equal(argus__v1__step_record__pack(s, want), n);
    assert_int_equal(steppack_pack(s, got), n);
    assert_memory_equal(got, want, n);
    free(want);
    free(got);
}

static void test_random_records(void **state)
{
    struct arena a = {.cap = 1 << 20};
    uint64_t rng = 42;

    a.p = malloc(a.cap);
    for (int i = 0; i < 2000; i++) {
        Argus__V1__StepRecord s;

        a.used = 0;
        argus__v1__step_record__init(&s);
        random_rest(&rng, &a, &s);
        random_kernels(&rng, &a, &s);
        assert_same_bytes(&s);
    }
    free(a.p);
}

/* Unknown fields (a newer sender's record replayed) in a cluster, a group
 * or the record itself: still the same bytes. */
static void test_unknown_fields(void **state)
{
    /* rank=5; KernelGroup{name_id=1, Cluster{count=3, field 15=7}, field 9=2};
     * KernelGroup{stream=2, Cluster{}}; field 100=9 */
    static const uint8_t in[] = {0x10, 0x05, 0x3a, 0x11, 0x09, 0x01, 0,    0,    0,    0,
                                 0,    0,    0,    0x1a, 0x04, 0x08, 0x03, 0x78, 0x07, 0x48,
                                 0x02, 0x3a, 0x04, 0x10, 0x02, 0x1a, 0x00, 0xa0, 0x06, 0x09};
    Argus__V1__StepRecord *s = argus__v1__step_record__unpack(NULL, sizeof(in), in);

    assert_non_null(s);
    assert_int_equal(s->n_kernels, 2);
    assert_int_equal(s->kernels[0]->clusters[0]->base.n_unknown_fields, 1);
    assert_int_equal(s->kernels[0]->base.n_unknown_fields, 1);
    assert_int_equal(s->base.n_unknown_fields, 1);
    assert_same_bytes(s);
    s->kernels[0]->clusters[0]->base.n_unknown_fields = 0; /* the group's remains */
    assert_same_bytes(s);
    s->kernels[0]->base.n_unknown_fields = 0; /* only the record's: by hand */
    assert_same_bytes(s);
    s->kernels[0]->clusters[0]->base.n_unknown_fields = 1; /* freed with the record */
    s->kernels[0]->base.n_unknown_fields = 1;
    argus__v1__step_record__free_unpacked(s, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_records),
        cmocka_unit_test(test_unknown_fields),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
