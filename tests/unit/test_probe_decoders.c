/* The probes' pure decode functions on synthetic records (no kernel), and
 * the supported() checks (they read the kernel BTF file). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <bpf/bpf.h>
#include <cmocka.h>
#include <unistd.h>

#include "agent/probes/coll_ident.h"
#include "agent/probes/probe_collectives.h"
#include "agent/probes/probe_common.h"
#include "agent/probes/probe_marker.h"
#include "agent/probes/probe_proc.h"
#include "agent/probes/probe_sched.h"
#include "agent/probes/probe_stacks.h"
#include "agent/probes/probe_sync.h"
#include "bpf/calls.h"
#include "bpf/marker.h"
#include "bpf/proc.h"
#include "bpf/sched.h"
#include "common/name_id.h"

static void test_collectives_allreduce(void **state)
{
    /* cookie 0 = ncclAllReduce(send, recv, count, dtype, op, comm, stream) */
    struct argus_call_record r = {.cookie = 0, .args = {1, 2, 1024, 7, 0, 0xc0ffee, 0x5555}};
    struct probe_collectives_call c;

    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_string_equal(c.name, "ncclAllReduce");
    assert_true(c.name_id == name_id("ncclAllReduce"));
    assert_int_equal(c.count, 1024);
    assert_int_equal(c.bytes, 4096);
    assert_int_equal(c.comm, 0xc0ffee);
    assert_int_equal(c.stream, 0x5555);
    r.cookie = 1000;
    assert_int_equal(probe_collectives_decode(&r, &c), -EINVAL);
}

static void test_collectives_c10d(void **state)
{
    /* cookie 11 = ProcessGroupGloo::allreduce(sret, this, tensors, opts) */
    struct argus_call_record r = {.cookie = 11, .args = {0x7ffe0000, 0x5550000, 0x7ffe0100}};
    struct probe_collectives_call c;

    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_string_equal(c.name, "c10d::ProcessGroupGloo::allreduce");
    assert_int_equal(c.comm, 0x5550000); /* `this`, not the hidden return slot */
    assert_int_equal(c.bytes, 0);
    assert_true(c.c10d);
    assert_false(c.wait);
}

/* The cookie of a collectives function by its name. */
static uint64_t collectives_cookie(const char *name)
{
    struct argus_call_record r = {0};
    struct probe_collectives_call c;

    for (r.cookie = 0; probe_collectives_decode(&r, &c) == 0; r.cookie++)
        if (!strcmp(c.name, name))
            return r.cookie;
    fail_msg("no collectives function %s", name);
    return 0;
}

/* ncclCommInitRank(comm *, nranks, id (on the stack: args 6 and 7 hold its
 * first 16 bytes), rank): every member's id bytes give the same group id;
 * the c10d identity and end functions are flagged, their object in comm. */
static void test_collectives_identity(void **state)
{
    struct argus_call_record r = {
        .cookie = collectives_cookie("ncclCommInitRank"),
        .args = {0x7ffd00, 4, 2, 0, 0, 0, 0x1122334455667788ULL, 0x99aabbccddeeff00ULL}};
    struct probe_collectives_call c;
    uint64_t group;

    (void)state;
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.init);
    assert_int_equal(c.init_rank, 2);
    assert_int_equal(c.init_size, 4);
    assert_true(c.group == coll_ident_hash(&r.args[6], 16, 4));
    group = c.group;
    r.args[2] = 3; /* another member */
    r.args[0] = 0x7ffe80;
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.group == group);
    r.args[7] ^= 1; /* another communicator */
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.group != group);
    r = (struct argus_call_record){.cookie = collectives_cookie("c10d::PrefixStore::PrefixStore"),
                                   .args = {0x5550000, 0x7ffd00}};
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.store && !c.work && !c.done && !c.init && !c.c10d);
    assert_int_equal(c.comm, 0x5550000);
    r.cookie = collectives_cookie("c10d::ProcessGroupGloo::AsyncWork::AsyncWork");
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.work && !c.store && !c.done);
    r.cookie = collectives_cookie("c10d::ProcessGroupGloo::AsyncWork::finishWorkGloo");
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.done && !c.work);
    assert_int_equal(c.comm, 0x5550000);
    assert_int_equal(c.done_ns, 0); /* filled by the probe, not the decoder */
}

/* The stores a process group is made over: TCPStore's host and port, read
 * by the kernel at entry into a text record; FileStore has no address. */
static void test_collectives_rendezvous(void **state)
{
    struct argus_call_text t = {
        .call = {.cookie = collectives_cookie("c10d::TCPStore::TCPStore") | ARGUS_CALL_TEXT,
                 .args = {0x5550000, 0x7ffd00, 0x7ffd40}},
        .word = 0x0000000100007530, /* TCPStoreOptions: port 30000, isServer 1 */
        .len = 8,
        .text = "10.0.0.1"};
    struct probe_collectives_call c;
    char host[64];
    uint16_t port = 0;

    assert_int_equal(probe_collectives_decode(&t.call, &c), 0);
    assert_true(c.rendezvous && !c.store && !c.init && !c.c10d);
    assert_string_equal(c.name, "c10d::TCPStore::TCPStore");
    assert_int_equal(probe_collectives_rendezvous(&t, host, sizeof(host), &port), 0);
    assert_string_equal(host, "10.0.0.1");
    assert_int_equal(port, 30000);
    /* a host longer than the record kept, or than the caller's buffer */
    t.len = 300;
    assert_int_equal(probe_collectives_rendezvous(&t, host, sizeof(host), &port), -ENAMETOOLONG);
    t.len = 8;
    assert_int_equal(probe_collectives_rendezvous(&t, host, 8, &port), -ENAMETOOLONG);
    /* unreadable (the kernel left it empty), not text, not NUL-terminated */
    t.text[0] = 0;
    assert_int_equal(probe_collectives_rendezvous(&t, host, sizeof(host), &port), -ENODATA);
    memcpy(t.text, "10.0 0.1", 9);
    assert_int_equal(probe_collectives_rendezvous(&t, host, sizeof(host), &port), -EINVAL);
    memset(t.text, 'a', sizeof(t.text));
    t.len = sizeof(t.text);
    assert_int_equal(probe_collectives_rendezvous(&t, host, sizeof(host), &port), -EINVAL);
    /* not a text record */
    t.call.cookie &= ~ARGUS_CALL_TEXT;
    assert_int_equal(probe_collectives_rendezvous(&t, host, sizeof(host), &port), -EINVAL);
    struct argus_call_record r = {.cookie = collectives_cookie("c10d::FileStore::FileStore")};
    assert_int_equal(probe_collectives_decode(&r, &c), 0);
    assert_true(c.rendezvous && !c.store);
}

static void test_collectives_dtypes(void **state)
{
    assert_int_equal(probe_collectives_dtype_size(0), 1);
    assert_int_equal(probe_collectives_dtype_size(6), 2);
    assert_int_equal(probe_collectives_dtype_size(8), 8);
    assert_int_equal(probe_collectives_dtype_size(9), 2);
    assert_int_equal(probe_collectives_dtype_size(99), 0);
}

static void test_sync_decode(void **state)
{
    struct argus_call_record r = {.enter_ns = 1000, .exit_ns = 21000, .cookie = 2, .args = {0x77}};
    struct probe_sync_call c;

    assert_int_equal(probe_sync_decode(&r, &c), 0);
    assert_string_equal(c.name, "cudaStreamSynchronize");
    assert_int_equal(c.counter, AGENT_COUNTER_SYNC_WAIT_NS);
    assert_int_equal(c.wait_ns, 20000);
    assert_int_equal(c.stream, 0x77);
    assert_false(c.driver);
    r.cookie = 4; /* cudaMalloc(ptr, size) */
    r.args[1] = 1 << 20;
    assert_int_equal(probe_sync_decode(&r, &c), 0);
    assert_int_equal(c.counter, AGENT_COUNTER_ALLOC_NS);
    assert_int_equal(c.alloc_bytes, 1 << 20);
    r.exit_ns = 10; /* before entry */
    assert_int_equal(probe_sync_decode(&r, &c), -EINVAL);
}

static void test_marker_decode(void **state)
{
    struct argus_marker_record r = {.ts_ns = 5, .kind = ARGUS_MARKER_STEP, .pid = 9, .step = 42};
    struct agent_event ev;
    const char *name;

    assert_int_equal(probe_marker_decode(&r, &ev, &name), 0);
    assert_int_equal(ev.kind, AGENT_EVENT_STEP);
    assert_int_equal(ev.step.number, 42);
    assert_int_equal(ev.step.source, PROBE_MARKER_STEP_SOURCE);
    r.kind = ARGUS_MARKER_PHASE_BEGIN;
    strcpy(r.name, "forward");
    r.name_len = 8;
    assert_int_equal(probe_marker_decode(&r, &ev, &name), 0);
    assert_int_equal(ev.kind, AGENT_EVENT_PHASE_BEGIN);
    assert_true(ev.phase.name_id == name_id("forward"));
    assert_string_equal(name, "forward");
    r.name_len = -14; /* unreadable pointer */
    assert_int_equal(probe_marker_decode(&r, &ev, &name), -EINVAL);
    r.kind = ARGUS_MARKER_PHASE_END;
    assert_int_equal(probe_marker_decode(&r, &ev, &name), 0);
    assert_int_equal(ev.kind, AGENT_EVENT_PHASE_END);
    r.kind = 99;
    assert_int_equal(probe_marker_decode(&r, &ev, &name), -EINVAL);
}

static void test_proc_decode(void **state)
{
    struct argus_proc_event r = {.ts_ns = 7, .kind = ARGUS_PROC_EXIT, .pid = 1234};
    struct agent_event ev;

    assert_int_equal(probe_proc_decode(&r, &ev), 0);
    assert_int_equal(ev.kind, AGENT_EVENT_PROC_EXIT);
    assert_int_equal(ev.pid, 1234);
    assert_int_equal(ev.exit.code, 0);
    assert_int_equal(ev.exit.signal, 0);
    r.exit_code = 3 << 8; /* sys.exit(3) */
    assert_int_equal(probe_proc_decode(&r, &ev), 0);
    assert_int_equal(ev.exit.code, 3);
    assert_int_equal(ev.exit.signal, 0);
    assert_false(ev.exit.core);
    r.exit_code = 9; /* kill -9 */
    assert_int_equal(probe_proc_decode(&r, &ev), 0);
    assert_int_equal(ev.exit.code, -1);
    assert_int_equal(ev.exit.signal, 9);
    assert_false(ev.exit.core);
    r.exit_code = 6 | 0x80; /* abort() with a core dump */
    assert_int_equal(probe_proc_decode(&r, &ev), 0);
    assert_int_equal(ev.exit.code, -1);
    assert_int_equal(ev.exit.signal, 6);
    assert_true(ev.exit.core);
    r.kind = ARGUS_PROC_EXEC;
    assert_int_equal(probe_proc_decode(&r, &ev), 0);
    assert_int_equal(ev.kind, AGENT_EVENT_PROC_EXEC);
    r.kind = 0;
    assert_int_equal(probe_proc_decode(&r, &ev), -EINVAL);
}

static void test_sched_decode(void **state)
{
    struct argus_sched_delta d = {.off_cpu_ns = 300, .runq_ns = 0, .tgid = 5, .tid = 6};
    struct agent_event ev[2];

    assert_int_equal(probe_sched_decode(&d, 77, ev), 1);
    assert_int_equal(ev[0].kind, AGENT_EVENT_COUNTER);
    assert_int_equal(ev[0].counter.counter, AGENT_COUNTER_OFF_CPU_NS);
    assert_int_equal(ev[0].counter.value, 300);
    assert_int_equal(ev[0].pid, 5);
    assert_int_equal(ev[0].tid, 6);
    assert_int_equal(ev[0].ts_ns, 77);
    d.runq_ns = 40;
    assert_int_equal(probe_sched_decode(&d, 77, ev), 2);
    assert_int_equal(ev[1].counter.counter, AGENT_COUNTER_RUNQ_NS);
    assert_int_equal(ev[1].counter.value, 40);
    assert_int_equal(ev[1].tid, 6);
    d.off_cpu_ns = 0;
    assert_int_equal(probe_sched_decode(&d, 77, ev), 1);
    assert_int_equal(ev[0].counter.counter, AGENT_COUNTER_RUNQ_NS);
    d.runq_ns = 0; /* back on a CPU with no time off it: nothing */
    assert_int_equal(probe_sched_decode(&d, 77, ev), 0);
}

static void test_counter_decode(void **state)
{
    struct agent_event ev;

    assert_int_equal(probe_counter_decode(0, 500, 200, AGENT_COUNTER_IO_WAIT_NS, 9, &ev), 1);
    assert_int_equal(ev.pid, 0);
    assert_int_equal(ev.counter.counter, AGENT_COUNTER_IO_WAIT_NS);
    assert_int_equal(ev.counter.value, 300);
    assert_int_equal(probe_counter_decode(3, 200, 200, AGENT_COUNTER_IO_WAIT_NS, 9, &ev), 0);
}

static void test_stacks_aggregate(void **state)
{
    struct probe_stacks_sample s[4] = {
        {.ts_ns = 10, .pid = 1, .nframes = 3, .frames = {5, 6, 7}},
        {.ts_ns = 20, .pid = 1, .nframes = 3, .frames = {5, 6, 7}},
        {.ts_ns = 30, .pid = 1, .nframes = 3, .frames = {8, 6, 6}}, /* recursion counts once */
        {.ts_ns = 40, .pid = 2, .nframes = 1, .frames = {5}},
    };
    uint64_t self[10] = {0}, total[10] = {0};

    assert_int_equal(probe_stacks_aggregate(s, 4, 1, 0, 35, self, total, 10), 3);
    assert_int_equal(self[5], 2);
    assert_int_equal(self[8], 1);
    assert_int_equal(total[6], 3);
    assert_int_equal(total[7], 2);
    memset(self, 0, sizeof(self));
    memset(total, 0, sizeof(total));
    assert_int_equal(probe_stacks_aggregate(s, 4, 1, 15, 25, self, total, 10), 1);
}

static void test_lib_matches(void **state)
{
    const char *const libs[] = {"libnccl.so", "libtorch_cpu.so", NULL};

    assert_true(probe_uprobes_lib_matches(libs, "/usr/local/cuda-13.0/lib/libnccl.so.2"));
    assert_true(probe_uprobes_lib_matches(libs, "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"));
    assert_false(probe_uprobes_lib_matches(libs, "/usr/lib/libnccl-net.so"));
    assert_false(probe_uprobes_lib_matches(libs, "/opt/libnccl.so/other.so"));
}

static struct agent_event last_event;
static int nevents;
static uint64_t grown; /* the COUNTER events' values summed */

static void sink_event(void *ctx, const struct agent_event *ev)
{
    last_event = *ev;
    nevents++;
    if (ev->kind == AGENT_EVENT_COUNTER)
        grown += ev->counter.value;
}

static void test_report_drops(void **state)
{
    struct event_sink sink = {.event = sink_event};
    uint64_t reported = 0;

    assert_int_equal(probe_report_drops(&sink, 0, &reported, "x_ring_full"), 0);
    assert_int_equal(nevents, 0);
    assert_int_equal(probe_report_drops(&sink, 7, &reported, "x_ring_full"), 1);
    assert_int_equal(last_event.kind, AGENT_EVENT_DROPS);
    assert_int_equal(last_event.drops.count, 7);
    assert_string_equal(last_event.drops.reason, "x_ring_full");
    assert_int_equal(probe_report_drops(&sink, 7, &reported, "x_ring_full"), 0);
    assert_int_equal(probe_report_drops(&sink, 9, &reported, "x_ring_full"), 1);
    assert_int_equal(last_event.drops.count, 2);
}

/* Growth sum and events of one poll of a counter map into sink. */
static int poll_counters(int fd, struct probe_counter_table *t, uint64_t *grew)
{
    struct event_sink sink = {.event = sink_event};
    int before = nevents, n;

    n = probe_counters_poll(fd, t, AGENT_COUNTER_IO_WAIT_NS, &sink);
    assert_int_equal(n, nevents - before);
    *grew = grown;
    grown = 0;
    return n;
}

/* A real kernel hash map (root): more keys than a batch, each key's growth
 * once, in batches and a key at a time (a kernel without batch lookup). */
static void test_counters_poll(void **state)
{
    struct probe_counter_table t = {0};
    uint64_t grew, v;
    int fd;

    fd = bpf_map_create(BPF_MAP_TYPE_HASH, "argus_test", sizeof(uint32_t), sizeof(uint64_t), 4097,
                        NULL);
    if (fd < 0) {
        print_message("skip: no BPF map (%s): needs root\n", strerror(errno));
        skip();
    }
    for (uint32_t k = 0; k < 3 * PROBE_COUNTERS_BATCH + 5; k++) {
        v = 10 + k;
        assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_ANY), 0);
    }
    grown = 0;
    assert_int_equal(poll_counters(fd, &t, &grew), 3 * PROBE_COUNTERS_BATCH + 5);
    assert_int_equal(t.n, 3 * PROBE_COUNTERS_BATCH + 5);
    assert_false(t.one_by_one);
    assert_int_equal(poll_counters(fd, &t, &grew), 0); /* nothing grew */
    for (uint32_t k = 0; k < 10; k++) {
        v = 10 + k + 100;
        assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_ANY), 0);
    }
    assert_int_equal(poll_counters(fd, &t, &grew), 10);
    assert_int_equal(grew, 1000);
    t.one_by_one = true;
    for (uint32_t k = 100; k < 107; k++) {
        v = 10 + k + 3;
        assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_ANY), 0);
    }
    assert_int_equal(poll_counters(fd, &t, &grew), 7);
    assert_int_equal(grew, 21);
    probe_counters_free(&t);
    close(fd);
}

static void test_supported_checks(void **state)
{
    const char *const good[] = {"sched_switch", NULL}, *const bad[] = {"no_such_tracepoint", NULL};
    char why[128] = "";

    if (probe_bpf_supported(why, sizeof(why)) < 0) {
        print_message("skip: %s\n", why);
        skip();
    }
    assert_int_equal(probe_tp_btf_supported(good, why, sizeof(why)), 0);
    assert_int_equal(probe_tp_btf_supported(bad, why, sizeof(why)), -ENOTSUP);
    assert_non_null(strstr(why, "no_such_tracepoint"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_allreduce),  cmocka_unit_test(test_collectives_dtypes),
        cmocka_unit_test(test_collectives_c10d),       cmocka_unit_test(test_collectives_identity),
        cmocka_unit_test(test_collectives_rendezvous), cmocka_unit_test(test_sync_decode),
        cmocka_unit_test(test_marker_decode),          cmocka_unit_test(test_proc_decode),
        cmocka_unit_test(test_sched_decode),           cmocka_unit_test(test_counter_decode),
        cmocka_unit_test(test_stacks_aggregate),       cmocka_unit_test(test_lib_matches),
        cmocka_unit_test(test_supported_checks),       cmocka_unit_test(test_report_drops),
        cmocka_unit_test(test_counters_poll),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
