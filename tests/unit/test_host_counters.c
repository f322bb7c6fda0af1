/* agent/steps/host_counters: every agent counter has a row naming a uint64
 * field of argus.v1.HostCounters (checked against the protobuf descriptor,
 * and every field has a counter), and a COUNTER event of each counter lands
 * in its own field whichever made the step: the assembler (annotated
 * ranks) or the step inferrer (ranks without annotation). */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/assembler.h"
#include "agent/steps/host_counters.h"
#include "agent/steps/stepinfer.h"

#define MS 1000000ull

static const ProtobufCFieldDescriptor *field_named(const char *name)
{
    const ProtobufCMessageDescriptor *d = &argus__v1__host_counters__descriptor;

    for (unsigned i = 0; i < d->n_fields; i++)
        if (!strcmp(d->fields[i].name, name))
            return &d->fields[i];
    return NULL;
}

/* The field each counter must land in: the test's own table, so that two
 * rows of the table under test swapping their fields fail. */
static const char *const expected_field[AGENT_COUNTER_END] = {
    [AGENT_COUNTER_OFF_CPU_NS] = "off_cpu_ns",     [AGENT_COUNTER_RUNQ_NS] = "runq_ns",
    [AGENT_COUNTER_SYNC_WAIT_NS] = "sync_wait_ns", [AGENT_COUNTER_LAUNCHES] = "launches",
    [AGENT_COUNTER_RETRANSMITS] = "retransmits",   [AGENT_COUNTER_IO_WAIT_NS] = "io_wait_ns",
    [AGENT_COUNTER_ALLOC_NS] = "alloc_ns",
};

/* The value of counter's field in host, found through the descriptor by
 * the expected name (not through the table under test). */
static uint64_t field_value(const Argus__V1__HostCounters *host, uint32_t counter)
{
    const ProtobufCFieldDescriptor *f = field_named(expected_field[counter]);

    return *(const uint64_t *)((const char *)host + f->offset);
}

static void test_every_counter_has_a_row(void **state)
{
    const ProtobufCMessageDescriptor *d = &argus__v1__host_counters__descriptor;

    (void)state;
    assert_null(host_counter_find(0));
    assert_null(host_counter_find(AGENT_COUNTER_END));
    assert_null(host_counter_find(UINT32_MAX));
    for (uint32_t c = AGENT_COUNTER_OFF_CPU_NS; c < AGENT_COUNTER_END; c++) {
        const struct host_counter *row = host_counter_find(c);
        const ProtobufCFieldDescriptor *f;

        assert_non_null(row);
        assert_non_null(expected_field[c]);
        assert_string_equal(row->name, expected_field[c]);
        f = field_named(expected_field[c]);
        assert_non_null(f);
        assert_int_equal(f->type, PROTOBUF_C_TYPE_UINT64);
        assert_int_equal(f->label, PROTOBUF_C_LABEL_NONE);
        assert_int_equal(row->offset, f->offset);
        for (uint32_t o = AGENT_COUNTER_OFF_CPU_NS; o < c; o++) /* one counter per field */
            assert_int_not_equal(host_counter_find(o)->offset, row->offset);
    }
    /* every field of HostCounters is some counter's */
    assert_int_equal(d->n_fields, AGENT_COUNTER_END - AGENT_COUNTER_OFF_CPU_NS);
}

static void test_add_and_set(void **state)
{
    Argus__V1__HostCounters h = ARGUS__V1__HOST_COUNTERS__INIT;
    uint64_t values[AGENT_COUNTER_END];

    (void)state;
    assert_int_equal(host_counters_add(&h, AGENT_COUNTER_IO_WAIT_NS, 5), 0);
    assert_int_equal(host_counters_add(&h, AGENT_COUNTER_IO_WAIT_NS, 7), 0);
    assert_int_equal(h.io_wait_ns, 12);
    assert_int_equal(host_counters_add(&h, 0, 1), -ENOENT);
    assert_int_equal(host_counters_add(&h, AGENT_COUNTER_END, 1), -ENOENT);
    for (uint32_t c = 0; c < AGENT_COUNTER_END; c++)
        values[c] = 100 + c;
    host_counters_set(&h, values);
    assert_int_equal(h.off_cpu_ns, 100 + AGENT_COUNTER_OFF_CPU_NS);
    assert_int_equal(h.alloc_ns, 100 + AGENT_COUNTER_ALLOC_NS);
    for (uint32_t c = AGENT_COUNTER_OFF_CPU_NS; c < AGENT_COUNTER_END; c++)
        assert_int_equal(field_value(&h, c), 100 + c);
}

static Argus__V1__HostCounters last_host;
static size_t nsteps;

static void on_step(void *ctx, uint32_t pid, const Argus__V1__StepRecord *s)
{
    (void)ctx;
    assert_int_equal(pid, 42);
    assert_non_null(s->host);
    last_host = *s->host;
    nsteps++;
}

static void counter_event(struct assembler *a, uint32_t counter, uint64_t value)
{
    struct agent_event ev = {.kind = AGENT_EVENT_COUNTER, .pid = 42, .ts_ns = 2000};

    ev.counter.counter = counter;
    ev.counter.value = value;
    assembler_event(a, &ev);
}

/* An annotated step: counter c's events add up to 1000 c + c in its field. */
static void test_through_the_assembler(void **state)
{
    struct clock_offset clock;
    struct assembler_options o = {.clock = &clock};
    struct assembler *a = assembler_new(&o, on_step, NULL);
    Argus__V1__Resource r = ARGUS__V1__RESOURCE__INIT;
    struct agent_event step = {.kind = AGENT_EVENT_STEP, .pid = 42, .ts_ns = 1000};
    struct assembler_stats st;

    (void)state;
    clock_offset_init(&clock, 0);
    assert_non_null(a);
    r.job = "j";
    r.pid = 42;
    assert_int_equal(assembler_track(a, &r), 0);
    nsteps = 0;
    step.step.number = 0;
    assembler_event(a, &step);
    for (uint32_t c = AGENT_COUNTER_OFF_CPU_NS; c < AGENT_COUNTER_END; c++) {
        counter_event(a, c, 1000 * c);
        counter_event(a, c, c);
    }
    counter_event(a, AGENT_COUNTER_END, 5); /* no row: counted, lands nowhere */
    step.ts_ns = 9000;
    step.step.number = 1;
    assembler_event(a, &step);
    assert_int_equal(nsteps, 1);
    for (uint32_t c = AGENT_COUNTER_OFF_CPU_NS; c < AGENT_COUNTER_END; c++)
        assert_int_equal(field_value(&last_host, c), 1001 * c);
    assembler_get_stats(a, &st);
    assert_int_equal(st.unknown_counters, 1);
    assembler_free(a);
}

/* A rank without annotation: steps of 100 ms from two all-reduces after
 * 60 ms of compute; counter c grows by c ms every 100 ms poll, so each
 * inferred step carries about c ms of it, c times counter 1's. */
static void test_through_the_step_inferrer(void **state)
{
    static struct clock_offset zero_clock = {.n = 1};
    struct stepinfer *si = stepinfer_new(on_step, NULL, &zero_clock);
    uint64_t next_tick = 2000 * MS;

    (void)state;
    assert_non_null(si);
    assert_int_equal(stepinfer_track(si, 42, "j", 0), 0);
    nsteps = 0;
    for (int k = 0; k < 60; k++) {
        uint64_t t0 = 1000 * MS + (uint64_t)k * 100 * MS;

        for (int i = 0; i < 2; i++) {
            uint64_t at = t0 + (60 + 10 * (uint64_t)i) * MS;
            struct stepinfer_call c = {at, at + 40000, 7, 0, 0xa, 2 * k + i, 0, 0};
            stepinfer_call(si, 42, &c);
        }
        for (uint32_t c = AGENT_COUNTER_OFF_CPU_NS; c < AGENT_COUNTER_END; c++)
            stepinfer_counter(si, 42, c, c * MS, t0 + 100 * MS); /* the poll */
        if (t0 >= next_tick) {
            stepinfer_tick(si, NULL, NULL);
            next_tick += 1000 * MS;
        }
    }
    stepinfer_tick(si, NULL, NULL);
    assert_true(nsteps >= 10);
    assert_in_range(last_host.off_cpu_ns, 95 * MS / 100, 105 * MS / 100);
    for (uint32_t c = AGENT_COUNTER_OFF_CPU_NS; c < AGENT_COUNTER_END; c++) {
        uint64_t v = field_value(&last_host, c), want = c * last_host.off_cpu_ns;
        assert_in_range(v, want - want / 100, want + want / 100);
    }
    stepinfer_free(si);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_counter_has_a_row),
        cmocka_unit_test(test_add_and_set),
        cmocka_unit_test(test_through_the_assembler),
        cmocka_unit_test(test_through_the_step_inferrer),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
