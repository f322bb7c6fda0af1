/* agent/delivery/batcher with rank statuses: packed next to the steps and
 * unpacked whole from the sealed frame (Batch.statuses), the names their
 * collectives and stack reference in the batch's dictionary, a stalled
 * status due after max_age like a step, an exited one due at once; kernel
 * groups coded only while coding is on; kernel identity sets defined once
 * seen twice, referred to once acked, defined again after a reset. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/delivery/batcher.h"
#include "agent/delivery/drops.h"
#include "agent/delivery/ksets.h"
#include "agent/delivery/names.h"
#include "common/frame.h"
#include "common/kernel_code.h"
#include "common/name_id.h"
#include "proto/argus.pb-c.h"

#define MS 1000000ull

static Argus__V1__Batch *seal(struct batcher *b, uint64_t seq)
{
    void *frame = NULL, *raw = NULL;
    size_t len = 0, rawlen = 0;
    Argus__V1__Batch *batch;

    assert_int_equal(batcher_seal(b, 1, seq, &frame, &len), 0);
    assert_int_equal(frame_decode(frame, len, NULL, &raw, &rawlen, NULL), 0);
    batch = argus__v1__batch__unpack(NULL, rawlen, raw);
    assert_non_null(batch);
    free(raw);
    free(frame);
    return batch;
}

static const char *batch_name(const Argus__V1__Batch *batch, uint64_t id)
{
    for (size_t i = 0; i < batch->n_names; i++)
        if (batch->names[i]->id == id)
            return batch->names[i]->name;
    return NULL;
}

static void test_status_round_trip(void **state)
{
    struct batcher_options o = {"agent-1", 512, 1 << 20, 1000 * MS};
    struct names *names = names_new();
    struct batcher *b = batcher_new(&o, names, NULL);
    Argus__V1__StepRecord step = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__RankStatus s = ARGUS__V1__RANK_STATUS__INIT;
    Argus__V1__CommProgress comm = ARGUS__V1__COMM_PROGRESS__INIT;
    Argus__V1__CommProgress *comms[] = {&comm};
    uint64_t op = name_id("c10d::ProcessGroupGloo::allreduce"), leaf = name_id("read");
    uint64_t stack[] = {leaf, name_id("main")};
    Argus__V1__Batch *batch;

    names_define(names, op, "c10d::ProcessGroupGloo::allreduce");
    names_define(names, leaf, "read");
    names_define(names, stack[1], "main");
    step.job = "job-a";
    step.rank = 1;
    step.step = 40;
    assert_int_equal(batcher_add_step(b, &step, 10 * MS), 0);
    s.job = "job-a";
    s.rank = 2;
    s.pid = 4242;
    s.state = ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED;
    s.wait = "read";
    s.cpu_permille = 3;
    comm.comm_id = 0xabcd;
    comm.entered_seq = 812;
    comm.done_seq = 811;
    comm.name_id = op;
    s.n_comms = 1;
    s.comms = comms;
    s.n_stack = 2;
    s.stack = stack;
    assert_int_equal(batcher_add_status(b, &s, 20 * MS), 0);
    /* a stalled status waits like a step: max_age from the first entry */
    assert_false(batcher_due(b, 500 * MS));
    assert_int_equal(batcher_next_ns(b), 1010 * MS);
    assert_true(batcher_due(b, 1010 * MS));
    batch = seal(b, 1);
    assert_int_equal(batch->n_steps, 1);
    assert_int_equal(batch->steps[0]->step, 40);
    assert_int_equal(batch->n_statuses, 1);
    assert_string_equal(batch->statuses[0]->job, "job-a");
    assert_int_equal(batch->statuses[0]->rank, 2);
    assert_int_equal(batch->statuses[0]->pid, 4242);
    assert_int_equal(batch->statuses[0]->state, ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED);
    assert_string_equal(batch->statuses[0]->wait, "read");
    assert_int_equal(batch->statuses[0]->n_comms, 1);
    assert_int_equal(batch->statuses[0]->comms[0]->entered_seq, 812);
    assert_int_equal(batch->statuses[0]->comms[0]->done_seq, 811);
    assert_int_equal(batch->statuses[0]->n_stack, 2);
    assert_int_equal(batch->statuses[0]->stack[0], leaf);
    assert_string_equal(batch_name(batch, op), "c10d::ProcessGroupGloo::allreduce");
    assert_string_equal(batch_name(batch, leaf), "read");
    assert_string_equal(batch_name(batch, stack[1]), "main");
    argus__v1__batch__free_unpacked(batch, NULL);
    /* an exited status alone: due at once */
    assert_false(batcher_due(b, 2000 * MS));
    s.exited = true;
    s.exit_signal = 9;
    s.exit_code = -1;
    s.n_stack = 0;
    assert_int_equal(batcher_add_status(b, &s, 2000 * MS), 0);
    assert_true(batcher_due(b, 2000 * MS));
    batch = seal(b, 2);
    assert_int_equal(batch->n_steps, 0);
    assert_int_equal(batch->n_statuses, 1);
    assert_true(batch->statuses[0]->exited);
    assert_int_equal(batch->statuses[0]->exit_signal, 9);
    assert_int_equal(batch->statuses[0]->exit_code, -1);
    argus__v1__batch__free_unpacked(batch, NULL);
    assert_false(batcher_due(b, 5000 * MS));
    assert_int_equal(batcher_seal(b, 1, 3, &(void *){NULL}, &(size_t){0}), -ENODATA);
    batcher_free(b);
    names_free(names);
}

/* What a sealed batch holds, for routing it: the distinct jobs of its
 * steps, statuses and resources; jobless with a trace, or with nothing but
 * drop counters. */
static void test_sealed_jobs(void **state)
{
    struct batcher_options o = {"agent-1", 512, 1 << 20, 1000 * MS};
    struct names *names = names_new();
    struct drops *drops = drops_new();
    struct batcher *b = batcher_new(&o, names, drops);
    Argus__V1__StepRecord step = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__RankStatus st = ARGUS__V1__RANK_STATUS__INIT;
    Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT;
    struct batcher_sealed sealed;
    Argus__V1__Batch *batch;

    step.job = "job-a";
    assert_int_equal(batcher_add_step(b, &step, MS), 0);
    step.job = "job-b";
    assert_int_equal(batcher_add_step(b, &step, MS), 0);
    step.job = "job-a";
    assert_int_equal(batcher_add_step(b, &step, MS), 0);
    st.job = "job-c";
    assert_int_equal(batcher_add_status(b, &st, MS), 0);
    batch = seal(b, 1);
    argus__v1__batch__free_unpacked(batch, NULL);
    batcher_last_sealed(b, &sealed);
    assert_int_equal(sealed.njobs, 3);
    assert_false(sealed.jobless);
    assert_string_equal(names_job_name(names, sealed.jobs[0]), "job-a");
    assert_string_equal(names_job_name(names, sealed.jobs[1]), "job-b");
    assert_string_equal(names_job_name(names, sealed.jobs[2]), "job-c");
    /* a resource of job-d rides along with a step of job-a: both jobs */
    res.job = "job-d";
    res.node = "n";
    res.gpu_uuid = "";
    assert_int_equal(names_set_resource(names, &res), 0);
    assert_int_equal(batcher_add_step(b, &step, 2 * MS), 0);
    argus__v1__batch__free_unpacked(seal(b, 2), NULL);
    batcher_last_sealed(b, &sealed);
    assert_int_equal(sealed.njobs, 2);
    assert_string_equal(names_job_name(names, sealed.jobs[1]), "job-d");
    names_ack(names, 2);
    /* a trace: jobless; drop counters alone: jobless, no job */
    assert_int_equal(batcher_add_trace(b, "", 0), 0); /* an empty TraceWindow */
    assert_int_equal(batcher_add_step(b, &step, 3 * MS), 0);
    argus__v1__batch__free_unpacked(seal(b, 3), NULL);
    batcher_last_sealed(b, &sealed);
    assert_true(sealed.jobless);
    assert_int_equal(sealed.njobs, 1);
    drops_add(drops, "x", NULL, -1, 1);
    argus__v1__batch__free_unpacked(seal(b, 4), NULL);
    batcher_last_sealed(b, &sealed);
    assert_true(sealed.jobless);
    assert_int_equal(sealed.njobs, 0);
    batcher_free(b);
    drops_free(drops);
    names_free(names);
}

/* Kernel groups are coded only while coding is on (every collector read it,
 * batcher_set_coding): off, the record goes as it is; a batch may hold both
 * forms and the collector's expansion gives the same groups back. */
static void test_coding_switch(void **state)
{
    struct batcher_options o = {"agent-1", 512, 1 << 20, 1000 * MS};
    struct names *names = names_new();
    struct batcher *b = batcher_new(&o, names, NULL);
    Argus__V1__StepRecord step = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__KernelGroup g = ARGUS__V1__KERNEL_GROUP__INIT, *gs[] = {&g};
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cs[] = {&c};
    Argus__V1__Batch *batch;

    (void)state;
    c.count = 12;
    c.sum_ns = 12 * 1500;
    c.p50_ns = 1500;
    c.p99_ns = 1800;
    g.name_id = name_id("gemm");
    g.stream = 7;
    g.n_clusters = 1;
    g.clusters = cs;
    step.job = "job-a";
    step.n_kernels = 1;
    step.kernels = gs;
    assert_int_equal(batcher_add_step(b, &step, 10 * MS), 0); /* off at first */
    batcher_set_coding(b, true);
    step.step = 1;
    assert_int_equal(batcher_add_step(b, &step, 11 * MS), 0);
    batcher_set_coding(b, false);
    step.step = 2;
    assert_int_equal(batcher_add_step(b, &step, 12 * MS), 0);
    batch = seal(b, 1);
    assert_int_equal(batch->n_steps, 3);
    assert_int_equal(batch->steps[0]->n_kernels, 1);
    assert_int_equal(batch->steps[0]->packed_kernels.len, 0);
    assert_int_equal(batch->steps[1]->n_kernels, 0);
    assert_true(batch->steps[1]->packed_kernels.len > 0);
    assert_int_equal(batch->steps[2]->n_kernels, 1);
    assert_int_equal(batch->steps[2]->packed_kernels.len, 0);
    assert_int_equal(kernel_code_expand_batch(batch, 64, 16, NULL), 1);
    assert_int_equal(batch->steps[1]->n_kernels, 1);
    assert_int_equal(batch->steps[1]->kernels[0]->stream, 7);
    assert_int_equal(batch->steps[1]->kernels[0]->clusters[0]->p99_ns, 1800);
    argus__v1__batch__free_unpacked(batch, NULL);
    batcher_free(b);
    names_free(names);
}

/* With kernel sets on: a set seen once goes whole, seen again it is
 * defined in every batch until one that defined it is acked, then referred
 * to (only clusters); a reset (a collector joined) defines it again; with
 * sets off nothing is defined or referred to. */
static void test_kernel_sets(void **state)
{
    struct batcher_options o = {"agent-1", 512, 1 << 20, 1000 * MS};
    struct names *names = names_new();
    struct batcher *b = batcher_new(&o, names, NULL);
    Argus__V1__StepRecord step = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__KernelGroup g[2] = {ARGUS__V1__KERNEL_GROUP__INIT, ARGUS__V1__KERNEL_GROUP__INIT};
    Argus__V1__KernelGroup *gs[] = {&g[0], &g[1]};
    Argus__V1__Cluster c = ARGUS__V1__CLUSTER__INIT, *cs[] = {&c};
    /* what each batch of one step carries: (defines, refers) */
    static const bool want[][2] = {{0, 0}, {1, 0}, {1, 0}, {0, 1}, {1, 0}, {0, 0}};
    struct batcher_stats st;
    uint64_t set;
    size_t held;

    (void)state;
    c.count = 12;
    c.sum_ns = 12 * 1500;
    c.p50_ns = 1500;
    c.p99_ns = 1800;
    for (int i = 0; i < 2; i++) {
        g[i].name_id = name_id(i ? "gemm" : "softmax");
        g[i].stream = 7;
        g[i].work_id = 40 + (uint32_t)i;
        g[i].n_clusters = 1;
        g[i].clusters = cs;
    }
    step.job = "job-a";
    step.n_kernels = 2;
    step.kernels = gs;
    set = kernel_code_record_set(&step);
    batcher_set_coding(b, true);
    batcher_set_kernel_sets(b, true);
    for (uint64_t k = 0; k < 6; k++) {
        Argus__V1__Batch *batch;

        if (k == 3)
            names_ack(names, 2); /* batch 2 defined it */
        if (k == 4)
            names_reset(names);
        if (k == 5)
            batcher_set_kernel_sets(b, false);
        step.step = k;
        assert_int_equal(batcher_add_step(b, &step, (10 + k) * MS), 0);
        batch = seal(b, k + 1);
        assert_int_equal(batch->n_steps, 1);
        assert_true(batch->steps[0]->packed_kernels.len > 0);
        assert_int_equal(batch->steps[0]->packed_kernels_as_set, want[k][1]);
        assert_int_equal(batch->steps[0]->packed_kernels_set, want[k][0] || want[k][1] ? set : 0);
        argus__v1__batch__free_unpacked(batch, NULL);
    }
    batcher_get_stats(b, &st);
    assert_int_equal(st.sets_referred, 1);
    assert_int_equal(ksets_count(names_ksets(names), &held), 1);
    assert_int_equal(held, 0); /* reset, and batch 5 not acked */
    names_ack(names, 5);
    ksets_count(names_ksets(names), &held);
    assert_int_equal(held, 1);
    batcher_free(b);
    names_free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_round_trip),
        cmocka_unit_test(test_sealed_jobs),
        cmocka_unit_test(test_coding_switch),
        cmocka_unit_test(test_kernel_sets),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
