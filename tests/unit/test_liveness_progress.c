/* agent/liveness/progress: sequence numbers as the step records number them
 * (the library's, else one more than the communicator's last), entered and
 * finished per communicator, calls before the rank is tracked, and the
 * status rule: none while it progresses, the first after `after`, then one
 * per `interval`, one more (moving) when it progresses again; lone ranks
 * get none. Times are passed in. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/liveness/progress.h"

#define SEC 1000000000ull
#define GLOO 0x1000 /* a process group object (the calls' handle) */
#define NCCL 0x2000
#define GROUP 0xabcd /* its shared id */

static const struct progress_options opts = {5 * SEC, 5 * SEC};

static void call(struct progress *p, uint32_t pid, uint64_t handle, int64_t lib_seq, uint64_t at,
                 uint64_t done)
{
    progress_call(p, pid, &(struct progress_call){at, handle, GROUP, lib_seq, 77, done});
}

static void test_numbers(void **state)
{
    struct progress *p = progress_new(&opts);
    struct progress_rank *r;

    assert_non_null(p);
    /* calls come before discovery names the rank (mp.spawn) */
    call(p, 10, NCCL, -1, 1 * SEC, 0);
    call(p, 10, NCCL, -1, 2 * SEC, 0);
    call(p, 10, GLOO, 812, 3 * SEC, 0);
    progress_done(p, 10, GLOO, 811, 3 * SEC); /* an older one ends */
    assert_int_equal(progress_track(p, 10, "job-a", 2, 4, 4 * SEC), 0);
    r = progress_find(p, 10);
    assert_non_null(r);
    assert_true(r->tracked);
    assert_string_equal(r->job, "job-a");
    assert_int_equal(r->ncomms, 2);
    assert_int_equal(r->comms[0].entered_seq, 1); /* counted from 0 */
    assert_false(r->comms[0].entered_shared);
    assert_false(r->comms[0].done);
    assert_int_equal(r->comms[1].entered_seq, 812);
    assert_true(r->comms[1].entered_shared);
    assert_int_equal(r->comms[1].group, GROUP);
    assert_true(r->comms[1].done);
    assert_int_equal(r->comms[1].done_seq, 811);
    /* its own end, known at the call (its work finished first) */
    call(p, 10, GLOO, 813, 5 * SEC, 5 * SEC + 10);
    assert_int_equal(r->comms[1].entered_seq, 813);
    assert_int_equal(r->comms[1].done_seq, 813);
    assert_int_equal(r->comms[1].done_ns, 5 * SEC + 10);
    /* a late end of an older one does not go back */
    progress_done(p, 10, GLOO, 812, 6 * SEC);
    assert_int_equal(r->comms[1].done_seq, 813);
    /* an unnumbered call follows the library's last number */
    call(p, 10, GLOO, -1, 7 * SEC, 0);
    assert_int_equal(r->comms[1].entered_seq, 814);
    assert_false(r->comms[1].entered_shared);
    assert_ptr_equal(progress_last_comm(r), &r->comms[1]);
    assert_int_equal(r->last_call_ns, 7 * SEC);
    progress_step(p, 10, 41, 8 * SEC);
    assert_true(r->has_step);
    assert_int_equal(r->last_step, 41);
    assert_int_equal(r->progress_ns, 8 * SEC);
    assert_int_equal(r->last_call_ns, 7 * SEC);
    progress_forget(p, 10);
    assert_null(progress_find(p, 10));
    progress_free(p);
}

static void test_rule(void **state)
{
    struct progress *p = progress_new(&opts);
    struct progress_rank *r;

    assert_int_equal(progress_track(p, 20, "job-a", 1, 4, 0), 0);
    r = progress_find(p, 20);
    call(p, 20, GLOO, 0, 1 * SEC, 0);
    /* no status while it progresses, nor before `after` */
    assert_int_equal(progress_due(p, r, 5 * SEC), PROGRESS_DUE_NONE);
    assert_int_equal(progress_due(p, r, 6 * SEC - 1), PROGRESS_DUE_NONE);
    assert_int_equal(progress_due(p, r, 6 * SEC), PROGRESS_DUE_STALLED);
    progress_sent(r, PROGRESS_DUE_STALLED, 6 * SEC);
    /* then one per interval */
    assert_int_equal(progress_due(p, r, 10 * SEC), PROGRESS_DUE_NONE);
    assert_int_equal(progress_due(p, r, 11 * SEC), PROGRESS_DUE_STALLED);
    progress_sent(r, PROGRESS_DUE_STALLED, 11 * SEC);
    /* progress again, even reported with an older time: one moving status */
    progress_done(p, 20, GLOO, 0, 10 * SEC);
    assert_int_equal(progress_due(p, r, 12 * SEC), PROGRESS_DUE_MOVING);
    progress_sent(r, PROGRESS_DUE_MOVING, 12 * SEC);
    assert_false(r->stalled);
    /* and the clock starts again from its last progress */
    call(p, 20, GLOO, 1, 12 * SEC, 0);
    assert_int_equal(progress_due(p, r, 16 * SEC), PROGRESS_DUE_NONE);
    assert_int_equal(progress_due(p, r, 17 * SEC), PROGRESS_DUE_STALLED);
    progress_free(p);
}

/* A rank that never entered a collective gets statuses from when it was
 * tracked; untracked processes and lone ranks get none. */
static void test_who(void **state)
{
    struct progress *p = progress_new(&opts);

    call(p, 30, GLOO, 0, 1 * SEC, 0); /* never tracked */
    assert_int_equal(progress_due(p, progress_find(p, 30), 100 * SEC), PROGRESS_DUE_NONE);
    assert_int_equal(progress_track(p, 31, "job-b", 0, 1, 0), 0);
    assert_int_equal(progress_due(p, progress_find(p, 31), 100 * SEC), PROGRESS_DUE_NONE);
    assert_int_equal(progress_track(p, 32, "job-c", 3, 8, 10 * SEC), 0);
    assert_int_equal(progress_due(p, progress_find(p, 32), 14 * SEC), PROGRESS_DUE_NONE);
    assert_int_equal(progress_due(p, progress_find(p, 32), 15 * SEC), PROGRESS_DUE_STALLED);
    assert_int_equal(progress_count(p), 3);
    progress_free(p);
}

/* More communicators than slots share the last; more processes than the
 * table holds are refused. */
static void test_bounds(void **state)
{
    struct progress *p = progress_new(&opts);
    struct progress_rank *r;

    for (uint64_t h = 1; h <= PROGRESS_MAX_COMMS + 3; h++)
        call(p, 40, h, -1, h * SEC, 0);
    r = progress_find(p, 40);
    assert_int_equal(r->ncomms, PROGRESS_MAX_COMMS);
    for (uint32_t pid = 1000; progress_count(p) < PROGRESS_MAX_RANKS; pid++)
        call(p, pid, GLOO, 0, SEC, 0);
    assert_int_equal(progress_track(p, 99999, "job-d", 0, 2, 0), -ENOSPC);
    call(p, 99998, GLOO, 0, SEC, 0);
    assert_null(progress_find(p, 99998));
    progress_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_who),
        cmocka_unit_test(test_bounds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
