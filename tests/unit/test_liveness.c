/* agent/liveness/liveness: the stage on a real child process (blocked in a
 * read, then killed and left a zombie), with times passed in: nothing while
 * it progresses, a first status after status.after with its process state,
 * the syscall, where it stands in its communicator and its last stack,
 * then one per interval, one moving status when it progresses again, an
 * exited status with the signal when it dies; exits the proc probe reports
 * (code, signal) and a clean one; the counters by state and by how. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/liveness/liveness.h"
#include "agent/liveness/procstate.h"

#define SEC 1000000000ull
#define GLOO 0x1000
#define GROUP 0xabcd

struct got {
    Argus__V1__RankStatus s;
    char job[32], wait[32];
    Argus__V1__CommProgress comm;
    uint64_t stack0;
};

static struct {
    struct got got[16];
    size_t n;
} fake;

static void fake_emit(void *ctx, const Argus__V1__RankStatus *s)
{
    struct got *g = &fake.got[fake.n++];

    g->s = *s;
    snprintf(g->job, sizeof(g->job), "%s", s->job);
    snprintf(g->wait, sizeof(g->wait), "%s", s->wait);
    if (s->n_comms)
        g->comm = *s->comms[0];
    g->stack0 = s->n_stack ? s->stack[0] : 0;
    g->s.comms = NULL; /* valid during the call only */
    g->s.stack = NULL;
}

static size_t fake_stack(void *ctx, uint32_t pid, uint64_t *ids, size_t max)
{
    ids[0] = 0x5eed;
    ids[1] = 0xf00d;
    return 2;
}

static struct clock_offset offset = {.n = 1, .at[0] = {0, (int64_t)(1000 * SEC)}};

static struct liveness *new_liveness(void)
{
    memset(&fake, 0, sizeof(fake));
    return liveness_new(&(struct liveness_options){.after_ns = 5 * SEC,
                                                   .interval_ns = 5 * SEC,
                                                   .clock = &offset,
                                                   .emit = fake_emit,
                                                   .stack = fake_stack});
}

/* A child blocked in a read of a pipe nobody writes. */
static pid_t blocked_child(int fds[2])
{
    pid_t pid;
    char c;
    struct procstate st = {0};

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[1]);
        _exit(read(fds[0], &c, 1) == 1 ? 0 : 1);
    }
    for (int i = 0; i < 500 && st.state != 'S'; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        assert_int_equal(procstate_read((uint32_t)pid, &st), 0);
    }
    return pid;
}

static void test_stalled_moving_killed(void **state)
{
    struct liveness *lv = new_liveness();
    struct liveness_stats stats;
    int fds[2];
    pid_t pid = blocked_child(fds);
    uint32_t p = (uint32_t)pid;

    assert_int_equal(liveness_track(lv, p, "job-a", 2, 4, 0), 0);
    liveness_set_restart(lv, p, 3);
    liveness_set_restart(lv, p + 1, 9); /* not tracked: nothing */
    liveness_call(lv, p, &(struct progress_call){1 * SEC, GLOO, GROUP, 812, 77, 0});
    liveness_done(lv, p, GLOO, 811, 1 * SEC);
    liveness_tick(lv, 3 * SEC);
    liveness_tick(lv, 5 * SEC);
    assert_int_equal(fake.n, 0);
    liveness_tick(lv, 6 * SEC); /* 5 s without progress */
    assert_int_equal(fake.n, 1);
    assert_string_equal(fake.got[0].job, "job-a");
    assert_int_equal(fake.got[0].s.rank, 2);
    assert_int_equal(fake.got[0].s.pid, p);
    assert_int_equal(fake.got[0].s.restart, 3);
    assert_int_equal(fake.got[0].s.state, ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING);
    if (geteuid() == 0 && procstate_host_arch() != PROCSTATE_ARCH_OTHER)
        assert_string_equal(fake.got[0].wait, "read");
    assert_true(fake.got[0].s.cpu_permille < 200); /* blocked: next to no CPU */
    assert_int_equal(fake.got[0].s.at_unix_ns, 1006 * SEC);
    assert_int_equal(fake.got[0].s.n_comms, 1);
    assert_int_equal(fake.got[0].comm.comm_id, GROUP);
    assert_int_equal(fake.got[0].comm.entered_seq, 812);
    assert_int_equal(fake.got[0].comm.entered_unix_ns, 1001 * SEC);
    assert_int_equal(fake.got[0].comm.done_seq, 811);
    assert_int_equal(fake.got[0].comm.name_id, 77);
    assert_false(fake.got[0].comm.seq_local);
    assert_int_equal(fake.got[0].s.n_stack, 2);
    assert_int_equal(fake.got[0].stack0, 0x5eed);
    assert_int_equal(fake.got[0].s.last_progress_unix_ns, 1001 * SEC);
    assert_false(fake.got[0].s.moving);
    assert_false(fake.got[0].s.exited);
    liveness_tick(lv, 7 * SEC);
    assert_int_equal(fake.n, 1);
    liveness_tick(lv, 11 * SEC); /* the interval */
    assert_int_equal(fake.n, 2);
    liveness_step(lv, p, 9, 12 * SEC);
    liveness_tick(lv, 12 * SEC);
    assert_int_equal(fake.n, 3);
    assert_true(fake.got[2].s.moving);
    assert_true(fake.got[2].s.has_step);
    assert_int_equal(fake.got[2].s.last_step, 9);
    /* killed, not reaped: the zombie says how */
    kill(pid, SIGKILL);
    for (int i = 0; i < 500 && fake.n == 3; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        liveness_tick(lv, 20 * SEC);
    }
    assert_int_equal(fake.n, 4);
    assert_true(fake.got[3].s.exited);
    assert_int_equal(fake.got[3].s.state, ARGUS__V1__PROC_STATE__PROC_STATE_EXITED);
    assert_int_equal(fake.got[3].s.exit_signal, SIGKILL);
    assert_int_equal(fake.got[3].s.exit_code, -1);
    assert_int_equal(fake.got[3].comm.entered_seq, 812);
    liveness_get_stats(lv, &stats);
    assert_int_equal(stats.statuses[ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING], 3);
    assert_int_equal(stats.statuses[ARGUS__V1__PROC_STATE__PROC_STATE_EXITED], 1);
    assert_int_equal(stats.exits[LIVENESS_EXIT_SIGNAL], 1);
    liveness_tick(lv, 30 * SEC); /* forgotten: nothing more */
    liveness_exit(lv, p, -1, 0, false, 30 * SEC);
    assert_int_equal(fake.n, 4);
    waitpid(pid, NULL, 0);
    close(fds[0]);
    close(fds[1]);
    liveness_free(lv);
}

/* The proc probe's exits: at once, whatever the progress; counted by how. */
static void test_exits(void **state)
{
    struct liveness *lv = new_liveness();
    struct liveness_stats stats;

    assert_int_equal(liveness_track(lv, 900001, "job-b", 0, 2, 0), 0);
    assert_int_equal(liveness_track(lv, 900002, "job-b", 1, 2, 0), 0);
    assert_int_equal(liveness_track(lv, 900003, "job-b", 2, 2, 0), 0);
    liveness_call(lv, 900004, &(struct progress_call){1 * SEC, GLOO, GROUP, 0, 77, 0});
    liveness_exit(lv, 900001, 3, 0, false, 2 * SEC);
    liveness_exit(lv, 900002, 0, 0, false, 2 * SEC);
    liveness_exit(lv, 900003, -1, 6, true, 2 * SEC);
    liveness_exit(lv, 900004, 0, 0, false, 2 * SEC); /* not a rank: no status */
    assert_int_equal(fake.n, 3);
    assert_int_equal(fake.got[0].s.exit_code, 3);
    assert_int_equal(fake.got[0].s.exit_signal, 0);
    assert_int_equal(fake.got[0].s.exit_unix_ns, 1002 * SEC);
    assert_int_equal(fake.got[1].s.exit_code, 0);
    assert_int_equal(fake.got[2].s.exit_code, -1);
    assert_int_equal(fake.got[2].s.exit_signal, 6);
    assert_true(fake.got[2].s.core_dumped);
    liveness_get_stats(lv, &stats);
    assert_int_equal(stats.exits[LIVENESS_EXIT_ERROR], 1);
    assert_int_equal(stats.exits[LIVENESS_EXIT_CLEAN], 1);
    assert_int_equal(stats.exits[LIVENESS_EXIT_SIGNAL], 1);
    assert_int_equal(stats.exits[LIVENESS_EXIT_UNKNOWN], 0);
    assert_string_equal(liveness_how_name(LIVENESS_EXIT_UNKNOWN), "unknown");
    assert_string_equal(liveness_state_name(ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED), "stopped");
    liveness_free(lv);
}

/* A rank whose process is gone, found by the tick (no proc probe): an
 * exited status, how unknown. */
static void test_gone(void **state)
{
    struct liveness *lv = new_liveness();
    pid_t pid = fork();
    struct liveness_stats stats;

    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_int_equal(liveness_track(lv, (uint32_t)pid, "job-c", 1, 2, 0), 0);
    liveness_tick(lv, 2 * SEC);
    assert_int_equal(fake.n, 1);
    assert_true(fake.got[0].s.exited);
    assert_int_equal(fake.got[0].s.exit_code, -1);
    assert_int_equal(fake.got[0].s.exit_signal, 0);
    liveness_get_stats(lv, &stats);
    assert_int_equal(stats.exits[LIVENESS_EXIT_UNKNOWN], 1);
    liveness_free(lv);
}

/* A replayed rank (a pid beyond the kernel's) has no /proc: quiet, it is
 * not taken for gone; stalled, its status says state unknown; only its
 * exit event ends it (the replay ran out: cleanly). */
static void test_replayed_rank(void **state)
{
    struct liveness *lv = new_liveness();
    struct liveness_stats stats;
    uint32_t pid = LIVENESS_PID_LIMIT + 7;

    assert_int_equal(liveness_track(lv, pid, "job-r", 3, 8, 0), 0);
    liveness_step(lv, pid, 1, SEC);
    liveness_tick(lv, 3 * SEC);
    assert_int_equal(fake.n, 0);
    liveness_tick(lv, 6 * SEC); /* 5 s without progress */
    assert_int_equal(fake.n, 1);
    assert_false(fake.got[0].s.exited);
    assert_int_equal(fake.got[0].s.state, ARGUS__V1__PROC_STATE__PROC_STATE_UNKNOWN);
    liveness_exit(lv, pid, 0, 0, false, 7 * SEC);
    assert_int_equal(fake.n, 2);
    assert_true(fake.got[1].s.exited);
    assert_int_equal(fake.got[1].s.exit_code, 0);
    liveness_get_stats(lv, &stats);
    assert_int_equal(stats.read_errors, 0);
    assert_int_equal(stats.exits[LIVENESS_EXIT_CLEAN], 1);
    liveness_free(lv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stalled_moving_killed),
        cmocka_unit_test(test_exits),
        cmocka_unit_test(test_gone),
        cmocka_unit_test(test_replayed_rank),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
