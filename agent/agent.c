/* The agent's composition root: setup wires the stages (sources -> steps
 * -> delivery) together, the event path carries what the sources report
 * into them, the loop runs their periodic work, teardown flushes and frees.
 * The sources (agent_sources.h) and delivery (agent_delivery.h) are
 * modules this file owns and calls; /metrics is served from the snapshot
 * it publishes (agent_http.h). */
#include "agent/agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent/agent_delivery.h"
#include "agent/agent_http.h"
#include "agent/agent_sources.h"
#include "agent/delivery/names.h"
#include "agent/discovery/discovery.h"
#include "agent/hw/hw.h"
#include "agent/liveness/liveness.h"
#include "agent/probes/probe_stacks.h"
#include "agent/spans/spans.h"
#include "agent/steps/assembler.h"
#include "agent/steps/stepframes.h"
#include "agent/steps/stepinfer.h"
#include "common/clock.h"
#include "common/daemon.h"
#include "common/http.h"
#include "common/log.h"
#include "common/name_id.h"

#define AGENT_DISPATCH_NS (100 * NSEC_PER_MSEC) /* sources without an fd are polled */
#define AGENT_FLUSH_NS (3 * NSEC_PER_SEC)       /* SIGTERM: try this long to get the spool acked */
#define AGENT_MAX_SLEEP_NS NSEC_PER_SEC         /* /metrics is at most this stale */

struct agent {
    struct agent_config *cfg;
    int argc;
    char **argv;
    char node[256], agent_id[256];
    struct names *names;
    struct agent_delivery *delivery; /* batches, spool, exporter, drop counters */
    struct assembler *assembler;
    struct stepinfer *stepinfer;
    struct discovery *discovery;
    struct stepframes *frames; /* steps waiting for their stack samples */
    struct spans *spans;       /* raw spans per rank for drill-down (agent/spans/) */
    struct liveness *live;     /* statuses of ranks that stop or end (agent/liveness/) */
    struct hw *hw;             /* each step's GPU and NIC counters (agent/hw/) */
    struct agent_sources *sources;
    struct clock_offset clock; /* monotonic to UNIX time, refreshed each tick */
    uint64_t clock_steps;
    uint64_t next_infer_ns;
    struct agent_http http_state;
    struct http_server *http;
    int epfd, sigfd;
    uint64_t next_scan_ns, next_dispatch_ns;
    uint64_t loop_turns, loop_busy_max_ns;
    /* one limit on the warnings that repeat (source errors, batches and
     * captures lost, spool cap, a busy loop), lent to sources and delivery */
    struct log_ratelimit rl;
    uint64_t discovery_logged; /* a digest of the discovery counts last logged */
};

/* --- the event path ------------------------------------------------------- */

static void agent_rank(struct agent *a, const Argus__V1__Resource *r, const char *root)
{
    if (assembler_track(a->assembler, r) < 0 || names_set_resource(a->names, r) < 0) {
        log_error("agent", "out of memory tracking rank %u of job %s", r->rank, r->job);
        return;
    }
    stepinfer_track(a->stepinfer, r->pid, r->job, r->rank);
    spans_track(a->spans, r->pid, r->job, r->rank);
    liveness_track(a->live, r->pid, r->job, r->rank, r->world_size, clock_mono_ns());
    liveness_set_restart(a->live, r->pid, r->restart);
    hw_track(a->hw, r->job, r->rank, r->gpu, r->gpu_uuid);
    log_info("agent", "rank %u of job %s (pid %u, world %u, node %s)", r->rank, r->job, r->pid,
             r->world_size, r->node);
    agent_sources_track(a->sources, NULL, r->pid, root, true);
}

/* What the step inferrer changed at its last call: one line per rank
 * whose model locked or stopped fitting. */
static void agent_log_stepinfer(struct agent *a)
{
    size_t n;
    const struct stepinfer_change *c = stepinfer_changes(a->stepinfer, &n);

    for (size_t i = 0; i < n; i++, c++) {
        if (c->locked)
            log_info("steps",
                     "rank %u of job %s (pid %u): %u calls a step, opening call g = %llu mod %llu, "
                     "numbers %+lld, after step %lld (%zu votes)",
                     c->rank, c->job, c->pid, c->calls, (unsigned long long)c->phase,
                     (unsigned long long)c->span, (long long)c->base, (long long)c->last_step,
                     c->votes);
        else
            log_info("steps",
                     "rank %u of job %s (pid %u): steps stopped fitting after step %lld "
                     "(misfits %04x, %zu calls since the last opening one)",
                     c->rank, c->job, c->pid, (long long)c->last_step, c->misfits, c->calls_since);
    }
}

static void agent_on_rank_new(void *ctx, const struct rank_info *ri)
{
    Argus__V1__Resource r;

    discovery_fill_resource(ri, &r);
    agent_rank(ctx, &r, ri->root);
}

static void agent_on_rank_exit(void *ctx, const struct rank_info *ri)
{
    struct agent *a = ctx;

    log_info("agent", "rank %u of job %s (pid %u) is gone", ri->rank, ri->job, ri->pid);
    /* how is unknown unless the proc probe told liveness first */
    liveness_exit(a->live, ri->pid, -1, 0, false, clock_mono_ns());
    agent_sources_track(a->sources, NULL, ri->pid, ri->root, false);
    stepinfer_untrack(a->stepinfer, ri->pid, !assembler_has_steps(a->assembler, ri->pid));
    agent_log_stepinfer(a);
    spans_untrack(a->spans, ri->pid, clock_mono_ns());
    assembler_untrack(a->assembler, ri->pid);
}

/* A process that may create a communicator: the collectives probe looks at
 * it as at a rank (its libraries, its calls) until it says its rank. */
static void agent_on_watch(void *ctx, uint32_t pid, const char *root, bool add)
{
    struct agent *a = ctx;

    agent_sources_track(a->sources, &probe_collectives_ops, pid, root, add);
}

static const struct discovery_callbacks agent_discovery_cb = {agent_on_rank_new, agent_on_rank_exit,
                                                              agent_on_watch};

/* The collectives probe's observers (probe_collectives_config): a
 * process created a communicator, so discovery learns its rank; its calls
 * and their ends go to the step inferrer. */
static void agent_on_comm_init(void *ctx, uint32_t pid, uint32_t rank, uint32_t size,
                               const char *what)
{
    struct agent *a = ctx;

    log_debug("agent", "pid %u: %s(rank %u, size %u)", pid, what, rank, size);
    discovery_comm_init(a->discovery, pid, rank, size, &agent_discovery_cb, a);
}

/* A process made the store of its process group to come: its address
 * names the job of a spawned rank on every node. */
static void agent_on_rendezvous(void *ctx, uint32_t pid, const char *host, uint16_t port)
{
    struct agent *a = ctx;

    log_debug("agent", "pid %u: store at %s:%u", pid, host ? host : "(no address)", port);
    discovery_rendezvous(a->discovery, pid, host, port);
}

static void agent_on_collective(void *ctx, uint32_t pid, uint64_t enter_ns, uint64_t exit_ns,
                                const struct probe_collectives_call *call)
{
    struct agent *a = ctx;

    if (call->wait || call->tag)
        return;
    stepinfer_call(a->stepinfer, pid,
                   &(struct stepinfer_call){enter_ns, exit_ns, call->name_id, call->bytes,
                                            call->comm, call->lib_seq, call->group, call->done_ns});
    liveness_call(a->live, pid,
                  &(struct progress_call){enter_ns, call->comm, call->group, call->lib_seq,
                                          call->name_id, call->done_ns});
    if (!discovery_find(a->discovery, pid))
        discovery_unidentified_call(a->discovery, pid);
}

/* A step on to the batcher, with its hardware counters unless it has
 * some (a replayed record may). */
static void agent_add_step(struct agent *a, const Argus__V1__StepRecord *s)
{
    Argus__V1__HwCounters hw = ARGUS__V1__HW_COUNTERS__INIT;
    Argus__V1__StepRecord *m = (Argus__V1__StepRecord *)s; /* hw is put back after the call */

    if (!s->hw && hw_step(a->hw, s->job, s->rank, &hw))
        m->hw = &hw;
    agent_delivery_add_step(a->delivery, s);
    if (m->hw == &hw)
        m->hw = NULL;
}

static void agent_on_collective_done(void *ctx, uint32_t pid, uint64_t comm, int64_t lib_seq,
                                     uint64_t done_ns)
{
    struct agent *a = ctx;

    stepinfer_done(a->stepinfer, pid, comm, lib_seq, done_ns);
    liveness_done(a->live, pid, comm, lib_seq, done_ns);
}

static void agent_on_event(void *ctx, const struct agent_event *ev)
{
    struct agent *a = ctx;

    spans_event(a->spans, ev);
    switch (ev->kind) {
    case AGENT_EVENT_RANK:
        agent_rank(a, ev->rank.resource, "/");
        break;
    case AGENT_EVENT_RECORD: /* a replayed step: progress, as an assembled one */
        liveness_step(a->live, ev->pid, ((const Argus__V1__StepRecord *)ev->record.step)->step,
                      clock_mono_ns());
        agent_add_step(a, ev->record.step);
        break;
    case AGENT_EVENT_PROC_EXEC:
        discovery_check_pid(a->discovery, ev->pid, &agent_discovery_cb, a);
        break;
    case AGENT_EVENT_PROC_EXIT: /* liveness first: how it ended, before it is forgotten */
        liveness_exit(a->live, ev->pid, ev->exit.code, ev->exit.signal, ev->exit.core, ev->ts_ns);
        discovery_exit_pid(a->discovery, ev->pid, &agent_discovery_cb, a);
        break;
    case AGENT_EVENT_DROPS:
        agent_delivery_drop(a->delivery, ev->drops.reason, NULL, -1, ev->drops.count);
        break;
    case AGENT_EVENT_COUNTER:
        if (!assembler_has_steps(a->assembler, ev->pid)) /* an unannotated rank */
            stepinfer_counter(a->stepinfer, ev->pid, ev->counter.counter, ev->counter.value,
                              ev->ts_ns);
        assembler_event(a->assembler, ev);
        break;
    default:
        assembler_event(a->assembler, ev);
    }
}

static void agent_on_name(void *ctx, uint64_t id, const char *name)
{
    struct agent *a = ctx;

    names_define(a->names, id, name);
}

/* A finished step (assembled or inferred): its top frames come first. */
static void agent_on_step(void *ctx, uint32_t pid, const Argus__V1__StepRecord *s)
{
    struct agent *a = ctx;

    liveness_step(a->live, pid, s->step, clock_mono_ns());
    stepframes_add(a->frames, pid, s, clock_mono_ns());
}

/* A step with its frames, on to the batcher. */
static void agent_emit_step(void *ctx, const Argus__V1__StepRecord *s)
{
    agent_add_step(ctx, s);
}

/* A rank's status (agent/liveness/), on to the batcher. */
static void agent_emit_status(void *ctx, const Argus__V1__RankStatus *s)
{
    agent_delivery_add_status(((struct agent *)ctx)->delivery, s);
}

/* A rank's last sampled stack (the stacks probe) as name ids, each defined
 * in the dictionary the batch carries. */
static size_t agent_status_stack(void *ctx, uint32_t pid, uint64_t *ids, size_t max)
{
    struct agent *a = ctx;
    void *stacks = a->sources ? agent_sources_state(a->sources, &probe_stacks_ops) : NULL;
    const char *frames[LIVENESS_STACK_MAX];
    size_t n = stacks ? probe_stacks_last_stack(stacks, pid, frames, LIVENESS_STACK_MAX) : 0;

    n = n < max ? n : max;
    for (size_t i = 0; i < n; i++) {
        ids[i] = name_id(frames[i]);
        names_define(a->names, ids[i], frames[i]);
    }
    return n;
}

static const char *agent_name(void *ctx, uint64_t id)
{
    return names_lookup(((struct agent *)ctx)->names, id);
}

/* The collector asks for the raw spans of a rank in a window (a suspect's
 * drill-down): the answer goes out in the next batch. */
static void agent_on_capture(void *ctx, const Argus__V1__CaptureRequest *req)
{
    struct agent *a = ctx;
    uint8_t *packed = NULL;
    size_t len = 0;
    int r = spans_capture(a->spans, req, clock_mono_ns(), &packed, &len);

    if (r == -EALREADY)
        return;
    if (r == 0)
        r = agent_delivery_add_trace(a->delivery, packed, len);
    if (r == 0)
        log_info("agent", "capture of report %s: rank %u of job %s, %zu bytes of spans",
                 req->report_id, req->rank, req->job, len);
    else
        log_ratelimited(&a->rl, LOG_LEVEL_WARN, "agent", "capture of report %s lost: %s",
                        req->report_id, strerror(-r));
    free(packed);
}

/* --- setup ------------------------------------------------------------------ */

static int agent_build_pipeline(struct agent *a)
{
    const struct agent_config *c = a->cfg;
    char why[256];
    struct assembler_options ao = {.clock = &a->clock};

    clock_offset_init(&a->clock, clock_mono_to_real_offset());
    struct discovery_options dopt = {.node = a->node,
                                     .job_vars = c->discovery_job_vars,
                                     .deny_comms = c->discovery_deny,
                                     .watch = c->discovery_watch,
                                     .netns_own = c->discovery_netns == AGENT_NETNS_OWN};

    a->names = names_new();
    a->assembler = assembler_new(&ao, agent_on_step, a);
    a->stepinfer = stepinfer_new(agent_on_step, a, &a->clock);
    a->discovery = discovery_new(&dopt);
    a->spans = spans_new(&(struct spans_options){.ring_bytes = c->spans_ring_bytes,
                                                 .keep_ns = c->spans_keep,
                                                 .chunk_ns = NSEC_PER_SEC,
                                                 .capture_max = c->spans_capture_max,
                                                 .clock = &a->clock});
    a->frames = stepframes_new(&(struct stepframes_options){
        .clock = &a->clock, .names = a->names, .emit = agent_emit_step, .ctx = a});
    a->live = liveness_new(&(struct liveness_options){.after_ns = c->status_after,
                                                      .interval_ns = c->status_interval,
                                                      .clock = &a->clock,
                                                      .emit = agent_emit_status,
                                                      .stack = agent_status_stack,
                                                      .name = agent_name,
                                                      .ctx = a});
    a->hw = hw_new(&(struct hw_options){.gpus = c->hw_nvml,
                                        .nvml_lib = c->hw_nvml_lib,
                                        .nics = c->hw_nics,
                                        .nic_list = c->hw_nic_list,
                                        .interval_ns = c->hw_interval},
                   why, sizeof(why));
    if (!a->names || !a->assembler || !a->discovery || !a->stepinfer || !a->frames || !a->spans ||
        !a->live || !a->hw || hw_start(a->hw) < 0)
        return -ENOMEM;
    names_define(a->names, name_id(STEPINFER_PHASE_COMPUTE), STEPINFER_PHASE_COMPUTE);
    names_define(a->names, name_id(STEPINFER_PHASE_COLLECTIVES), STEPINFER_PHASE_COLLECTIVES);
    a->delivery =
        agent_delivery_new(&(struct agent_delivery_options){.cfg = c,
                                                            .agent_id = a->agent_id,
                                                            .names = a->names,
                                                            .on_capture = agent_on_capture,
                                                            .on_capture_ctx = a,
                                                            .rl = &a->rl});
    return a->delivery ? 0 : -EIO;
}

static int agent_start_http(struct agent *a)
{
    char err[256];

    if (!*a->cfg->http_listen)
        return 0;
    a->http = http_start(a->cfg->http_listen, agent_http_handler, &a->http_state, err, sizeof(err));
    if (!a->http) {
        log_error("agent", "http.listen: %s", err);
        return -EADDRINUSE;
    }
    log_info("agent", "HTTP /metrics and /healthz on %s (port %d)", a->cfg->http_listen,
             http_port(a->http));
    return 0;
}

/* Start the sources (agent_sources.h) with the agent's sink and
 * collectives observers; hand the stacks probe to the steps waiting for
 * their frames, and tell discovery whether communicators can be watched. */
static int agent_start_sources(struct agent *a)
{
    struct agent_sources_options so = {
        .cfg = a->cfg,
        .node = a->node,
        .epfd = a->epfd,
        .sink = {agent_on_event, agent_on_name, a},
        .collectives = {.on_call = agent_on_collective,
                        .on_call_ctx = a,
                        .on_comm_init = agent_on_comm_init,
                        .on_done = agent_on_collective_done,
                        .on_rendezvous = agent_on_rendezvous},
        .rl = &a->rl,
    };
    void *stacks;

    a->sources = agent_sources_new(&so);
    if (!a->sources)
        return -ENOMEM;
    agent_sources_start_probes(a->sources);
    /* before any other source starts: no step may reach stepframes before
     * it knows the stacks probe */
    stacks = agent_sources_state(a->sources, &probe_stacks_ops);
    if (stacks)
        stepframes_set_source(
            a->frames,
            &(struct stepframes_source){probe_stacks_settled, probe_stacks_top_frames, stacks});
    agent_sources_start_others(a->sources);
    discovery_set_watching(a->discovery,
                           agent_sources_state(a->sources, &probe_collectives_ops) != NULL);
    return 0;
}

struct agent *agent_setup(struct agent_config *cfg, int argc, char **argv)
{
    struct agent *a;

    a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->cfg = cfg;
    a->argc = argc;
    a->argv = argv;
    a->epfd = a->sigfd = -1;
    a->rl = (struct log_ratelimit){.interval_ns = 10 * NSEC_PER_SEC, .burst = 5};
    if (*cfg->node_name)
        snprintf(a->node, sizeof(a->node), "%s", cfg->node_name);
    else if (gethostname(a->node, sizeof(a->node)) < 0)
        snprintf(a->node, sizeof(a->node), "localhost");
    snprintf(a->agent_id, sizeof(a->agent_id), "%s", *cfg->agent_id ? cfg->agent_id : a->node);
    a->sigfd = daemon_signalfd();
    a->epfd = epoll_create1(EPOLL_CLOEXEC);
    agent_http_init(&a->http_state);
    if (a->sigfd < 0 || a->epfd < 0 || agent_build_pipeline(a) < 0 || agent_start_http(a) < 0) {
        agent_teardown(a);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->sigfd, &ev);
    if (agent_start_sources(a) < 0) {
        agent_teardown(a);
        return NULL;
    }
    discovery_scan(a->discovery, &agent_discovery_cb, a);
    log_info("agent", "agent %s on node %s, collector%s %s", a->agent_id, a->node,
             cfg->collector_set[0] || cfg->collector_dns[0] ? "s" : "",
             agent_delivery_collectors(a->delivery));
    return a;
}

/* --- the loop --------------------------------------------------------------- */

/* For stepinfer: a rank that marks its own steps needs no inferred ones. */
static bool agent_explicit_steps(void *ctx, uint32_t pid)
{
    return assembler_has_steps(((struct agent *)ctx)->assembler, pid);
}

/* The time about period after now on the grid of AGENT_DISPATCH_NS, where
 * the probes' timers fire too (probe_wakeup_open): periodic work shares
 * their wakeups instead of adding its own. Shorter periods (tests) are
 * kept as they are. */
static uint64_t agent_on_grid(uint64_t now, uint64_t period)
{
    if (period < AGENT_DISPATCH_NS)
        return now + period;
    return (now + period) / AGENT_DISPATCH_NS * AGENT_DISPATCH_NS;
}

/* The log says what discovery sees: one line whenever the number of ranks,
 * of watched processes or of skipped candidates changed since the last. */
static void agent_log_discovery(struct agent *a)
{
    struct discovery_stats ds;
    char skipped[256] = "";
    size_t n = 0;
    uint64_t sum;

    discovery_get_stats(a->discovery, &ds);
    sum = ds.ranks * 1000003u + ds.watched * 1009u;
    for (int r = 0; r < DISCOVERY_SKIP_COUNT; r++) {
        sum += ds.skipped[r] * (r + 7u);
        if (ds.skipped[r] && n < sizeof(skipped))
            n += (size_t)snprintf(skipped + n, sizeof(skipped) - n, " %s %llu",
                                  discovery_skip_name(r), (unsigned long long)ds.skipped[r]);
    }
    if (sum == a->discovery_logged)
        return;
    a->discovery_logged = sum;
    log_info("agent",
             "discovery: %llu ranks tracked, %llu processes watched for their "
             "communicator; skipped:%s",
             (unsigned long long)ds.ranks, (unsigned long long)ds.watched, n ? skipped : " none");
}

/* Copy the stats of every stage into the snapshot /metrics serves. */
static void agent_publish(struct agent *a, uint64_t now)
{
    struct agent_snapshot s = {.tick_ns = now,
                               .loop_turns = a->loop_turns,
                               .loop_busy_max_ns = a->loop_busy_max_ns,
                               .clock_steps = a->clock_steps};

    assembler_get_stats(a->assembler, &s.assembler);
    agent_delivery_get_stats(a->delivery, &s.delivery);
    discovery_get_stats(a->discovery, &s.discovery);
    stepframes_get_stats(a->frames, &s.frames);
    stepinfer_get_stats(a->stepinfer, &s.stepinfer);
    spans_get_stats(a->spans, &s.spans);
    liveness_get_stats(a->live, &s.liveness);
    hw_get_stats(a->hw, &s.hw);
    agent_http_publish(&a->http_state, &s, a->sources, a->delivery, now);
}

/* Periodic work of one tick. */
static void agent_tick(struct agent *a, uint64_t now)
{
    int64_t stepped = clock_offset_refresh(&a->clock, now);

    if (stepped) {
        a->clock_steps++;
        log_at(stepped > (int64_t)NSEC_PER_MSEC || stepped < -(int64_t)NSEC_PER_MSEC
                   ? LOG_LEVEL_WARN
                   : LOG_LEVEL_INFO,
               "agent", "the realtime clock was set %+.3f ms: times from now on use the new time",
               (double)stepped / 1e6);
    }
    if (now >= a->next_dispatch_ns) {
        agent_sources_poll(a->sources);
        a->next_dispatch_ns = agent_on_grid(now, AGENT_DISPATCH_NS);
    }
    if (now >= a->next_scan_ns) {
        discovery_scan(a->discovery, &agent_discovery_cb, a);
        agent_log_discovery(a);
        a->next_scan_ns = agent_on_grid(now, a->cfg->discovery_scan_interval);
    }
    if (now >= a->next_infer_ns) {
        stepinfer_tick(a->stepinfer, agent_explicit_steps, a);
        agent_log_stepinfer(a);
        liveness_tick(a->live, now);
        a->next_infer_ns = agent_on_grid(now, NSEC_PER_SEC);
    }
    stepframes_tick(a->frames, now);
    spans_tick(a->spans, now);
    agent_delivery_tick(a->delivery, now);
    agent_publish(a, now);
}

/* SIGHUP: load and validate the config again (the checks of a start); log
 * each changed key and whether it applied: log.level and the CUPTI sampling
 * apply live, the rest at the next restart. An invalid config is refused
 * whole and the running one kept. */
static void agent_reload(struct agent *a)
{
    struct agent_config fresh = {0};
    struct config_result res;

    daemon_notify("RELOADING=1");
    agent_delivery_reload_tls(a->delivery);
    if (config_load(&agent_config_table, &fresh, a->argc, a->argv, &res) < 0) {
        log_error("agent", "reload rejected, keeping the running config: %s",
                  config_errors_oneline(&res));
    } else {
        config_apply_changes(&agent_config_table, a->cfg, &fresh);
        log_set_level((enum log_level)a->cfg->log_level);
        agent_sources_apply_sampling(a->sources, a->cfg);
    }
    config_free(&agent_config_table, &fresh);
    daemon_notify("READY=1");
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* A deadline of work that may wait for the next tick of the grid (sealing a
 * batch, an fsync, a step record's frames): up to AGENT_DISPATCH_NS later,
 * where the loop wakes anyway, instead of a wakeup of its own. Only where
 * those periods are a second or so (the defaults); shorter ones (tests,
 * a low-latency setting) keep their deadlines. */
static uint64_t agent_grid_deadline(const struct agent *a, uint64_t t)
{
    if (t == UINT64_MAX || a->cfg->batch_max_age < 10 * AGENT_DISPATCH_NS ||
        a->cfg->spool_fsync_interval < 10 * AGENT_DISPATCH_NS)
        return t;
    return (t + AGENT_DISPATCH_NS - 1) / AGENT_DISPATCH_NS * AGENT_DISPATCH_NS;
}

/* How long the loop may sleep: until the earliest deadline of the periodic
 * work, so that an idle agent wakes about once a second and a busy one only
 * on the grid or when an outstanding send is due. */
static int agent_sleep_ms(struct agent *a, uint64_t now, uint64_t next_watchdog)
{
    uint64_t next = min64(now + AGENT_MAX_SLEEP_NS, min64(a->next_scan_ns, a->next_infer_ns));
    uint64_t later = min64(agent_delivery_due_ns(a->delivery, now), stepframes_next_ns(a->frames));

    if (agent_sources_polled(a->sources))
        next = min64(next, a->next_dispatch_ns);
    next = min64(next, agent_grid_deadline(a, later));
    next = min64(next, agent_delivery_send_ns(a->delivery, now));
    next = min64(next, next_watchdog);
    return next <= now ? 0 : (int)((next - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
}

/* How long one turn of the loop (its events and periodic work) kept it from
 * epoll: nothing may stall it, so the longest turn is in /metrics and a
 * turn of over a second is logged. */
static void agent_loop_busy(struct agent *a, uint64_t woke)
{
    uint64_t busy = clock_mono_ns() - woke;

    a->loop_turns++;
    if (busy > a->loop_busy_max_ns)
        a->loop_busy_max_ns = busy;
    if (busy > NSEC_PER_SEC)
        log_ratelimited(&a->rl, LOG_LEVEL_WARN, "agent", "main loop busy for %llu ms in one turn",
                        (unsigned long long)(busy / NSEC_PER_MSEC));
}

int agent_run(struct agent *a)
{
    struct epoll_event evs[32];
    uint64_t watchdog = daemon_watchdog_ns(), next_watchdog = watchdog ? 0 : UINT64_MAX;

    daemon_notify("READY=1");
    for (;;) {
        int n = epoll_wait(a->epfd, evs, 32, agent_sleep_ms(a, clock_mono_ns(), next_watchdog));
        uint64_t woke = clock_mono_ns();

        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr) { /* a source's fd */
                agent_sources_dispatch(a->sources, evs[i].data.ptr);
                continue;
            }
            enum daemon_signal sig = daemon_read_signal(a->sigfd);
            if (sig == DAEMON_SIGNAL_STOP)
                return 0;
            if (sig == DAEMON_SIGNAL_RELOAD)
                agent_reload(a);
        }
        uint64_t now = clock_mono_ns();
        agent_tick(a, now);
        if (watchdog && now >= next_watchdog) {
            daemon_notify("WATCHDOG=1");
            next_watchdog = now + watchdog / 3;
        }
        agent_loop_busy(a, woke);
    }
}

/* SIGTERM: take what the sources read or hold (a probe's ring is read on a
 * 100 ms tick; the sched probe holds thread ends for their free), close
 * open steps, seal them into the spool, and give the exporter a bounded
 * time to get everything acked; what is left stays spooled. */
static bool agent_flush(struct agent *a)
{
    uint64_t end = clock_mono_ns() + AGENT_FLUSH_NS;

    if (a->sources)
        agent_sources_flush(a->sources);
    assembler_flush(a->assembler);
    stepframes_flush(a->frames);
    return agent_delivery_flush(a->delivery, end);
}

void agent_teardown(struct agent *a)
{
    uint64_t t0 = clock_mono_ns();

    if (!a)
        return;
    daemon_notify("STOPPING=1");
    http_stop(a->http);
    if (a->delivery && a->assembler && a->frames) {
        bool acked = agent_flush(a);
        log_info("agent", "stopping: flush took %.2f s (%s)",
                 (double)(clock_mono_ns() - t0) / NSEC_PER_SEC,
                 acked ? "everything acked" : "the rest stays spooled");
    }
    stepframes_free(a->frames); /* before the sources it asks */
    agent_sources_free(a->sources);
    agent_delivery_free(a->delivery);
    assembler_free(a->assembler);
    stepinfer_free(a->stepinfer);
    spans_free(a->spans);
    liveness_free(a->live);
    hw_free(a->hw);
    names_free(a->names);
    discovery_free(a->discovery);
    if (a->epfd >= 0)
        close(a->epfd);
    if (a->sigfd >= 0)
        close(a->sigfd);
    agent_http_destroy(&a->http_state);
    free(a);
}
