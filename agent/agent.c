/* The agent's composition root: setup wires the stages (sources -> steps
 * -> delivery) together, the event path carries what the sources report
 * into them, the loop runs their periodic work, teardown flushes and frees.
 * Sources and probes are started in agent_sources.c, /metrics is published
 * from agent_http.c; struct agent is in agent_impl.h. */
#include "agent/agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent/agent_impl.h"
#include "agent/agent_sources.h"
#include "agent/delivery/batcher.h"
#include "agent/delivery/drops.h"
#include "agent/delivery/dropstate.h"
#include "agent/delivery/exporter.h"
#include "agent/delivery/names.h"
#include "agent/delivery/spool.h"
#include "agent/discovery/discovery.h"
#include "agent/spans/spans.h"
#include "agent/steps/assembler.h"
#include "agent/steps/stepframes.h"
#include "agent/steps/stepinfer.h"
#include "common/daemon.h"
#include "common/http.h"
#include "common/tls.h"
#include "common/name_id.h"

#define AGENT_DISPATCH_NS (100 * NSEC_PER_MSEC) /* sources without an fd are polled */
#define AGENT_FLUSH_NS (3 * NSEC_PER_SEC)       /* SIGTERM: try this long to get the spool acked */

/* --- the event path ------------------------------------------------------- */

static void agent_track_all(struct agent *a, uint32_t pid, const char *root, bool add)
{
    for (size_t i = 0; i < a->nsources; i++)
        if (a->sources[i].running && a->sources[i].ops->track)
            a->sources[i].ops->track(a->sources[i].state, pid, root, add);
}

static void agent_rank(struct agent *a, const Argus__V1__Resource *r, const char *root)
{
    if (assembler_track(a->assembler, r) < 0 || names_set_resource(a->names, r) < 0) {
        log_error("agent", "out of memory tracking rank %u of job %s", r->rank, r->job);
        return;
    }
    stepinfer_track(a->stepinfer, r->pid, r->job, r->rank);
    spans_track(a->spans, r->pid, r->job, r->rank);
    log_info("agent", "rank %u of job %s (pid %u, world %u, node %s)", r->rank, r->job, r->pid,
             r->world_size, r->node);
    agent_track_all(a, r->pid, root, true);
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
    agent_track_all(a, ri->pid, ri->root, false);
    stepinfer_untrack(a->stepinfer, ri->pid, !assembler_has_steps(a->assembler, ri->pid));
    spans_untrack(a->spans, ri->pid, clock_mono_ns());
    assembler_untrack(a->assembler, ri->pid);
}

/* A process that may create a communicator: the collectives probe looks at
 * it as at a rank (its libraries, its calls) until it says its rank. */
static void agent_on_watch(void *ctx, uint32_t pid, const char *root, bool add)
{
    struct agent *a = ctx;

    for (size_t i = 0; i < a->nsources; i++)
        if (a->sources[i].running && a->sources[i].ops == &probe_collectives_ops)
            a->sources[i].ops->track(a->sources[i].state, pid, root, add);
}

static const struct discovery_callbacks agent_discovery_cb = {agent_on_rank_new, agent_on_rank_exit,
                                                              agent_on_watch};

void agent_comm_init(struct agent *a, uint32_t pid, uint32_t rank, uint32_t size, const char *what)
{
    log_debug("agent", "pid %u: %s(rank %u, size %u)", pid, what, rank, size);
    discovery_comm_init(a->discovery, pid, rank, size, &agent_discovery_cb, a);
}

/* A finished step record into the open batch; one the batcher has no memory
 * for is counted as a drop of its rank. */
static void agent_batch_step(struct agent *a, const Argus__V1__StepRecord *s)
{
    if (batcher_add_step(a->batcher, s, clock_mono_ns()) == -ENOMEM)
        drops_add(a->drops, BATCHER_DROP_NOMEM, s->job, (int32_t)s->rank, 1);
}

static void agent_on_event(void *ctx, const struct agent_event *ev)
{
    struct agent *a = ctx;

    spans_event(a->spans, ev);
    switch (ev->kind) {
    case AGENT_EVENT_RANK:
        agent_rank(a, ev->rank.resource, "/");
        break;
    case AGENT_EVENT_RECORD:
        agent_batch_step(a, ev->record.step);
        break;
    case AGENT_EVENT_PROC_EXEC:
        discovery_check_pid(a->discovery, ev->pid, &agent_discovery_cb, a);
        break;
    case AGENT_EVENT_PROC_EXIT:
        discovery_exit_pid(a->discovery, ev->pid, &agent_discovery_cb, a);
        break;
    case AGENT_EVENT_DROPS:
        drops_add(a->drops, ev->drops.reason, NULL, -1, ev->drops.count);
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

    stepframes_add(a->frames, pid, s, clock_mono_ns());
}

/* A step with its frames, on to the batcher. */
static void agent_emit_step(void *ctx, const Argus__V1__StepRecord *s)
{
    agent_batch_step(ctx, s);
}

/* --- batches into the spool ----------------------------------------------- */

/* Drop counters the spool does not rebuild itself go on from where the
 * last run of this spool epoch left them (agent/delivery/dropstate.h). */
static const char *const agent_spool_counters[] = {SPOOL_LOSS_CAP, SPOOL_LOSS_CORRUPT, NULL};

static void agent_load_drops(struct agent *a)
{
    int n =
        dropstate_load(a->cfg->spool_dir, spool_epoch(a->spool), a->drops, agent_spool_counters);

    if (n < 0)
        log_warn("agent", "%s/%s: %s; drop counters start from 0", a->cfg->spool_dir,
                 DROPSTATE_FILE, n == -EBADMSG ? "not a drop counter file" : strerror(-n));
    else if (n > 0)
        log_info("agent", "%d drop counters carried over from the last run", n);
    /* what was loaded is saved again with the next batch, in this build's form */
}

static void agent_save_drops(struct agent *a)
{
    int r;

    if (!drops_changed(a->drops))
        return;
    r = dropstate_save(a->cfg->spool_dir, spool_epoch(a->spool), a->drops, agent_spool_counters);
    if (r < 0)
        log_ratelimited(&a->rl, LOG_LEVEL_WARN, "agent",
                        "cannot save drop counters in %s: %s (a restart would count from 0)",
                        a->cfg->spool_dir, strerror(-r));
    else
        drops_saved(a->drops);
}

static void agent_seal(struct agent *a)
{
    void *frame;
    size_t len;
    int r;

    agent_save_drops(a); /* before any batch carries the new totals */
    r = batcher_seal(a->batcher, spool_epoch(a->spool), spool_next_seq(a->spool), &frame, &len);

    if (r == -ENODATA)
        return;
    if (r == 0) {
        r = spool_append(a->spool, frame, len, NULL);
        free(frame);
    }
    if (r < 0) {
        a->batch_errors++;
        drops_add(a->drops, r == -ENOSPC ? "spool_disk_full" : "spool_write", NULL, -1, 1);
        log_ratelimited(&a->rl, LOG_LEVEL_ERROR, "agent", "batch lost before the spool: %s",
                        strerror(-r));
    }
}

/* The spool's own losses (cap, corruption) become drop counters that travel
 * to the collector (spool_options.on_loss). */
static void agent_on_spool_loss(void *ctx, const char *reason, uint64_t count)
{
    struct agent *a = ctx;

    drops_add(a->drops, reason, NULL, -1, count);
    if (strcmp(reason, SPOOL_LOSS_CAP) == 0)
        log_ratelimited(&a->rl, LOG_LEVEL_WARN, "agent",
                        "spool over spool.cap: %llu oldest batches dropped so far",
                        (unsigned long long)drops_get(a->drops, reason, NULL, -1));
}

/* The collector has every batch up to seq: so it has the names and
 * resources they carried. */
static void agent_on_ack(void *ctx, uint64_t seq)
{
    struct agent *a = ctx;

    names_ack(a->names, seq);
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
        r = batcher_add_trace(a->batcher, packed, len);
    if (r == 0)
        log_info("agent", "capture of report %s: rank %u of job %s, %zu bytes of spans",
                 req->report_id, req->rank, req->job, len);
    else
        log_ratelimited(&a->rl, LOG_LEVEL_WARN, "agent", "capture of report %s lost: %s",
                        req->report_id, strerror(-r));
    free(packed);
}

/* --- setup ------------------------------------------------------------------ */

static int agent_open_spool(struct agent *a)
{
    struct spool_options so = {
        .cap_bytes = a->cfg->spool_cap,
        .segment_bytes = a->cfg->spool_segment,
        .fsync = (enum spool_fsync)a->cfg->spool_fsync,
        .fsync_interval_ns = a->cfg->spool_fsync_interval,
        .on_loss = agent_on_spool_loss,
        .on_loss_ctx = a,
    };
    struct spool_stats ss;
    int r;

    if (so.segment_bytes > so.cap_bytes / 4)
        so.segment_bytes = so.cap_bytes / 4;
    r = spool_open(a->cfg->spool_dir, &so, &a->spool);
    if (r < 0) {
        log_error("agent", "cannot open spool.dir %s: %s", a->cfg->spool_dir,
                  r == -EBUSY ? "another agent holds it" : strerror(-r));
        return r;
    }
    spool_stats(a->spool, &ss);
    log_info("agent",
             "spool %s: epoch %llu, next seq %llu, %llu unacked batches (%llu bytes), "
             "%llu dropped and %llu corrupt so far",
             a->cfg->spool_dir, (unsigned long long)ss.epoch, (unsigned long long)ss.next_seq,
             (unsigned long long)ss.records, (unsigned long long)ss.bytes,
             (unsigned long long)ss.dropped_records, (unsigned long long)ss.corrupt_records);
    return 0;
}

/* The exporter's channel: mTLS from tls.*, or plaintext when asked for. */
static int agent_load_tls(const struct agent_config *c, struct tls_pem *pem, bool *use)
{
    struct tls_files f = {c->tls_ca, c->tls_cert, c->tls_key};
    char err[512];
    int r = tls_choose(c->grpc_plaintext, &f, "grpc.plaintext = true",
                       "tls.ca, tls.cert and tls.key", err, sizeof(err));

    *use = r == 1;
    if (r == 1)
        r = tls_pem_load(&f, pem, err, sizeof(err));
    if (r < 0)
        log_error("agent", "%s", err);
    else if (c->grpc_plaintext)
        log_warn("agent",
                 "grpc.plaintext = true: batches go to %s unencrypted and "
                 "unauthenticated",
                 c->collector_address);
    return r < 0 ? r : 0;
}

static int agent_build_pipeline(struct agent *a)
{
    const struct agent_config *c = a->cfg;
    struct batcher_options bo = {a->agent_id, c->batch_max_steps, c->batch_max_bytes,
                                 c->batch_max_age};
    struct assembler_options ao = {.clock = &a->clock};

    clock_offset_init(&a->clock, clock_mono_to_real_offset());
    struct exporter_options eo = {c->collector_address,
                                  c->collector_keepalive,
                                  c->collector_backoff_min,
                                  c->collector_backoff_max,
                                  agent_on_ack,
                                  a,
                                  .eager = true,
                                  .on_capture = agent_on_capture,
                                  .on_capture_ctx = a};
    struct discovery_options dopt = {.node = a->node,
                                     .job_vars = c->discovery_job_vars,
                                     .deny_comms = c->discovery_deny,
                                     .watch = c->discovery_watch};

    a->names = names_new();
    a->drops = drops_new();
    a->batcher = a->names && a->drops ? batcher_new(&bo, a->names, a->drops) : NULL;
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
    if (!a->batcher || !a->assembler || !a->discovery || !a->stepinfer || !a->frames || !a->spans)
        return -ENOMEM;
    names_define(a->names, name_id(STEPINFER_PHASE_COMPUTE), STEPINFER_PHASE_COMPUTE);
    names_define(a->names, name_id(STEPINFER_PHASE_COLLECTIVES), STEPINFER_PHASE_COLLECTIVES);
    struct tls_pem pem = {0};
    bool tls;
    if (agent_load_tls(c, &pem, &tls) < 0)
        return -EINVAL;
    eo.tls = tls ? &pem : NULL;
    if (agent_open_spool(a) < 0) {
        tls_pem_free(&pem);
        return -EIO;
    }
    agent_load_drops(a);
    a->exporter = exporter_new(&eo, a->spool, a->drops);
    tls_pem_free(&pem); /* the channel keeps its own copy */
    return a->exporter ? 0 : -ENOMEM;
}

static int agent_start_http(struct agent *a)
{
    char err[256];

    pthread_mutex_init(&a->http_state.lock, NULL);
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
    a->sink = (struct event_sink){agent_on_event, agent_on_name, a};
    if (*cfg->node_name)
        snprintf(a->node, sizeof(a->node), "%s", cfg->node_name);
    else if (gethostname(a->node, sizeof(a->node)) < 0)
        snprintf(a->node, sizeof(a->node), "localhost");
    snprintf(a->agent_id, sizeof(a->agent_id), "%s", *cfg->agent_id ? cfg->agent_id : a->node);
    a->sigfd = daemon_signalfd();
    a->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (a->sigfd < 0 || a->epfd < 0 || agent_build_pipeline(a) < 0 || agent_start_http(a) < 0) {
        agent_teardown(a);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->sigfd, &ev);
    agent_start_sources(a);
    discovery_set_watching(a->discovery, agent_source_running(a, &probe_collectives_ops));
    discovery_scan(a->discovery, &agent_discovery_cb, a);
    log_info("agent", "agent %s on node %s, collector %s", a->agent_id, a->node,
             cfg->collector_address);
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
        for (size_t i = 0; i < a->nsources; i++)
            if (a->sources[i].running && a->sources[i].fd < 0)
                agent_dispatch(a, &a->sources[i]);
        a->next_dispatch_ns = agent_on_grid(now, AGENT_DISPATCH_NS);
    }
    if (now >= a->next_scan_ns) {
        discovery_scan(a->discovery, &agent_discovery_cb, a);
        agent_log_discovery(a);
        a->next_scan_ns = agent_on_grid(now, a->cfg->discovery_scan_interval);
    }
    if (now >= a->next_infer_ns) {
        stepinfer_tick(a->stepinfer, agent_explicit_steps, a);
        a->next_infer_ns = agent_on_grid(now, NSEC_PER_SEC);
    }
    stepframes_tick(a->frames, now);
    spans_tick(a->spans, now);
    if (batcher_due(a->batcher, now))
        agent_seal(a);
    exporter_poll(a->exporter, now);
    spool_tick(a->spool, now);
    agent_publish(a, now);
}

/* SIGHUP under mTLS: read the certificate files again and reconnect with
 * them; a set that does not load keeps the running one. */
static void agent_reload_tls(struct agent *a)
{
    struct tls_pem pem = {0};
    bool tls;

    if (a->cfg->grpc_plaintext || agent_load_tls(a->cfg, &pem, &tls) < 0) {
        if (!a->cfg->grpc_plaintext)
            log_error("agent", "TLS files not reloaded, the running ones stay in use");
        return;
    }
    if (exporter_set_tls(a->exporter, &pem, clock_mono_ns()) == 0)
        log_info("agent", "TLS files reloaded (%s); reconnecting to the collector",
                 a->cfg->tls_cert);
    tls_pem_free(&pem);
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
    agent_reload_tls(a);
    if (config_load(&agent_config_table, &fresh, a->argc, a->argv, &res) < 0) {
        log_error("agent", "reload rejected, keeping the running config: %s",
                  config_errors_oneline(&res));
    } else {
        config_apply_changes(&agent_config_table, a->cfg, &fresh);
        log_set_level((enum log_level)a->cfg->log_level);
        agent_apply_sampling(a, a->cfg);
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
    uint64_t later = min64(batcher_next_ns(a->batcher), stepframes_next_ns(a->frames));

    for (size_t i = 0; i < a->nsources; i++)
        if (a->sources[i].running && a->sources[i].fd < 0)
            next = min64(next, a->next_dispatch_ns);
    next = min64(next, agent_grid_deadline(a, min64(later, spool_next_ns(a->spool, now))));
    next = min64(next, exporter_next_ns(a->exporter, now));
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
            struct agent_source *s = evs[i].data.ptr;
            if (s) {
                agent_dispatch(a, s);
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
static void agent_flush(struct agent *a)
{
    uint64_t end = clock_mono_ns() + AGENT_FLUSH_NS;

    for (size_t i = 0; i < a->nsources; i++) {
        struct agent_source *s = &a->sources[i];

        if (!s->running)
            continue;
        agent_dispatch(a, s);
        if (s->ops->flush)
            s->ops->flush(s->state);
    }
    assembler_flush(a->assembler);
    stepframes_flush(a->frames);
    agent_seal(a);
    while (!exporter_idle(a->exporter) && clock_mono_ns() < end) {
        exporter_poll(a->exporter, clock_mono_ns());
        clock_sleep_ns(5 * NSEC_PER_MSEC);
    }
}

/* Destroy every source; the log says which took long (uprobe detach waits
 * for the kernel, per probe). */
static void agent_destroy_sources(struct agent *a)
{
    for (size_t i = 0; i < a->nsources; i++) {
        uint64_t t0 = clock_mono_ns();
        if (!a->sources[i].state)
            continue;
        a->sources[i].ops->destroy(a->sources[i].state);
        uint64_t took = clock_mono_ns() - t0;
        if (took > 100 * NSEC_PER_MSEC)
            log_info("agent", "stopping: source %s took %.2f s", a->sources[i].ops->name,
                     (double)took / NSEC_PER_SEC);
    }
}

void agent_teardown(struct agent *a)
{
    uint64_t t0 = clock_mono_ns();

    if (!a)
        return;
    daemon_notify("STOPPING=1");
    http_stop(a->http);
    if (a->spool && a->exporter && a->assembler && a->frames) {
        agent_flush(a);
        log_info("agent", "stopping: flush took %.2f s (%s)",
                 (double)(clock_mono_ns() - t0) / NSEC_PER_SEC,
                 exporter_idle(a->exporter) ? "everything acked" : "the rest stays spooled");
    }
    stepframes_free(a->frames); /* before the sources it asks */
    agent_destroy_sources(a);
    exporter_free(a->exporter);
    spool_close(a->spool);
    assembler_free(a->assembler);
    stepinfer_free(a->stepinfer);
    batcher_free(a->batcher);
    spans_free(a->spans);
    drops_free(a->drops);
    names_free(a->names);
    discovery_free(a->discovery);
    if (a->epfd >= 0)
        close(a->epfd);
    if (a->sigfd >= 0)
        close(a->sigfd);
    pthread_mutex_destroy(&a->http_state.lock);
    free(a);
}
