/* agent/steps/assembler: a collective event of an annotated step becomes the
 * record's Collective with its communicator id, its host end and whether its
 * sequence number is the library's (seq_local false) or the agent's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/steps/assembler.h"

static Argus__V1__Collective got[4];
static size_t ngot, nsteps;
static uint64_t step_start;

static void on_step(void *ctx, uint32_t pid, const Argus__V1__StepRecord *s)
{
    (void)ctx;
    assert_int_equal(pid, 42);
    nsteps++;
    step_start = s->start_unix_ns;
    for (size_t i = 0; i < s->n_collectives && ngot < 4; i++)
        got[ngot++] = *s->collectives[i];
}

static void step_event(struct assembler *a, uint64_t ts, uint64_t n)
{
    struct agent_event ev = {.kind = AGENT_EVENT_STEP, .pid = 42, .ts_ns = ts};

    ev.step.number = n;
    assembler_event(a, &ev);
}

static void coll_event(struct assembler *a, uint64_t ts, uint64_t comm, uint64_t end, bool shared)
{
    struct agent_event ev = {.kind = AGENT_EVENT_COLLECTIVE, .pid = 42, .ts_ns = ts};

    ev.flags = shared ? AGENT_EVENT_FLAG_SEQ_SHARED : 0;
    ev.collective.name_id = 9;
    ev.collective.seq = 17;
    ev.collective.comm_id = comm;
    ev.collective.host_return_ns = end;
    assembler_event(a, &ev);
}

static void test_collective_fields(void **state)
{
    struct clock_offset clock;
    struct assembler_options o = {.clock = &clock};
    struct assembler *a = assembler_new(&o, on_step, NULL);
    Argus__V1__Resource r = ARGUS__V1__RESOURCE__INIT;

    (void)state;
    clock_offset_init(&clock, 1000000);
    clock_offset_set(&clock, 3500, 2000000); /* the realtime clock set 1 ms on at 3500 */
    assert_non_null(a);
    r.job = "j";
    r.pid = 42;
    assert_int_equal(assembler_track(a, &r), 0);
    step_event(a, 1000, 0);
    coll_event(a, 2000, 0xabc, 5000, true); /* gloo: shared id and seq, host end */
    coll_event(a, 3000, 0xabc, 0, false);   /* seq counted by the agent */
    coll_event(a, 4000, 0, 0, true);        /* the library's seq, group unknown */
    step_event(a, 9000, 1);
    assert_int_equal(nsteps, 1);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0].comm_id, 0xabc);
    assert_int_equal(got[0].host_arrival_unix_ns, 1002000);
    assert_int_equal(got[0].host_return_unix_ns, 2005000); /* it returned after the set */
    assert_false(got[0].seq_local);
    assert_int_equal(got[1].host_return_unix_ns, 0); /* unknown stays 0, not the offset */
    assert_true(got[1].seq_local);
    assert_true(got[2].seq_local); /* (0, seq) names no group on every member */
    /* each time converts with the offset of its own time, before or after the step */
    assert_int_equal(got[1].host_arrival_unix_ns, 1003000);
    assert_int_equal(got[2].host_arrival_unix_ns, 2004000);
    assert_int_equal(step_start, 1001000);
    assembler_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collective_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
