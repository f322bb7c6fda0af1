/* collector/diag/diag_live + diag_hang: hangs and deaths from synthetic
 * rank statuses (a hung job, a merely slow collective, a checkpoint, a
 * stopped rank that continues, a rank with no status, a killed rank and the
 * others erroring out, a clean end, the bound scaled by the step time). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_live.h"
#include "collector/diag/diag_report.h"

#define S 1000000000ULL
#define T0 (1700000000ULL * S)
#define COMM 0xabcdef0012345678ULL
#define OP 77

static void where(void *ctx, uint32_t rank, struct diag_silence_where *out)
{
    (void)ctx;
    out->node = rank < 2 ? "node-a" : "node-b";
    out->gpu = (int32_t)rank;
    out->group = "dp";
}

static const char *name(void *ctx, uint64_t id)
{
    (void)ctx;
    return id == OP ? "c10d::ProcessGroupGloo::allreduce" : id == 5 ? "read" : NULL;
}

static const struct diag_live_ctx ctx = {0, NULL, where, NULL, name, NULL};

/* A status of rank at `at`: entered/done on COMM (done_ns = entered_ns of
 * done unless done >= entered: then finished 1 ms after). */
static void status(struct diag_live *l, uint32_t rank, uint64_t at, uint64_t entered, uint64_t done,
                   int state, uint64_t recv)
{
    Argus__V1__RankStatus s = ARGUS__V1__RANK_STATUS__INIT;
    Argus__V1__CommProgress c = ARGUS__V1__COMM_PROGRESS__INIT;
    Argus__V1__CommProgress *cp = &c;
    uint64_t stack[] = {5, 6};

    s.job = "j";
    s.rank = rank;
    s.at_unix_ns = at;
    s.state = state;
    s.wait = state == ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING ? "read" : "";
    s.cpu_permille = state == ARGUS__V1__PROC_STATE__PROC_STATE_RUNNING ? 990 : 0;
    c.comm_id = COMM;
    c.entered_seq = entered;
    c.entered_unix_ns = T0;
    c.name_id = OP;
    c.done_seq = done;
    c.done_unix_ns = done >= entered ? T0 + S / 1000 : T0 - S;
    s.n_comms = 1;
    s.comms = &cp;
    s.n_stack = 2;
    s.stack = stack;
    s.has_step = true;
    s.last_step = 99;
    assert_int_equal(diag_live_status(l, s.rank, &s, recv), 0);
}

static void exited(struct diag_live *l, uint32_t rank, uint64_t at, int code, int sig,
                   uint64_t recv)
{
    Argus__V1__RankStatus s = ARGUS__V1__RANK_STATUS__INIT;

    s.job = "j";
    s.rank = rank;
    s.at_unix_ns = at;
    s.state = ARGUS__V1__PROC_STATE__PROC_STATE_EXITED;
    s.exited = true;
    s.exit_unix_ns = at;
    s.exit_code = code;
    s.exit_signal = sig;
    s.has_step = true;
    s.last_step = 812;
    assert_int_equal(diag_live_status(l, s.rank, &s, recv), 0);
}

/* A step record of rank, step `step`, ending at end (agent clock). */
static void step_at(struct diag_live *l, uint32_t rank, uint64_t step, uint64_t end)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;

    s.rank = rank;
    s.step = step;
    s.start_unix_ns = end - S / 10;
    s.duration_ns = S / 10;
    diag_live_note_step(l, s.rank, &s);
}

static void new_live(struct diag_live *l, uint32_t ranks)
{
    diag_live_init(l, 30 * S, 2 * S);
    assert_int_equal(diag_live_reserve(l, ranks), 0);
    for (uint32_t r = 0; r < ranks; r++)
        diag_live_note_rank(l, r);
}

/* Check at now: the report's suspects, or 0 (rep freed either way). */
static int check(struct diag_live *l, uint64_t now, const struct diag_live_ctx *c, char *summary,
                 char *evidence, uint32_t *rank, int *cause)
{
    Argus__V1__Report *rep = diag_report_new("j", now, 1);
    int found = diag_live_check(l, now, c, rep);

    assert_true(found >= 0);
    if (found) {
        assert_int_equal(rep->n_suspects >= 1, 1);
        snprintf(summary, 700, "%s", rep->summary);
        snprintf(evidence, 1400, "%s", rep->suspects[0]->evidence);
        *rank = rep->suspects[0]->rank;
        *cause = rep->suspects[0]->cause;
        assert_int_equal(rep->suspects[0]->level, ARGUS__V1__LEVEL__LEVEL_LIVENESS);
        diag_report_mark_pages(rep);
        assert_true(rep->pages);
    }
    int n = (int)rep->n_suspects;
    diag_report_free(rep);
    return n;
}

static int state_of(const struct diag_live *l)
{
    const char *reason;
    return diag_live_state(l, &reason);
}

static void hung_job(struct diag_live *l, int culprit_state)
{
    new_live(l, 4);
    for (uint32_t r = 0; r < 4; r++)
        if (r != 2)
            status(l, r, T0 + 20 * S, 10, 9, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING,
                   T0 + 20 * S);
    status(l, 2, T0 + 20 * S, 9, 9, culprit_state, T0 + 20 * S);
}

static void test_hang_named_once(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    hung_job(&l, ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED);
    assert_int_equal(check(&l, T0 + 25 * S, &ctx, sum, ev, &rank, &cause), 0); /* 25 s < 30 s */
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING);
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 2);
    assert_int_equal(cause, ARGUS__V1__CAUSE__CAUSE_HANG);
    assert_non_null(strstr(sum, "job j hung at c10d::ProcessGroupGloo::allreduce #10"));
    assert_non_null(strstr(sum, "ranks 0-1,3 wait since"));
    assert_non_null(strstr(sum, "rank 2 never entered it"));
    assert_non_null(strstr(ev, "stopped"));
    assert_non_null(strstr(ev, "entered #9, finished #9"));
    assert_non_null(strstr(ev, "last step 99"));
    assert_non_null(strstr(ev, "native stack: read < 0x6"));
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_HUNG);
    assert_int_equal(check(&l, T0 + 40 * S, &ctx, sum, ev, &rank, &cause), 0); /* once */
    /* continued (SIGCONT): it enters #10, the others finish it */
    status(&l, 2, T0 + 41 * S, 10, 9, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 41 * S);
    assert_int_equal(check(&l, T0 + 42 * S, &ctx, sum, ev, &rank, &cause), 0);
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING);
    assert_int_equal(l.hangs, 1);
    diag_live_free(&l);
}

static void test_spinning_and_moving(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    hung_job(&l, ARGUS__V1__PROC_STATE__PROC_STATE_RUNNING);
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_non_null(strstr(ev, "on CPU (99% of a CPU)"));
    /* a step record past the statuses: the ranks moved on */
    Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;
    rec.job = "j";
    rec.step = 100;
    for (uint32_t r = 0; r < 4; r++) {
        rec.rank = r;
        diag_live_note_step(&l, rec.rank, &rec);
    }
    assert_int_equal(check(&l, T0 + 45 * S, &ctx, sum, ev, &rank, &cause), 0);
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING);
    diag_live_free(&l);
}

static void test_slow_and_checkpoint_not_hung(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    new_live(&l, 4); /* every rank inside #10: a slow collective */
    for (uint32_t r = 0; r < 4; r++)
        status(&l, r, T0 + 20 * S, 10, 9, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 20 * S);
    assert_int_equal(check(&l, T0 + 120 * S, &ctx, sum, ev, &rank, &cause), 0);
    diag_live_free(&l);
    new_live(&l, 4); /* every rank outside collectives: a checkpoint */
    for (uint32_t r = 0; r < 4; r++)
        status(&l, r, T0 + 20 * S, 10, 10, ARGUS__V1__PROC_STATE__PROC_STATE_DISK, T0 + 20 * S);
    assert_int_equal(check(&l, T0 + 120 * S, &ctx, sum, ev, &rank, &cause), 0);
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING);
    diag_live_free(&l);
}

/* Stopped after it entered the call (asynchronous collectives: DDP enqueued
 * its buckets before SIGSTOP came): every member is inside #10, and the one
 * whose process cannot run is named; two of four stopped too, but three of
 * four is no longer standing out. */
static void test_stopped_inside_the_call(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    for (int stuck = 1; stuck <= 3; stuck++) {
        new_live(&l, 4);
        for (uint32_t r = 0; r < 4; r++)
            status(&l, r, T0 + 20 * S, 10, 9,
                   r >= (uint32_t)(4 - stuck) ? ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED
                                              : ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING,
                   T0 + 20 * S);
        assert_int_equal(check(&l, T0 + 25 * S, &ctx, sum, ev, &rank, &cause), 0);
        int named = check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause);
        if (stuck == 3) {
            assert_int_equal(named, 0);
            diag_live_free(&l);
            continue;
        }
        assert_int_equal(named, stuck);
        assert_int_equal(rank, 4 - stuck);
        assert_int_equal(cause, ARGUS__V1__CAUSE__CAUSE_HANG);
        assert_non_null(strstr(sum, stuck == 1 ? "ranks 0-2 wait since" : "ranks 0-1 wait since"));
        assert_non_null(strstr(sum, "entered it but cannot run"));
        assert_non_null(strstr(ev, "stopped"));
        assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_HUNG);
        diag_live_free(&l);
    }
    /* asynchronous collectives: #9 finished after #10 was entered (DDP
     * enqueues the next bucket first); every rank is still inside #10 */
    new_live(&l, 4);
    for (uint32_t r = 0; r < 4; r++) {
        status(&l, r, T0 + 20 * S, 10, 9,
               r == 2 ? ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED
                      : ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING,
               T0 + 20 * S);
        l.ranks[r].comms[0].done_ns = T0 + S / 2;
    }
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 2);
    diag_live_free(&l);
    /* in D state inside the call (a driver, a dead NFS mount): the same */
    new_live(&l, 4);
    for (uint32_t r = 0; r < 4; r++)
        status(&l, r, T0 + 20 * S, 10, 9,
               r == 1 ? ARGUS__V1__PROC_STATE__PROC_STATE_DISK
                      : ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING,
               T0 + 20 * S);
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 1);
    diag_live_free(&l);
}

/* A ring allreduce: rank 2 stopped inside #10; ranks 1 and 3 wait inside
 * #10 for its data, rank 0 finished #10 and #11 and waits in #12. All of
 * 1-3 are behind #12, but only the stopped one is the cause
 * (torch_fault_torchrun.sh named 1, 2 and 3 once). With nobody stopped the
 * three are named as before. */
static void test_stopped_among_the_behind(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    for (int stopped = 0; stopped <= 1; stopped++) {
        new_live(&l, 4);
        status(&l, 0, T0 + 20 * S, 12, 11, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 20 * S);
        for (uint32_t r = 1; r < 4; r++)
            status(&l, r, T0 + 20 * S, 10, 9,
                   r == 2 && stopped ? ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED
                                     : ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING,
                   T0 + 20 * S);
        int named = check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause);
        assert_int_equal(named, stopped ? 1 : 3);
        if (stopped) {
            assert_int_equal(rank, 2);
            assert_non_null(strstr(ev, "stopped"));
        }
        assert_int_equal(cause, ARGUS__V1__CAUSE__CAUSE_HANG);
        diag_live_free(&l);
    }
}

static void test_bound_scaled_by_step_time(void **st)
{
    struct diag_live l;
    struct diag_live_ctx slow = ctx;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    slow.step_p50_ns = 5 * S; /* 10 x 5 s = 50 s */
    hung_job(&l, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING);
    assert_int_equal(check(&l, T0 + 45 * S, &slow, sum, ev, &rank, &cause), 0);
    assert_int_equal(check(&l, T0 + 51 * S, &slow, sum, ev, &rank, &cause), 1);
    assert_non_null(strstr(ev, "sleeping in read"));
    diag_live_free(&l);
}

static void test_no_status_named(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;
    Argus__V1__StepRecord rec = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__Collective col = ARGUS__V1__COLLECTIVE__INIT, *cp = &col;

    (void)st;
    new_live(&l, 4);
    rec.job = "j";
    rec.step = 98;
    col.comm_id = COMM;
    rec.n_collectives = 1;
    rec.collectives = &cp;
    for (uint32_t r = 0; r < 4; r++) {
        rec.rank = r;
        diag_live_note_step(&l, rec.rank, &rec);
    }
    for (uint32_t r = 0; r < 3; r++)
        status(&l, r, T0 + 20 * S, 10, 9, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 20 * S);
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 3);
    assert_non_null(strstr(ev, "no status from it"));
    diag_live_free(&l);
}

/* Ranks 0,1 wait in #10 of COMM; rank 2 waits inside another group's
 * call (behind rank 3), rank 3 is on CPU outside both: only rank 3. */
static void test_chain_of_waits(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;
    Argus__V1__RankStatus s = ARGUS__V1__RANK_STATUS__INIT;
    Argus__V1__CommProgress a = ARGUS__V1__COMM_PROGRESS__INIT, b = a;
    Argus__V1__CommProgress *cp[2] = {&a, &b};

    (void)st;
    new_live(&l, 4);
    status(&l, 0, T0 + 20 * S, 10, 9, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 20 * S);
    status(&l, 1, T0 + 20 * S, 10, 9, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 20 * S);
    s.job = "j";
    s.at_unix_ns = T0 + 20 * S;
    s.state = ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING;
    a.comm_id = COMM; /* behind on COMM */
    a.entered_seq = a.done_seq = 9;
    a.entered_unix_ns = T0 - 2 * S;
    a.done_unix_ns = T0 - S;
    b.comm_id = 99; /* inside #40 of group 99 */
    b.entered_seq = 40;
    b.done_seq = 39;
    b.entered_unix_ns = T0;
    b.done_unix_ns = T0 - S / 2;
    s.n_comms = 2;
    s.comms = cp;
    s.rank = 2;
    assert_int_equal(diag_live_status(&l, s.rank, &s, T0 + 20 * S), 0);
    b.entered_seq = b.done_seq = 39; /* rank 3: outside both */
    b.entered_unix_ns = T0 - S;
    s.state = ARGUS__V1__PROC_STATE__PROC_STATE_RUNNING;
    s.rank = 3;
    assert_int_equal(diag_live_status(&l, s.rank, &s, T0 + 20 * S), 0);
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 3);
    diag_live_free(&l);
}

static void test_killed_then_others(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    new_live(&l, 4);
    /* rank 0's error arrives first, rank 2 died before it */
    exited(&l, 0, T0 + 2 * S, 1, 0, T0 + 2 * S);
    exited(&l, 2, T0 + S, -1, 9, T0 + 2 * S + S / 2);
    assert_int_equal(check(&l, T0 + 3 * S, &ctx, sum, ev, &rank, &cause), 0); /* grace */
    exited(&l, 1, T0 + 3 * S, 1, 0, T0 + 3 * S);
    exited(&l, 3, T0 + 4 * S + S / 5, 1, 0, T0 + 4 * S + S / 5);
    assert_int_equal(check(&l, T0 + 5 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 2);
    assert_int_equal(cause, ARGUS__V1__CAUSE__CAUSE_EXITED);
    assert_non_null(strstr(sum, "rank 2 killed by SIGKILL at "));
    assert_non_null(
        strstr(sum, "(last step 812); then ranks 0-1,3 exited with code 1 within 3.2 s"));
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_FAILED);
    assert_true(diag_live_failed(&l));
    assert_int_equal(check(&l, T0 + 60 * S, &ctx, sum, ev, &rank, &cause), 0);
    diag_live_free(&l);
}

static void test_clean_end_and_exit_error(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    new_live(&l, 4);
    for (uint32_t r = 0; r < 4; r++)
        exited(&l, r, T0 + r * S / 10, 0, 0, T0 + S);
    assert_int_equal(check(&l, T0 + 5 * S, &ctx, sum, ev, &rank, &cause), 0);
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_ENDED);
    diag_live_free(&l);
    new_live(&l, 4); /* one rank raises: exit code 1 while the others run */
    exited(&l, 1, T0, 1, 0, T0);
    assert_int_equal(check(&l, T0 + 3 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 1);
    assert_non_null(strstr(sum, "rank 1 exited with code 1"));
    assert_non_null(strstr(sum, "ranks 0,2-3 still running"));
    diag_live_free(&l);
}

/* Ends of unknown status (no proc probe: a /proc scan saw the process gone;
 * a replay ended): ranks ending over 5 s are a job that ended, not a death;
 * one gone while the others run on for the hang bound is one. */
static void test_unknown_ends(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    new_live(&l, 4);
    for (uint32_t r = 0; r < 4; r++) {
        exited(&l, r, T0 + r * 5 * S / 3, -1, 0, T0 + r * 5 * S / 3);
        assert_int_equal(check(&l, T0 + r * 5 * S / 3 + S, &ctx, sum, ev, &rank, &cause), 0);
    }
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_ENDED);
    diag_live_free(&l);
    new_live(&l, 4);
    exited(&l, 2, T0, -1, 0, T0);
    assert_int_equal(check(&l, T0 + 3 * S, &ctx, sum, ev, &rank, &cause), 0);
    /* the others' data until 29 s after its end: not yet */
    for (uint32_t r = 0; r < 4; r += r == 1 ? 2 : 1)
        step_at(&l, r, 100, T0 + 29 * S);
    assert_int_equal(check(&l, T0 + 40 * S, &ctx, sum, ev, &rank, &cause), 0);
    step_at(&l, 3, 101, T0 + 30 * S); /* one rank ran on for the bound */
    assert_int_equal(check(&l, T0 + 41 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 2);
    assert_int_equal(cause, ARGUS__V1__CAUSE__CAUSE_EXITED);
    assert_non_null(strstr(sum, "exit status unknown"));
    diag_live_free(&l);
    /* a stalled rank's statuses count as its data: a job stuck behind the
     * rank that vanished has the death named, not a hang */
    new_live(&l, 2);
    exited(&l, 1, T0, -1, 0, T0);
    status(&l, 0, T0 + 10 * S, 5, 4, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 10 * S);
    assert_int_equal(check(&l, T0 + 11 * S, &ctx, sum, ev, &rank, &cause), 0);
    status(&l, 0, T0 + 31 * S, 5, 4, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING, T0 + 31 * S);
    assert_int_equal(check(&l, T0 + 31 * S, &ctx, sum, ev, &rank, &cause), 1);
    assert_int_equal(rank, 1);
    diag_live_free(&l);
}

/* After an outage the spools deliver the ranks' ends out of order: one
 * node's ends a minute before the others' (by arrival), all at the same
 * agent time. The job ended; nobody died. */
static void test_unknown_ends_caught_up(void **st)
{
    struct diag_live l;
    char sum[700], ev[1400];
    uint32_t rank = 0;
    int cause = 0;

    (void)st;
    new_live(&l, 4);
    for (uint32_t r = 0; r < 4; r++)
        step_at(&l, r, 399, T0 - S / 10);
    exited(&l, 0, T0, -1, 0, T0 + 5 * S);
    exited(&l, 1, T0, -1, 0, T0 + 5 * S);
    for (uint64_t now = 6; now < 70; now += 4)
        assert_int_equal(check(&l, T0 + now * S, &ctx, sum, ev, &rank, &cause), 0);
    exited(&l, 2, T0 + S / 5, -1, 0, T0 + 70 * S);
    exited(&l, 3, T0 + S / 5, -1, 0, T0 + 70 * S);
    assert_int_equal(check(&l, T0 + 71 * S, &ctx, sum, ev, &rank, &cause), 0);
    assert_int_equal(state_of(&l), ARGUS__V1__JOB_STATE__JOB_STATE_ENDED);
    diag_live_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hang_named_once),
        cmocka_unit_test(test_spinning_and_moving),
        cmocka_unit_test(test_slow_and_checkpoint_not_hung),
        cmocka_unit_test(test_stopped_inside_the_call),
        cmocka_unit_test(test_stopped_among_the_behind),
        cmocka_unit_test(test_bound_scaled_by_step_time),
        cmocka_unit_test(test_no_status_named),
        cmocka_unit_test(test_chain_of_waits),
        cmocka_unit_test(test_killed_then_others),
        cmocka_unit_test(test_clean_end_and_exit_error),
        cmocka_unit_test(test_unknown_ends),
        cmocka_unit_test(test_unknown_ends_caught_up),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
