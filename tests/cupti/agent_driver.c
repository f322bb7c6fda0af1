/* cupti-agent: source_cupti in a small loop, for integration scripts and the
 * GPU check. Prints one line per event (unless -q) and a summary at the end:
 *   K pid stream dur_ns corr kind name     kernel/memcpy/memset
 *   P pid stream dur_ns name                GPU phase
 *   S pid number sampled                    step began
 *   D pid reason count                      drops
 *   summary kernels=N phases=N steps=N sampled_steps=N drops=N ...
 *
 *   cupti-agent SOCKET SECONDS [-q] [-s MODE K N] [-x EXIT_AFTER_CLIENTS]
 * Runs SECONDS, or until every one of EXIT_AFTER_CLIENTS processes has come
 * and gone, or SIGTERM/SIGINT. */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/sources/source_cupti.h"
#include "common/clock.h"

#define NAMES 65536

struct drv {
    int quiet;
    uint64_t sampled_steps;
    struct {
        uint64_t id;
        char *name;
    } names[NAMES];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    stop = 1;
}

static const char *drv_name(struct drv *d, uint64_t id)
{
    size_t i = id & (NAMES - 1);

    while (d->names[i].id && d->names[i].id != id)
        i = (i + 1) & (NAMES - 1);
    return d->names[i].id ? d->names[i].name : "?";
}

static void drv_on_name(void *ctx, uint64_t id, const char *name)
{
    struct drv *d = ctx;
    size_t i = id & (NAMES - 1);

    while (d->names[i].id && d->names[i].id != id)
        i = (i + 1) & (NAMES - 1);
    if (!d->names[i].id) {
        d->names[i].id = id;
        d->names[i].name = strdup(name);
    }
}

static void drv_on_event(void *ctx, const struct agent_event *ev)
{
    struct drv *d = ctx;

    if (ev->kind == AGENT_EVENT_STEP && (ev->flags & SOURCE_CUPTI_STEP_SAMPLED))
        d->sampled_steps++;
    if (d->quiet)
        return;
    switch (ev->kind) {
    case AGENT_EVENT_KERNEL:
        printf("K %u %u %" PRIu64 " %u %u %08x %s\n", ev->pid, ev->kernel.stream,
               ev->kernel.duration_ns, ev->kernel.correlation, ev->kernel.kernel_kind,
               ev->kernel.shape, drv_name(d, ev->kernel.name_id));
        break;
    case AGENT_EVENT_PHASE:
        printf("P %u %u %" PRIu64 " %s\n", ev->pid, ev->phase.stream, ev->phase.duration_ns,
               drv_name(d, ev->phase.name_id));
        break;
    case AGENT_EVENT_STEP:
        printf("S %u %" PRId64 " %d\n", ev->pid, (int64_t)ev->step.number,
               !!(ev->flags & SOURCE_CUPTI_STEP_SAMPLED));
        break;
    case AGENT_EVENT_DROPS:
        printf("D %u %s %" PRIu64 "\n", ev->pid, ev->drops.reason, ev->drops.count);
        break;
    default:
        break;
    }
}

static void drv_summary(void *src, struct drv *d)
{
    struct source_cupti_stats st;

    source_cupti_get_stats(src, &st);
    printf("summary clients=%" PRIu64 " kernels=%" PRIu64 " phases=%" PRIu64 " steps=%" PRIu64
           " sampled_steps=%" PRIu64 " no_buffer=%" PRIu64 " ring_full=%" PRIu64
           " no_agent=%" PRIu64 " step_asides=%" PRIu64 " spans=%" PRIu64 "\n",
           st.clients, st.kernels, st.phases, st.steps, d->sampled_steps,
           st.drops[CUPTI_DROP_NO_BUFFER], st.drops[CUPTI_DROP_RING_FULL],
           st.drops[CUPTI_DROP_NO_AGENT], st.step_asides, st.spans);
}

int main(int argc, char **argv)
{
    static struct drv d;
    struct source_cupti_config cfg = {0};
    struct event_sink sink = {drv_on_event, drv_on_name, &d};
    char why[256] = "";
    uint64_t end, exit_after = 0;
    struct source_cupti_stats st;
    void *src;

    if (argc < 3) {
        fprintf(stderr, "usage: %s SOCKET SECONDS [-q] [-s MODE K N] [-x CLIENTS]\n", argv[0]);
        return 2;
    }
    cfg.socket_path = argv[1];
    end = clock_mono_ns() + (uint64_t)(atof(argv[2]) * 1e9);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0)
            d.quiet = 1;
        else if (strcmp(argv[i], "-s") == 0 && i + 3 < argc) {
            cfg.sample_mode = (uint32_t)atoi(argv[i + 1]);
            cfg.sample_k = (uint32_t)atoi(argv[i + 2]);
            cfg.sample_n = (uint32_t)atoi(argv[i + 3]);
            i += 3;
        } else if (strcmp(argv[i], "-x") == 0 && i + 1 < argc)
            exit_after = strtoull(argv[++i], NULL, 0);
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    src = source_cupti_ops.create(&cfg, why, sizeof(why));
    if (!src || source_cupti_ops.start(src, &sink, why, sizeof(why)) < 0) {
        fprintf(stderr, "cupti-agent: %s\n", why);
        source_cupti_ops.destroy(src);
        return 1;
    }
    printf("listening %s\n", argv[1]);
    fflush(stdout);
    while (!stop && clock_mono_ns() < end) {
        struct pollfd p = {.fd = source_cupti_ops.fd(src), .events = POLLIN};
        poll(&p, 1, 10);
        source_cupti_ops.dispatch(src);
        source_cupti_get_stats(src, &st);
        if (exit_after && st.clients >= exit_after && !st.connected)
            break;
    }
    source_cupti_ops.dispatch(src);
    drv_summary(src, &d);
    source_cupti_ops.destroy(src);
    return 0;
}
