/* Runs one probe through the source interface (agent/sources/source.h) and prints
 * what it delivers as lines, for tests/integration/bpf_*.sh:
 *
 *   NAME id=ID name=STRING
 *   EV kind=KIND pid= tid= ts= ...kind-specific fields
 *   TOP pid= name= self= total=     (stacks, at the end)
 *   argus_probe_... lines            (the probe's metrics, at the end)
 *   RUSAGE user_us= sys_us= events=  (the driver's own CPU, at the end)
 *
 *   probe_driver PROBE [--pid PID]... [--all] [--file LIB]... [--seconds S]
 *                [--ready FILE] [--freq HZ] [--ends N] [--stepdetect] [--quiet]
 *
 * --stepdetect keeps every COLLECTIVE event per pid and prints, at the end,
 * the steps agent/steps/stepdetect.c finds in them:
 *   STEP pid= start= step_ns= compute_ns= collective_ns= ncalls=
 *   PERIOD pid= bursts= period= phase=
 *
 * It tracks each --pid, touches --ready once started, and runs until every
 * tracked pid has exited (zombies count as exited) or S seconds passed, then
 * drains for 300 ms (with --ends N, the sched probe, until N thread ends
 * were reported, at most 10 s more). Exit 77 with "skip: ..." when the
 * probe is unsupported. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/probes/probe_collectives.h"
#include "agent/probes/probe_io.h"
#include "agent/probes/probe_marker.h"
#include "agent/probes/probe_net.h"
#include "agent/probes/probe_proc.h"
#include "agent/probes/probe_sched.h"
#include "agent/probes/probe_stacks.h"
#include "agent/probes/probe_sync.h"
#include "agent/steps/stepdetect.h"
#include "common/clock.h"

static const char *kind_name(uint32_t kind)
{
    static const char *const names[] = {"?",         "STEP",      "PHASE_BEGIN", "PHASE_END",
                                        "PHASE",     "KERNEL",    "COLLECTIVE",  "COUNTER",
                                        "PROC_EXEC", "PROC_EXIT", "DROPS"};

    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

#define MAX_CALLS 65536
static struct {
    uint32_t pid;
    struct stepdetect_call calls[MAX_CALLS];
    size_t n;
} call_log[8];

static void log_call(void *ctx, uint32_t pid, uint64_t enter_ns, uint64_t exit_ns,
                     const struct probe_collectives_call *call)
{
    for (size_t i = 0; i < 8; i++) {
        if (call_log[i].pid && call_log[i].pid != pid)
            continue;
        call_log[i].pid = pid;
        if (call_log[i].n < MAX_CALLS)
            call_log[i].calls[call_log[i].n++] =
                (struct stepdetect_call){enter_ns, exit_ns, call->name_id, call->bytes};
        return;
    }
}

static void print_steps(void)
{
    static uint64_t scratch[3 * MAX_CALLS];
    static struct stepdetect_step steps[4096];

    for (size_t i = 0; i < 8 && call_log[i].pid; i++) {
        struct stepdetect_info info;
        int n =
            stepdetect_find(call_log[i].calls, call_log[i].n, NULL, scratch, steps, 4096, &info);

        printf("PERIOD pid=%u calls=%zu bursts=%u period=%u phase=%u gap_threshold_ns=%" PRIu64
               "\n",
               call_log[i].pid, call_log[i].n, info.bursts, info.period, info.phase,
               info.gap_threshold_ns);
        for (int k = 0; k < n; k++)
            printf("STEP pid=%u start=%" PRIu64 " step_ns=%" PRIu64 " compute_ns=%" PRIu64
                   " collective_ns=%" PRIu64 " ncalls=%u\n",
                   call_log[i].pid, steps[k].start_ns, steps[k].step_ns, steps[k].compute_ns,
                   steps[k].collective_ns, steps[k].ncalls);
    }
}

static uint64_t nevents;
static bool quiet; /* --quiet: count events, print nothing per event */

static void on_event(void *ctx, const struct agent_event *ev)
{
    nevents++;
    if (quiet)
        return;

    printf("EV kind=%s pid=%u tid=%u ts=%" PRIu64, kind_name(ev->kind), ev->pid, ev->tid,
           ev->ts_ns);
    switch (ev->kind) {
    case AGENT_EVENT_STEP:
        printf(" number=%" PRIu64 " source=%u", ev->step.number, ev->step.source);
        break;
    case AGENT_EVENT_PHASE_BEGIN:
        printf(" name_id=%" PRIu64, ev->phase.name_id);
        break;
    case AGENT_EVENT_COLLECTIVE:
        printf(" name_id=%" PRIu64 " seq=%" PRIu64 " bytes=%" PRIu64 " comm=0x%" PRIx64
               " stream=0x%x",
               ev->collective.name_id, ev->collective.seq, ev->collective.bytes,
               ev->collective.comm_id, ev->collective.stream);
        break;
    case AGENT_EVENT_COUNTER:
        printf(" counter=%u value=%" PRIu64, ev->counter.counter, ev->counter.value);
        break;
    case AGENT_EVENT_DROPS:
        printf(" count=%" PRIu64 " reason=%s", ev->drops.count, ev->drops.reason);
        break;
    default:
        break;
    }
    printf("\n");
}

static void on_name(void *ctx, uint64_t id, const char *name)
{
    printf("NAME id=%" PRIu64 " name=%s\n", id, name);
}

static const struct source_ops *find_probe(const char *name)
{
    static const struct source_ops *const all[] = {
        &probe_collectives_ops, &probe_sync_ops, &probe_sched_ops, &probe_stacks_ops,
        &probe_marker_ops,      &probe_proc_ops, &probe_net_ops,   &probe_io_ops,
    };

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

static bool pid_alive(uint32_t pid)
{
    char path[64], buf[512];
    FILE *f;
    bool alive = false;

    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    f = fopen(path, "re");
    if (!f)
        return false;
    if (fgets(buf, sizeof(buf), f)) {
        char *p = strrchr(buf, ')');

        alive = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
    }
    fclose(f);
    return alive;
}

struct driver_opts {
    uint32_t pids[64];
    size_t npids;
    const char *files[16];
    size_t nfiles;
    bool all, stepdetect;
    double seconds;
    const char *ready;
    uint32_t freq;
    uint64_t ends; /* sched: drain until this many thread ends (at most 10 s) */
};

static void *make_config(const char *probe, const struct driver_opts *o)
{
    static struct probe_collectives_config coll;
    static struct probe_sync_config sync;
    static struct probe_stacks_config stacks;
    static struct probe_marker_config marker;

    if (!strcmp(probe, "collectives")) {
        coll = (struct probe_collectives_config){.all_processes = o->all, .files = o->files};
        if (o->stepdetect)
            coll.on_call = log_call;
        return &coll;
    }
    if (!strcmp(probe, "sync")) {
        sync = (struct probe_sync_config){o->all, o->files};
        return &sync;
    }
    if (!strcmp(probe, "marker")) {
        marker = (struct probe_marker_config){o->all, o->files};
        return &marker;
    }
    if (!strcmp(probe, "stacks")) {
        stacks = (struct probe_stacks_config){.frequency_hz = o->freq};
        return &stacks;
    }
    return NULL;
}

static int parse(int argc, char **argv, struct driver_opts *o)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--all") || !strcmp(a, "--stepdetect")) {
            *(a[2] == 'a' ? &o->all : &o->stepdetect) = true;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            quiet = true;
            continue;
        }
        if (!v)
            return -EINVAL;
        i++;
        if (!strcmp(a, "--pid") && o->npids < 64)
            o->pids[o->npids++] = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--file") && o->nfiles < 15)
            o->files[o->nfiles++] = v;
        else if (!strcmp(a, "--seconds"))
            o->seconds = strtod(v, NULL);
        else if (!strcmp(a, "--ready"))
            o->ready = v;
        else if (!strcmp(a, "--freq"))
            o->freq = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--ends"))
            o->ends = strtoull(v, NULL, 10);
        else
            return -EINVAL;
    }
    return 0;
}

static bool any_alive(const struct driver_opts *o)
{
    for (size_t i = 0; i < o->npids; i++)
        if (pid_alive(o->pids[i]))
            return true;
    return false;
}

/* The sched probe's thread ends so far (its metrics). */
static uint64_t ends_seen(const struct source_ops *ops, void *st)
{
    static const char key[] = "threads_ended_total{probe=\"sched\"} ";
    char m[4096];
    size_t n = ops->metrics ? ops->metrics(st, m, sizeof(m) - 1) : 0;
    const char *p;

    m[n] = '\0';
    p = strstr(m, key);
    return p ? strtoull(p + sizeof(key) - 1, NULL, 10) : 0;
}

/* A thread's end is reported at its free, an RCU callback after its exit
 * that can come well after its process is gone (lazy RCU, a loaded host),
 * or from its exit's reading 2 s after the exit when no free came: with
 * --ends the drain waits for them, up to 10 s. */
static bool drained(const struct source_ops *ops, void *st, const struct driver_opts *o,
                    uint64_t now, uint64_t drain_until)
{
    if (now < drain_until)
        return false;
    return !o->ends || ends_seen(ops, st) >= o->ends || now >= drain_until + 10 * NSEC_PER_SEC;
}

static void run_loop(const struct source_ops *ops, void *st, const struct driver_opts *o)
{
    uint64_t start = clock_mono_ns(), drain_until = 0;
    int fd = ops->fd(st);

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint64_t now = clock_mono_ns();

        if (fd >= 0)
            poll(&p, 1, 100);
        else
            clock_sleep_ns(100 * NSEC_PER_MSEC);
        ops->dispatch(st);
        fflush(stdout);
        if (!drain_until && ((o->npids && !any_alive(o)) ||
                             (o->seconds > 0 && now - start >= (uint64_t)(o->seconds * 1e9))))
            drain_until = now + 300 * NSEC_PER_MSEC;
        if (drain_until && drained(ops, st, o, now, drain_until))
            break;
    }
    if (ops->flush) /* what the source still holds, as when the agent stops */
        ops->flush(st);
}

static void print_tops(void *st, const struct driver_opts *o)
{
    struct probe_stacks_frame top[10];
    uint64_t now = clock_mono_ns(), end = now + 5 * NSEC_PER_SEC;

    while (!probe_stacks_settled(st, now) && clock_mono_ns() < end) /* the symbolizer's backlog */
        clock_sleep_ns(10 * NSEC_PER_MSEC);

    for (size_t i = 0; i < o->npids; i++) {
        size_t n = probe_stacks_top_frames(st, o->pids[i], 0, UINT64_MAX, top, 10);

        for (size_t j = 0; j < n; j++)
            printf("TOP pid=%u name=%s self=%" PRIu64 " total=%" PRIu64 "\n", o->pids[i],
                   top[j].name, top[j].self, top[j].total);
    }
}

int main(int argc, char **argv)
{
    struct driver_opts o = {0};
    struct event_sink sink = {on_event, on_name, NULL};
    const struct source_ops *ops = argc > 1 ? find_probe(argv[1]) : NULL;
    char why[256] = "", metrics[4096];
    void *st = NULL;
    int err, rc = 1;

    if (!ops || parse(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: probe_driver PROBE [--pid PID]... [--all] [--file LIB]... "
                        "[--seconds S] [--ready FILE] [--freq HZ] [--ends N]\n");
        return 2;
    }
    err = ops->supported(why, sizeof(why));
    if (err < 0) {
        printf("skip: probe %s unsupported: %s\n", ops->name, why);
        return 77;
    }
    st = ops->create(make_config(ops->name, &o), why, sizeof(why));
    if (!st || ops->start(st, &sink, why, sizeof(why)) < 0) {
        printf("FAIL start %s: %s\n", ops->name, why);
        goto out;
    }
    for (size_t i = 0; i < o.npids; i++)
        if (ops->track && (err = ops->track(st, o.pids[i], NULL, true)) < 0)
            printf("WARN track %u: %s\n", o.pids[i], strerror(-err));
    printf("started %s\n", ops->name);
    fflush(stdout);
    if (o.ready) {
        FILE *f = fopen(o.ready, "w");

        if (f)
            fclose(f);
    }
    run_loop(ops, st, &o);
    if (!strcmp(ops->name, "stacks"))
        print_tops(st, &o);
    if (ops->metrics) {
        size_t n = ops->metrics(st, metrics, sizeof(metrics));

        metrics[n] = '\0';
        printf("%s", metrics);
    }
    {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        printf("RUSAGE user_us=%ld sys_us=%ld events=%" PRIu64 "\n",
               ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
               ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec, nevents);
    }
    rc = 0;
out:
    ops->destroy(st); /* releases the calls the collectives probe still holds */
    if (o.stepdetect)
        print_steps();
    return rc;
}
