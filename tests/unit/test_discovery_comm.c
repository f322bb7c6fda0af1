/* Rank discovery's process table (agent/discovery/discovery.c) for ranks
 * whose rank comes from the communicator they create
 * (torch.multiprocessing.spawn): watching, the communicator, the job from a
 * job variable, the store's address (agent/discovery/comm_job.h), an
 * ancestor or the parent, and the skips on the way. On a fake /proc tree
 * (tests/unit/discovery_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/discovery/discovery.h"
#include "tests/unit/discovery_fixture.h"

/* --- ranks from their communicator ------------------------------------------ */

static int watch_adds, watch_removes;

static void on_watch(void *ctx, uint32_t pid, const char *root, bool add)
{
    (void)ctx, (void)pid;
    assert_non_null(strstr(root, "/root"));
    watch_adds += add;
    watch_removes += !add;
}

static const struct discovery_callbacks watch_callbacks = {on_new, on_exit_cb, on_watch};

static int watch_scan(struct fake *f)
{
    return discovery_scan(f->d, &watch_callbacks, &f->ev);
}

/* Without the collectives probe, a process in a job without a rank
 * variable is skipped with its reason; a plain python is not a candidate. */
static void test_fake_no_watch(void **state)
{
    struct fake *f = *state;
    struct discovery_stats st;

    FAKE(f, 10, 1, 500, "python3", "ARGUS_JOB=j", "MASTER_PORT=1234");
    FAKE(f, 11, 1, 500, "python3", "PATH=/bin");
    assert_int_equal(scan(f), 0);
    assert_int_equal(scan(f), 0);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_NO_WATCH], 1);
    assert_int_equal(st.watched, 0);
    assert_string_equal(discovery_skip_name(DISCOVERY_SKIP_NO_WATCH), "no_communicator_probe");
    assert_string_equal(discovery_skip_name(DISCOVERY_SKIP_COUNT), "unknown");
}

/* torch.multiprocessing.spawn: the parent and its children are watched;
 * each child's communicator makes it a rank of the parent's job. */
static void test_fake_comm_init(void **state)
{
    struct fake *f = *state;
    struct discovery_stats st;

    watch_adds = watch_removes = 0;
    discovery_set_watching(f->d, true);
    FAKE(f, 10, 1, 500, "python3", "ARGUS_JOB=spawnjob");
    FAKE(f, 11, 10, 600, "python3", "ARGUS_JOB=spawnjob");
    FAKE(f, 12, 10, 600, "python3", "ARGUS_JOB=spawnjob");
    FAKE(f, 13, 1, 600, "sleep", "PATH=/bin"); /* neither in a job nor on the watch list */
    assert_int_equal(watch_scan(f), 0);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.watched, 3);
    assert_int_equal(watch_adds, 3);
    assert_int_equal(discovery_comm_init(f->d, 11, 1, 2, &watch_callbacks, &f->ev), 1);
    assert_int_equal(f->ev.news, 1);
    assert_int_equal(f->ev.last_new.rank, 1);
    assert_int_equal(f->ev.last_new.world_size, 2);
    assert_string_equal(f->ev.last_new.job, "spawnjob");
    assert_string_equal(f->ev.last_new.rank_source, "communicator");
    assert_int_equal(watch_removes, 1);
    assert_non_null(discovery_find(f->d, 11));
    /* a later communicator (a subgroup) changes nothing */
    assert_int_equal(discovery_comm_init(f->d, 11, 0, 1, &watch_callbacks, &f->ev), 0);
    assert_int_equal(discovery_find(f->d, 11)->rank, 1);
    /* a communicator that makes no sense is a skip with its reason */
    assert_int_equal(discovery_comm_init(f->d, 12, 2, 2, &watch_callbacks, &f->ev), 0);
    assert_null(discovery_find(f->d, 12));
    assert_int_equal(discovery_comm_init(f->d, 0, 0, 1, &watch_callbacks, &f->ev), -EINVAL);
    assert_int_equal(discovery_comm_init(f->d, 999, 0, 1, &watch_callbacks, &f->ev), 0);
    /* the parent launched a rank: its exit is no skip */
    fake_rm(f, 10);
    assert_int_equal(watch_scan(f), 1);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_COMMUNICATOR], 1);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_NO_RANK], 0);
    assert_int_equal(st.watched, 0);
    assert_int_equal(st.ranks, 1);
}

/* The job of a communicator rank whose environment names none: an
 * ancestor's variable, else the parent. Skips by reason. */
static void test_fake_comm_job_and_skips(void **state)
{
    struct fake *f = *state;
    struct discovery_stats st;

    discovery_set_watching(f->d, true);
    FAKE(f, 30, 1, 500, "torchrun", "TORCHELASTIC_RUN_ID=te");
    FAKE(f, 31, 30, 600, "python3", "PATH=/bin");
    FAKE(f, 40, 1, 500, "python3", "PATH=/bin");
    FAKE(f, 41, 40, 600, "python3.11", "PATH=/bin");
    FAKE(f, 50, 1, 500, "python3", "WORLD_SIZE=4");
    FAKE(f, 60, 1, 500, "python3", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500");
    assert_int_equal(watch_scan(f), 0);
    assert_int_equal(discovery_comm_init(f->d, 31, 0, 2, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "te");
    assert_string_equal(f->ev.last_new.job_source, "TORCHELASTIC_RUN_ID");
    assert_int_equal(discovery_comm_init(f->d, 41, 1, 2, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "job-40@node1");
    assert_string_equal(f->ev.last_new.job_source, "parent");
    assert_int_equal(discovery_comm_init(f->d, 60, 0, 8, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "torch-10.0.0.1:29500");
    /* collectives from a watched process: its communicator came before the
     * agent; counted once, and not again as no_rank when it exits */
    discovery_unidentified_call(f->d, 50);
    discovery_unidentified_call(f->d, 50);
    discovery_unidentified_call(f->d, 31); /* a rank: nothing */
    fake_rm(f, 50);
    assert_int_equal(watch_scan(f), 3);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_MISSED_INIT], 1);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_NO_RANK], 0);
    /* in a job, exits without a communicator and launched nothing */
    FAKE(f, 70, 1, 500, "python3", "WORLD_SIZE=4");
    assert_int_equal(watch_scan(f), 3);
    fake_rm(f, 70);
    assert_int_equal(watch_scan(f), 3);
    discovery_get_stats(f->d, &st);
    assert_int_equal(st.skipped[DISCOVERY_SKIP_NO_RANK], 1);
    assert_int_equal(st.watched, 1); /* 40 */
}

/* The store a spawned rank's process group uses names its job, the same on
 * every node: after a launcher's job variable, before MASTER_ADDR and the
 * parent. The last store before the communicator counts; a store without
 * an address (FileStore) forgets the one before. */
static void test_fake_comm_job_from_store(void **state)
{
    struct fake *f = *state;

    discovery_set_watching(f->d, true);
    FAKE(f, 10, 1, 500, "python3", "PATH=/bin"); /* a per-node spawner: no rendezvous variable */
    FAKE(f, 11, 10, 600, "python3", "PATH=/bin");
    FAKE(f, 12, 10, 600, "python3", "PATH=/bin");
    FAKE(f, 13, 10, 600, "python3", "MASTER_ADDR=10.0.0.9", "MASTER_PORT=1");
    FAKE(f, 20, 1, 500, "python3", "TORCHELASTIC_RUN_ID=te", "MASTER_ADDR=x", "MASTER_PORT=2");
    FAKE(f, 21, 20, 600, "python3", "PATH=/bin");
    FAKE(f, 30, 1, 500, "python3", "MASTER_ADDR=10.0.0.7", "MASTER_PORT=7");
    FAKE(f, 31, 30, 600, "python3", "PATH=/bin");
    FAKE(f, 32, 30, 600, "python3", "PATH=/bin");
    assert_int_equal(watch_scan(f), 0);
    assert_int_equal(discovery_rendezvous(f->d, 11, "10.0.0.1", 29500), 1);
    assert_int_equal(discovery_comm_init(f->d, 11, 0, 4, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "torch-10.0.0.1:29500");
    assert_string_equal(f->ev.last_new.job_source, "TCPStore");
    /* the last store counts; a loopback address is the node */
    assert_int_equal(discovery_rendezvous(f->d, 12, "10.0.0.1", 1), 1);
    assert_int_equal(discovery_rendezvous(f->d, 12, "127.0.0.1", 29500), 1);
    assert_int_equal(discovery_comm_init(f->d, 12, 1, 4, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "torch-node1:29500");
    /* the store beats the rank's own MASTER_ADDR */
    assert_int_equal(discovery_rendezvous(f->d, 13, "10.0.0.1", 29500), 1);
    assert_int_equal(discovery_comm_init(f->d, 13, 2, 4, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "torch-10.0.0.1:29500");
    /* a launcher's job variable of an ancestor beats the store */
    assert_int_equal(discovery_rendezvous(f->d, 21, "10.0.0.1", 29500), 1);
    assert_int_equal(discovery_comm_init(f->d, 21, 0, 2, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "te");
    assert_string_equal(f->ev.last_new.job_source, "TORCHELASTIC_RUN_ID");
    /* the store beats an ancestor's MASTER_ADDR; without a store, that one */
    assert_int_equal(discovery_rendezvous(f->d, 31, "10.0.0.1", 29500), 1);
    assert_int_equal(discovery_comm_init(f->d, 31, 0, 2, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "torch-10.0.0.1:29500");
    assert_int_equal(discovery_rendezvous(f->d, 32, "10.0.0.1", 29500), 1);
    assert_int_equal(discovery_rendezvous(f->d, 32, NULL, 0), 0); /* a FileStore after it */
    assert_int_equal(discovery_comm_init(f->d, 32, 1, 2, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "torch-10.0.0.7:7");
    assert_string_equal(f->ev.last_new.job_source, "MASTER_ADDR");
    /* a rank, an unknown pid: ignored; an address that names no job: an error */
    assert_int_equal(discovery_rendezvous(f->d, 11, "10.0.0.2", 1), 0);
    assert_string_equal(discovery_find(f->d, 11)->job, "torch-10.0.0.1:29500");
    assert_int_equal(discovery_rendezvous(f->d, 999, "10.0.0.2", 1), 0);
    assert_int_equal(discovery_rendezvous(f->d, 10, "bad\thost", 1), -EINVAL);
    assert_int_equal(discovery_rendezvous(f->d, 10, "10.0.0.2", 0), -EINVAL);
    assert_int_equal(discovery_rendezvous(NULL, 10, "10.0.0.2", 1), -EINVAL);
    assert_int_equal(discovery_rendezvous(f->d, 0, "10.0.0.2", 1), -EINVAL);
    /* no store at all: the parent, as before */
    FAKE(f, 14, 10, 600, "python3", "PATH=/bin");
    assert_int_equal(watch_scan(f), 6);
    assert_int_equal(discovery_comm_init(f->d, 14, 3, 4, &watch_callbacks, &f->ev), 1);
    assert_string_equal(f->ev.last_new.job, "job-10@node1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fake_no_watch, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_comm_init, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_comm_job_and_skips, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_fake_comm_job_from_store, fake_setup, fake_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
