/* The agent's sources: the probes listed in probes.enable, CUPTI, the
 * replay sources, each created and started through its source_ops (a source
 * that cannot run is left off with its reason); their dispatch, and the
 * CUPTI sampling that a reload changes. */
#include "agent/agent_sources.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "agent/agent_impl.h"
#include "agent/discovery/discovery.h"
#include "agent/probes/probe_io.h"
#include "agent/probes/probe_marker.h"
#include "agent/probes/probe_net.h"
#include "agent/probes/probe_proc.h"
#include "agent/probes/probe_sched.h"
#include "agent/probes/probe_sync.h"
#include "agent/steps/assembler.h"
#include "agent/steps/stepframes.h"
#include "agent/steps/stepinfer.h"

/* Create and start one source; a source that cannot run is recorded with its
 * reason and the agent runs on without it. */
static void agent_add_source(struct agent *a, const struct source_ops *ops, const void *config)
{
    struct agent_source *s;

    if (a->nsources >= AGENT_MAX_SOURCES)
        return;
    s = &a->sources[a->nsources++];
    *s = (struct agent_source){.ops = ops, .fd = -1};
    if (ops->supported && ops->supported(s->why, sizeof(s->why)) < 0)
        goto off;
    s->state = ops->create(config, s->why, sizeof(s->why));
    if (!s->state)
        goto off;
    if (ops->start(s->state, &a->sink, s->why, sizeof(s->why)) < 0)
        goto off;
    s->running = true;
    s->fd = ops->fd ? ops->fd(s->state) : -1;
    if (s->fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
        epoll_ctl(a->epfd, EPOLL_CTL_ADD, s->fd, &ev);
    }
    log_info("agent", "source %s running", ops->name);
    return;
off:
    log_warn("agent", "source %s is off: %s", ops->name, s->why[0] ? s->why : "unsupported");
    if (s->state)
        ops->destroy(s->state);
    s->state = NULL;
}

void agent_dispatch(struct agent *a, struct agent_source *s)
{
    int r = s->ops->dispatch(s->state);

    if (r < 0)
        log_ratelimited(&a->rl, LOG_LEVEL_WARN, "agent", "source %s: %s", s->ops->name,
                        strerror(-r));
}

static void agent_on_collective(void *ctx, uint32_t pid, uint64_t enter_ns, uint64_t exit_ns,
                                const struct probe_collectives_call *call)
{
    struct agent *a = ctx;

    if (!call->wait && !call->tag)
        stepinfer_call(a->stepinfer, pid,
                       &(struct stepinfer_call){enter_ns, exit_ns, call->name_id, call->bytes,
                                                call->comm, call->lib_seq, call->group,
                                                call->done_ns});
    if (!discovery_find(a->discovery, pid))
        discovery_unidentified_call(a->discovery, pid);
}

static void agent_on_collective_done(void *ctx, uint32_t pid, uint64_t comm, int64_t lib_seq,
                                     uint64_t done_ns)
{
    stepinfer_done(((struct agent *)ctx)->stepinfer, pid, comm, lib_seq, done_ns);
}

static void agent_on_comm_init(void *ctx, uint32_t pid, uint32_t rank, uint32_t size,
                               const char *what)
{
    agent_comm_init(ctx, pid, rank, size, what);
}

bool agent_source_running(const struct agent *a, const struct source_ops *ops)
{
    for (size_t i = 0; i < a->nsources; i++)
        if (a->sources[i].running && a->sources[i].ops == ops)
            return true;
    return false;
}

/* True when name is in the comma-separated list. */
static bool agent_listed(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

static void agent_start_probes(struct agent *a)
{
    const char *list = a->cfg->probes;

    a->collectives = (struct probe_collectives_config){.on_call = agent_on_collective,
                                                       .on_call_ctx = a,
                                                       .on_comm_init = agent_on_comm_init,
                                                       .on_done = agent_on_collective_done};
    a->stacks = (struct probe_stacks_config){.frequency_hz = (uint32_t)a->cfg->stacks_hz,
                                             .cache_bytes = a->cfg->stacks_cache};
    if (agent_listed(list, "proc"))
        agent_add_source(a, &probe_proc_ops, NULL);
    if (agent_listed(list, "sched"))
        agent_add_source(a, &probe_sched_ops, NULL);
    if (agent_listed(list, "collectives"))
        agent_add_source(a, &probe_collectives_ops, &a->collectives);
    if (agent_listed(list, "sync"))
        agent_add_source(a, &probe_sync_ops, NULL);
    if (agent_listed(list, "marker"))
        agent_add_source(a, &probe_marker_ops, NULL);
    if (agent_listed(list, "net"))
        agent_add_source(a, &probe_net_ops, NULL);
    if (agent_listed(list, "io"))
        agent_add_source(a, &probe_io_ops, NULL);
    if (agent_listed(list, "stacks")) {
        agent_add_source(a, &probe_stacks_ops, &a->stacks);
        if (a->sources[a->nsources - 1].running) {
            struct stepframes_source src = {probe_stacks_settled, probe_stacks_top_frames,
                                            a->sources[a->nsources - 1].state};
            stepframes_set_source(a->frames, &src);
        }
    }
}

void agent_start_sources(struct agent *a)
{
    const struct agent_config *c = a->cfg;

    agent_start_probes(a);

    if (c->cupti_enable) {
        a->cupti = (struct source_cupti_config){
            .socket_path = c->cupti_socket,
            .socket_group = c->cupti_socket_group,
            .sample_mode = (uint32_t)c->cupti_sample_mode,
            .sample_k = (uint32_t)c->cupti_sample_k,
            .sample_n = (uint32_t)c->cupti_sample_n,
        };
        agent_add_source(a, &source_cupti_ops, &a->cupti);
    }

    if (*c->replay_trace) {
        a->replay = (struct replay_config){
            .path = c->replay_trace,
            .job = c->replay_job,
            .node = a->node,
            .ranks = (uint32_t)c->replay_ranks,
            .rank_base = (uint32_t)c->replay_rank_base,
            .world = (uint32_t)c->replay_world,
            .rate = c->replay_rate,
            .steps = c->replay_steps,
        };
        agent_add_source(a, &source_replay_ops, &a->replay);
    }
    if (*c->replay_records) {
        a->records = (struct records_config){c->replay_records, c->replay_rate};
        agent_add_source(a, &source_records_ops, &a->records);
    }
}

void agent_apply_sampling(struct agent *a, const struct agent_config *c)
{
    for (size_t i = 0; i < a->nsources; i++)
        if (a->sources[i].running && a->sources[i].ops == &source_cupti_ops)
            source_cupti_set_sampling(a->sources[i].state, (uint32_t)c->cupti_sample_mode,
                                      (uint32_t)c->cupti_sample_k, (uint32_t)c->cupti_sample_n);
}
