/* common/wire_steps: the field numbers against the protobuf-c descriptors;
 * the encoder byte for byte against protobuf-c, on random records with every
 * field present or absent and on records with unknown fields; the decoder on
 * batches that protobuf-c packs and on batches the encoder builds, and on
 * truncated and malformed ones. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/varint.h"
#include "common/wire_steps.h"
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
        g->work_id = (uint32_t)value(rng); /* 0 too: then not sent */
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
        c->host_arrival_unix_ns = value(rng);
        c->gpu_start_unix_ns = value(rng);
        c->gpu_end_unix_ns = value(rng);
        c->stream = (uint32_t)value(rng);
        c->comm_id = value(rng);
        c->host_return_unix_ns = value(rng);
        c->seq_local = rng_next(rng) % 2;
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

    assert_int_equal(wire_steps_record_size(s), n);
    assert_int_equal(argus__v1__step_record__pack(s, want), n);
    assert_int_equal(wire_steps_record_pack(s, got), n);
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
/* A collective's host end, shared communicator id and seq_local, packed by
 * the agent's encoder, come back from protobuf-c's decoder (the
 * collector's) as they were. */
static void test_collective_round_trip(void **state)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT, *back;
    Argus__V1__Collective c[2], *cp[2] = {&c[0], &c[1]};
    uint8_t buf[256];
    size_t n;

    (void)state;
    for (int i = 0; i < 2; i++) {
        argus__v1__collective__init(&c[i]);
        c[i].seq = 41 + (uint64_t)i;
        c[i].comm_id = 0x1d0f2a3b4c5d6e7fULL;
        c[i].host_arrival_unix_ns = 1800000000000000000ULL + (uint64_t)i;
        c[i].host_return_unix_ns = 1800000000000900000ULL + (uint64_t)i;
        c[i].seq_local = i == 1;
    }
    s.job = "j";
    s.n_collectives = 2;
    s.collectives = cp;
    n = wire_steps_record_size(&s);
    assert_true(n <= sizeof(buf));
    assert_int_equal(wire_steps_record_pack(&s, buf), n);
    back = argus__v1__step_record__unpack(NULL, n, buf);
    assert_non_null(back);
    assert_int_equal(back->n_collectives, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(back->collectives[i]->seq, 41 + i);
        assert_int_equal(back->collectives[i]->comm_id, 0x1d0f2a3b4c5d6e7fULL);
        assert_int_equal(back->collectives[i]->host_return_unix_ns, c[i].host_return_unix_ns);
        assert_int_equal(back->collectives[i]->seq_local, i == 1);
    }
    argus__v1__step_record__free_unpacked(back, NULL);
}

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

/* --- field numbers ----------------------------------------------------------- */

static void assert_field(const ProtobufCMessageDescriptor *d, const char *name, unsigned id,
                         ProtobufCLabel label, ProtobufCType type)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);

    assert_non_null(f);
    assert_int_equal(f->id, id);
    assert_int_equal(f->label, label);
    assert_int_equal(f->type, type);
}

/* The constants are proto/argus.proto's numbers, and the hand encoder's
 * assumptions hold: it writes every field of KernelGroup and Cluster, and
 * the record's fields below the kernels are the six it packs first. */
static void test_field_numbers(void **state)
{
    const ProtobufCMessageDescriptor *rec = &argus__v1__step_record__descriptor;
    const ProtobufCMessageDescriptor *kg = &argus__v1__kernel_group__descriptor;
    const ProtobufCMessageDescriptor *cl = &argus__v1__cluster__descriptor;
    const ProtobufCLabel one = PROTOBUF_C_LABEL_NONE, many = PROTOBUF_C_LABEL_REPEATED;
    unsigned below_kernels = 0;

    assert_field(&argus__v1__batch__descriptor, "steps", WIRE_BATCH_STEPS_FIELD, many,
                 PROTOBUF_C_TYPE_MESSAGE);
    assert_field(rec, "kernels", WIRE_STEP_RECORD_KERNELS_FIELD, many, PROTOBUF_C_TYPE_MESSAGE);
    assert_field(kg, "name_id", WIRE_KERNEL_GROUP_NAME_ID_FIELD, one, PROTOBUF_C_TYPE_FIXED64);
    assert_field(kg, "stream", WIRE_KERNEL_GROUP_STREAM_FIELD, one, PROTOBUF_C_TYPE_UINT32);
    assert_field(kg, "clusters", WIRE_KERNEL_GROUP_CLUSTERS_FIELD, many, PROTOBUF_C_TYPE_MESSAGE);
    assert_field(kg, "work_id", WIRE_KERNEL_GROUP_WORK_ID_FIELD, one, PROTOBUF_C_TYPE_FIXED32);
    assert_int_equal(kg->n_fields, 4);
    assert_field(cl, "count", WIRE_CLUSTER_COUNT_FIELD, one, PROTOBUF_C_TYPE_UINT32);
    assert_field(cl, "sum_ns", WIRE_CLUSTER_SUM_NS_FIELD, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(cl, "p50_ns", WIRE_CLUSTER_P50_NS_FIELD, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(cl, "p99_ns", WIRE_CLUSTER_P99_NS_FIELD, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(cl, "min_ns", WIRE_CLUSTER_MIN_NS_FIELD, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(cl, "max_ns", WIRE_CLUSTER_MAX_NS_FIELD, one, PROTOBUF_C_TYPE_UINT64);
    assert_int_equal(cl->n_fields, 6);
    assert_field(rec, "job", 1, one, PROTOBUF_C_TYPE_STRING);
    assert_field(rec, "rank", 2, one, PROTOBUF_C_TYPE_UINT32);
    assert_field(rec, "step", 3, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(rec, "start_unix_ns", 4, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(rec, "duration_ns", 5, one, PROTOBUF_C_TYPE_UINT64);
    assert_field(rec, "phases", 6, many, PROTOBUF_C_TYPE_MESSAGE);
    for (unsigned i = 0; i < rec->n_fields; i++)
        below_kernels += rec->fields[i].id < WIRE_STEP_RECORD_KERNELS_FIELD;
    assert_int_equal(below_kernels, 6);
}

/* --- decoding ------------------------------------------------------------------ */

/* A random batch: every top-level field of Batch, 0 to 8 random records. */
static void random_batch(uint64_t *rng, struct arena *a, Argus__V1__Batch *b)
{
    static char *jobs[] = {"", "job-7"};

    argus__v1__batch__init(b);
    b->agent_id = "node-3";
    b->epoch = value(rng);
    b->seq = value(rng);
    b->created_unix_ns = value(rng);
    b->n_resources = rng_next(rng) % 3;
    b->resources = take(a, b->n_resources * sizeof(void *));
    for (size_t i = 0; i < b->n_resources; i++) {
        b->resources[i] = take(a, sizeof(*b->resources[i]));
        argus__v1__resource__init(b->resources[i]);
        b->resources[i]->job = jobs[i % 2];
        b->resources[i]->rank = (uint32_t)value(rng);
    }
    b->n_names = rng_next(rng) % 3;
    b->names = take(a, b->n_names * sizeof(void *));
    for (size_t i = 0; i < b->n_names; i++) {
        b->names[i] = take(a, sizeof(*b->names[i]));
        argus__v1__name_entry__init(b->names[i]);
        b->names[i]->id = value(rng);
        b->names[i]->name = "ncclKernel_AllReduce_RING_LL_Sum_float";
    }
    b->n_drops = rng_next(rng) % 3;
    b->drops = take(a, b->n_drops * sizeof(void *));
    for (size_t i = 0; i < b->n_drops; i++) {
        b->drops[i] = take(a, sizeof(*b->drops[i]));
        argus__v1__drop_counter__init(b->drops[i]);
        b->drops[i]->reason = "spool_cap";
        b->drops[i]->total = value(rng);
        b->drops[i]->rank = -1;
    }
    b->n_steps = rng_next(rng) % 9;
    b->steps = take(a, b->n_steps * sizeof(void *));
    for (size_t i = 0; i < b->n_steps; i++) {
        b->steps[i] = take(a, sizeof(*b->steps[i]));
        argus__v1__step_record__init(b->steps[i]);
        random_rest(rng, a, b->steps[i]);
        random_kernels(rng, a, b->steps[i]);
    }
}

/* b packed by protobuf-c; the caller frees it. */
static uint8_t *pack_protobuf_c(const Argus__V1__Batch *b, size_t *len)
{
    uint8_t *out;

    *len = argus__v1__batch__get_packed_size(b);
    out = malloc(*len + 1);
    assert_non_null(out);
    assert_int_equal(argus__v1__batch__pack(b, out), *len);
    return out;
}

/* b as the batcher packs it: the header without steps by protobuf-c, then
 * one wire_steps_entry_put per record. The caller frees it. */
static uint8_t *pack_by_hand(const Argus__V1__Batch *b, size_t *len)
{
    Argus__V1__Batch header = *b;
    size_t cap;
    uint8_t *out;

    header.n_steps = 0;
    header.steps = NULL;
    *len = argus__v1__batch__get_packed_size(&header);
    cap = *len;
    for (size_t i = 0; i < b->n_steps; i++)
        cap += wire_steps_record_size(b->steps[i]) + WIRE_STEPS_ENTRY_OVERHEAD;
    out = malloc(cap + 1);
    assert_non_null(out);
    argus__v1__batch__pack(&header, out);
    for (size_t i = 0; i < b->n_steps; i++)
        *len += wire_steps_entry_put(out + *len, b->steps[i], wire_steps_record_size(b->steps[i]));
    assert_true(*len <= cap);
    return out;
}

struct slice {
    const uint8_t *p;
    size_t len;
};

/* Walk len bytes at batch into out[0..max); returns the last result of
 * wire_steps_next (0 or negative) and sets *n to the entries found. */
static int walk(const uint8_t *batch, size_t len, struct slice *out, size_t max, size_t *n)
{
    struct wire_steps_reader r;
    struct slice s;
    int rc;

    *n = 0;
    wire_steps_reader_init(&r, batch, len);
    while ((rc = wire_steps_next(&r, &s.p, &s.len)) == 1) {
        assert_true(s.p >= batch && s.p + s.len <= batch + len);
        assert_true(*n < max);
        out[(*n)++] = s;
    }
    return rc;
}

/* Each entry of a walk is the record protobuf-c packs, in order. */
static void assert_entries(const Argus__V1__Batch *b, const struct slice *got, size_t n)
{
    assert_int_equal(n, b->n_steps);
    for (size_t i = 0; i < n; i++) {
        size_t want_len = argus__v1__step_record__get_packed_size(b->steps[i]);
        uint8_t *want = malloc(want_len + 1);

        argus__v1__step_record__pack(b->steps[i], want);
        assert_int_equal(got[i].len, want_len);
        assert_memory_equal(got[i].p, want, want_len);
        free(want);
    }
}

/* What protobuf-c packs and what the hand encoder packs decode to the same
 * records; protobuf-c reads the hand-packed batch back whole. */
static void test_decode_random_batches(void **state)
{
    struct arena a = {.cap = 1 << 20};
    uint64_t rng = 7;

    a.p = malloc(a.cap);
    for (int i = 0; i < 300; i++) {
        Argus__V1__Batch b, *back;
        struct slice pc[9], hand[9];
        size_t pc_len, hand_len, n_pc, n_hand;
        uint8_t *pc_bytes, *hand_bytes;

        a.used = 0;
        random_batch(&rng, &a, &b);
        pc_bytes = pack_protobuf_c(&b, &pc_len);
        hand_bytes = pack_by_hand(&b, &hand_len);
        assert_int_equal(hand_len, pc_len);
        assert_int_equal(walk(pc_bytes, pc_len, pc, 9, &n_pc), 0);
        assert_int_equal(walk(hand_bytes, hand_len, hand, 9, &n_hand), 0);
        assert_entries(&b, pc, n_pc);
        assert_entries(&b, hand, n_hand);
        back = argus__v1__batch__unpack(NULL, hand_len, hand_bytes);
        assert_non_null(back);
        assert_int_equal(back->n_steps, b.n_steps);
        assert_int_equal(back->seq, b.seq);
        argus__v1__batch__free_unpacked(back, NULL);
        free(pc_bytes);
        free(hand_bytes);
    }
    free(a.p);
}

/* A batch cut anywhere inside a steps entry is -EBADMSG; any cut gives only
 * entries that the whole batch has. */
static void test_decode_truncated(void **state)
{
    struct arena a = {.cap = 1 << 20};
    uint64_t rng = 11;
    Argus__V1__Batch b;
    struct slice all[9], got[9];
    size_t len, n_all, n;
    uint8_t *bytes;

    a.p = malloc(a.cap);
    do {
        a.used = 0;
        random_batch(&rng, &a, &b);
    } while (b.n_steps < 3);
    bytes = pack_by_hand(&b, &len);
    assert_int_equal(walk(bytes, len, all, 9, &n_all), 0);
    for (size_t cut = 0; cut < len; cut++) {
        int rc = walk(bytes, cut, got, 9, &n);

        assert_true(rc == 0 || rc == -EBADMSG);
        assert_true(n <= n_all);
        for (size_t i = 0; i < n; i++)
            assert_true(got[i].p == all[i].p && got[i].len == all[i].len);
        for (size_t i = 0; i < n_all; i++) {
            const uint8_t *entry = all[i].p - 1 - varint_size(all[i].len);

            if (cut > (size_t)(entry - bytes) && cut < (size_t)(all[i].p + all[i].len - bytes))
                assert_int_equal(rc, -EBADMSG);
        }
    }
    free(bytes);
    free(a.p);
}

static int walk_bytes(const uint8_t *p, size_t len, size_t *n)
{
    struct slice got[4];

    return walk(p, len, got, 4, n);
}

/* Framing errors, one by one; other fields are skipped whatever their type. */
static void test_decode_malformed(void **state)
{
    static const uint8_t past_end[] = {0x32, 0x05, 0x01};
    static const uint8_t long_varint[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                          0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    static const uint8_t value_cut[] = {0x10, 0x80};
    static const uint8_t fixed64_cut[] = {0x32, 0x00, 0x09, 1, 2, 3, 4, 5, 6, 7};
    static const uint8_t fixed32_cut[] = {0x0d, 1, 2, 3};
    static const uint8_t others[] = {0x08, 0x01, 0x09, 1,    2,    3,    4,   5,
                                     6,    7,    8,    0x0d, 1,    2,    3,   4,
                                     0x30, 0x07, 0x2a, 0x01, 0x00, 0x32, 0x00};
    size_t n;

    assert_int_equal(walk_bytes(past_end, sizeof(past_end), &n), -EBADMSG);
    assert_int_equal(walk_bytes(long_varint, sizeof(long_varint), &n), -EBADMSG);
    assert_int_equal(walk_bytes(value_cut, sizeof(value_cut), &n), -EBADMSG);
    assert_int_equal(walk_bytes(fixed64_cut, sizeof(fixed64_cut), &n), -EBADMSG);
    assert_int_equal(n, 1); /* the empty entry before it */
    assert_int_equal(walk_bytes(fixed32_cut, sizeof(fixed32_cut), &n), -EBADMSG);
    for (uint8_t type = 3; type < 8; type++) { /* groups, undefined, 5 is fixed32 cut */
        uint8_t tag[2] = {(uint8_t)(WIRE_TAG(WIRE_BATCH_STEPS_FIELD, 0) | type), 0};

        assert_int_equal(walk_bytes(tag, sizeof(tag), &n), -EBADMSG);
    }
    /* varint 1, fixed64 8, fixed32 5, field 6 as a varint, field 5 length-
     * delimited: skipped; then one empty steps entry */
    assert_int_equal(walk_bytes(others, sizeof(others), &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(walk_bytes(others, 0, &n), 0);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_records),        cmocka_unit_test(test_collective_round_trip),
        cmocka_unit_test(test_unknown_fields),        cmocka_unit_test(test_field_numbers),
        cmocka_unit_test(test_decode_random_batches), cmocka_unit_test(test_decode_truncated),
        cmocka_unit_test(test_decode_malformed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
