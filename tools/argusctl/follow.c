/* stragglers --follow: see follow.h. */
#include "tools/argusctl/follow.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/stragglers.h"
#include "common/clock.h"
#include "common/name_id.h"
#include "common/u64set.h"

static volatile sig_atomic_t follow_interrupted;

static void follow_on_interrupt(int sig)
{
    follow_interrupted = 1;
}

/* Print the reports of view not in seen (adding them; quiet: only add).
 * Returns the newest creation time among them, or newest. */
static uint64_t follow_print(const struct follow_ops *ops, void *ctx,
                             const Argus__V1__StragglersResponse *view, struct u64set *seen,
                             bool quiet, uint64_t newest)
{
    for (size_t i = 0; i < view->n_reports; i++) {
        const Argus__V1__Report *rep = view->reports[i];
        if (u64set_add(seen, name_id(rep->id) | 1) == 0)
            continue;
        if (rep->created_unix_ns > newest)
            newest = rep->created_unix_ns;
        if (!quiet)
            ops->print(ctx, rep);
    }
    fflush(stdout);
    return newest;
}

/* Sleep ns unless interrupted first (a signal ends the sleep early). */
static void follow_sleep(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / NSEC_PER_SEC), (long)(ns % NSEC_PER_SEC)};

    if (!follow_interrupted)
        nanosleep(&ts, NULL);
}

/* A failed poll: wait (true) for a collector that stops answering or a job
 * with no report yet, after one message; anything else ends the follow. */
static bool follow_wait(const struct follow_ops *ops, void *ctx, int r, bool *waiting)
{
    if (r != CTL_UNREACHABLE && r != CTL_NOT_FOUND)
        return false;
    if (!*waiting)
        fprintf(stderr, "argusctl: --follow: waiting for %s\n",
                r == CTL_NOT_FOUND ? "the job's first report" : "the collector to answer again");
    *waiting = true;
    ops->quiet(ctx, true);
    return true;
}

int follow_run(const struct follow_ops *ops, void *ctx, uint64_t since_ns, uint64_t poll_ns)
{
    struct sigaction sa = {.sa_handler = follow_on_interrupt};
    struct u64set seen = {0};
    uint64_t newest = since_ns ? since_ns : clock_real_ns();
    bool first = true, waiting = false, answered = false;
    int r = CTL_OK;

    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!follow_interrupted) {
        Argus__V1__StragglersResponse *raw, *view;
        uint64_t from = since_ns && first            ? since_ns
                        : newest > FOLLOW_OVERLAP_NS ? newest - FOLLOW_OVERLAP_NS
                                                     : 0;
        r = ops->fetch(ctx, from, &raw, &view);
        if (r == CTL_UNREACHABLE && !answered)
            break;
        answered = answered || r != CTL_UNREACHABLE;
        if (r && !follow_wait(ops, ctx, r, &waiting))
            break;
        if (r == CTL_OK) {
            waiting = false;
            ops->quiet(ctx, false);
            newest = follow_print(ops, ctx, view, &seen, first && !since_ns, newest);
            stragglers_view_free(view);
            argus__v1__stragglers_response__free_unpacked(raw, NULL);
        }
        /* a job not there yet had nothing to note: what comes is new */
        first = first && r != CTL_OK && r != CTL_NOT_FOUND;
        follow_sleep(poll_ns);
    }
    u64set_clear(&seen);
    return follow_interrupted ? CTL_OK : r;
}
