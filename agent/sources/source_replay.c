#include "agent/sources/source_replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sources/kineto.h"
#include "common/clock.h"
#include "common/name_id.h"
#include "proto/argus.pb-c.h"

#define REPLAY_MIN_TICK_NS (25 * NSEC_PER_MSEC)

struct replay {
    struct replay_config c;
    char *path, *job, *node;
    struct kineto_trace *trace;
    const struct event_sink *sink;
    int tfd;
    uint64_t start_ns;
    bool ended;          /* every rank's end told (steps replayed) */
    uint64_t *next_step; /* per rank */
    size_t *step_first;  /* spans of trace step s: by_step[step_first[s] .. step_first[s + 1]) */
    uint32_t *by_step;   /* span indices grouped by step, in file order */
};

/* Index the trace's spans by step, so a replayed step visits only its own. */
static int replay_index(struct replay *r)
{
    const struct kineto_trace *t = r->trace;

    r->step_first = calloc(t->n_steps + 1, sizeof(*r->step_first));
    r->by_step = malloc((t->n_spans ? t->n_spans : 1) * sizeof(*r->by_step));
    if (!r->step_first || !r->by_step)
        return -ENOMEM;
    for (size_t k = 0; k < t->n_spans; k++)
        if (t->spans[k].step >= 0)
            r->step_first[t->spans[k].step + 1]++;
    for (size_t s = 0; s < t->n_steps; s++)
        r->step_first[s + 1] += r->step_first[s];
    /* step_first[s + 1] serves as step s's cursor, then shifts back */
    for (size_t k = 0; k < t->n_spans; k++)
        if (t->spans[k].step >= 0)
            r->by_step[r->step_first[t->spans[k].step]++] = (uint32_t)k;
    memmove(r->step_first + 1, r->step_first, t->n_steps * sizeof(*r->step_first));
    r->step_first[0] = 0;
    return 0;
}

static int replay_supported(char *why, size_t whylen)
{
    return 0;
}

static void *replay_create(const void *config, char *why, size_t whylen)
{
    const struct replay_config *c = config;
    struct replay *r;
    char err[256];

    if (!c || !c->path || !*c->path || c->ranks == 0 || !(c->rate > 0) || c->stretch < 0) {
        snprintf(why, whylen, "replay needs a trace path, ranks >= 1, rate > 0 and stretch >= 0");
        return NULL;
    }
    r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->c = *c;
    if (!(r->c.stretch > 0))
        r->c.stretch = 1;
    r->path = strdup(c->path);
    r->job = strdup(c->job && *c->job ? c->job : "replay");
    r->node = strdup(c->node ? c->node : "");
    r->next_step = calloc(c->ranks, sizeof(*r->next_step));
    r->tfd = -1;
    if (!r->path || !r->job || !r->node || !r->next_step) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    if (kineto_load(r->path, NULL, &r->trace, err, sizeof(err)) < 0) {
        snprintf(why, whylen, "%s: %s", r->path, err);
        goto fail;
    }
    if (r->trace->n_steps == 0) {
        snprintf(why, whylen, "%s: no ProfilerStep#N ranges to replay", r->path);
        goto fail;
    }
    if (replay_index(r) < 0) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    return r;
fail:
    source_replay_ops.destroy(r);
    return NULL;
}

static void replay_announce(struct replay *r)
{
    struct agent_event ev = {.kind = AGENT_EVENT_RANK, .ts_ns = clock_mono_ns()};
    uint32_t world = r->c.world ? r->c.world : r->c.rank_base + r->c.ranks;

    for (size_t i = 0; i < r->trace->n_names; i++)
        r->sink->name(r->sink->ctx, r->trace->name_ids[i], r->trace->names[i]);
    r->sink->name(r->sink->ctx, name_id("step"), "step");
    for (uint32_t i = 0; i < r->c.ranks; i++) {
        Argus__V1__Resource res = ARGUS__V1__RESOURCE__INIT;
        res.job = r->job;
        res.rank = r->c.rank_base + i;
        res.local_rank = i;
        res.world_size = world;
        res.node = r->node;
        res.gpu = (int32_t)i;
        res.pid = REPLAY_PID_BASE + i;
        res.dp = res.rank;
        res.dp_size = world;
        res.tp_size = res.pp_size = res.ep_size = 1;
        ev.pid = res.pid;
        ev.rank.resource = &res;
        r->sink->event(r->sink->ctx, &ev);
    }
}

static uint64_t replay_period(const struct replay *r)
{
    return (uint64_t)(1e9 / r->c.rate);
}

/* Rank i's step n is due at start + n * period + its skew. */
static uint64_t replay_skew(const struct replay *r, uint32_t i)
{
    return replay_period(r) / 50 * i / r->c.ranks;
}

int replay_timerfd(uint64_t first_ns, uint64_t period_ns)
{
    return clock_timerfd(first_ns, period_ns > REPLAY_MIN_TICK_NS ? period_ns : REPLAY_MIN_TICK_NS);
}

/* The timer fires once per step period, just after the last rank's step is
 * due, so one wakeup serves every rank. */
static int replay_start(void *state, const struct event_sink *sink, char *why, size_t whylen)
{
    struct replay *r = state;

    r->sink = sink;
    r->start_ns = clock_mono_ns();
    r->tfd = replay_timerfd(r->start_ns + replay_skew(r, r->c.ranks - 1) + NSEC_PER_MSEC / 10,
                            replay_period(r));
    if (r->tfd < 0) {
        snprintf(why, whylen, "timerfd: %s", strerror(-r->tfd));
        return r->tfd;
    }
    replay_announce(r);
    return 0;
}

static int replay_fd(void *state)
{
    return ((struct replay *)state)->tfd;
}

/* Emit step number n of rank index i at time ts: a STEP event, then the
 * kernels of trace step n % n_steps with their offsets in the trace (both
 * offsets and durations times the stretch factor). */
static int replay_step(struct replay *r, uint32_t i, uint64_t n, uint64_t ts)
{
    const struct kineto_trace *t = r->trace;
    const struct kineto_step *st = &t->steps[n % t->n_steps];
    struct agent_event ev = {.kind = AGENT_EVENT_STEP, .pid = REPLAY_PID_BASE + i, .ts_ns = ts};
    size_t ts_i = n % t->n_steps;
    int count = 1;

    ev.step.number = n;
    ev.step.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_IMPORTED;
    r->sink->event(r->sink->ctx, &ev);
    for (size_t k = r->step_first[ts_i]; k < r->step_first[ts_i + 1]; k++) {
        const struct kineto_span *s = &t->spans[r->by_step[k]];
        struct agent_event kev = {.kind = AGENT_EVENT_KERNEL, .pid = ev.pid};
        uint64_t off = s->ts_ns > st->ts_ns ? s->ts_ns - st->ts_ns : 0;
        kev.ts_ns = ts + (uint64_t)((double)off * r->c.stretch);
        kev.kernel.name_id = t->name_ids[s->name];
        kev.kernel.duration_ns = (uint64_t)((double)s->dur_ns * r->c.stretch);
        kev.kernel.stream = s->stream;
        kev.kernel.correlation = (uint32_t)s->correlation;
        kev.kernel.shape = s->shape;
        r->sink->event(r->sink->ctx, &kev);
        count++;
    }
    return count;
}

/* The last rank replayed its steps: every rank ends, cleanly (a replayed
 * rank has no process whose end a probe or /proc could tell). */
static int replay_end(struct replay *r)
{
    r->ended = true;
    for (uint32_t i = 0; i < r->c.ranks; i++) {
        struct agent_event ev = {.kind = AGENT_EVENT_PROC_EXIT, .ts_ns = clock_mono_ns()};
        ev.pid = REPLAY_PID_BASE + i;
        r->sink->event(r->sink->ctx, &ev);
    }
    return (int)r->c.ranks;
}

static int replay_dispatch(void *state)
{
    struct replay *r = state;
    uint64_t expirations, now = clock_mono_ns(), period = replay_period(r);
    int events = 0;

    if (read(r->tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        return -errno;
    for (uint32_t i = 0; i < r->c.ranks; i++) {
        /* rank i's step n is due at start + n * period (+ a small per-rank skew) */
        uint64_t skew = replay_skew(r, i);
        while ((!r->c.steps || r->next_step[i] < r->c.steps) &&
               r->start_ns + r->next_step[i] * period + skew <= now) {
            uint64_t ts = r->start_ns + r->next_step[i] * period + skew;
            events += replay_step(r, i, r->next_step[i]++, ts);
        }
    }
    if (r->c.steps && !r->ended && r->next_step[r->c.ranks - 1] == r->c.steps)
        events += replay_end(r);
    return events;
}

static void replay_destroy(void *state)
{
    struct replay *r = state;

    if (!r)
        return;
    if (r->tfd >= 0)
        close(r->tfd);
    kineto_free(r->trace);
    free(r->path);
    free(r->job);
    free(r->node);
    free(r->next_step);
    free(r->step_first);
    free(r->by_step);
    free(r);
}

const struct source_ops source_replay_ops = {
    .name = "replay",
    .supported = replay_supported,
    .create = replay_create,
    .start = replay_start,
    .fd = replay_fd,
    .dispatch = replay_dispatch,
    .destroy = replay_destroy,
};
