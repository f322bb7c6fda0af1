/* The agent's sources: the probe table, CUPTI and the replay sources, each
 * created and started through its source_ops (see agent_sources.h). */
#include "agent/agent_sources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "agent/probes/probe_io.h"
#include "agent/probes/probe_marker.h"
#include "agent/probes/probe_net.h"
#include "agent/probes/probe_proc.h"
#include "agent/probes/probe_sched.h"
#include "agent/probes/probe_stacks.h"
#include "agent/probes/probe_sync.h"
#include "agent/sources/records.h"
#include "agent/sources/source_cupti.h"
#include "agent/sources/source_replay.h"
#include "common/clock.h"
#include "common/log.h"

struct agent_source {
    const struct source_ops *ops;
    void *state;
    bool running;
    int fd;
    char why[256]; /* why it is not running */
};

struct agent_sources {
    struct agent_sources_options o;
    struct agent_source sources[AGENT_SOURCES_MAX];
    size_t n;
    /* the sources' configs: create() may keep a pointer to them */
    struct probe_stacks_config stacks;
    struct source_cupti_config cupti;
    struct replay_config replay;
    struct records_config records;
};

/* --- the probe table ------------------------------------------------------- */

/* One eBPF probe: started when probes.enable lists ops->name. */
struct agent_probe {
    const struct source_ops *ops;
    /* its config from the agent's (kept in s), or NULL for none */
    const void *(*config)(struct agent_sources *s);
};

static const void *agent_collectives_config(struct agent_sources *s)
{
    return &s->o.collectives;
}

static const void *agent_stacks_config(struct agent_sources *s)
{
    s->stacks = (struct probe_stacks_config){.frequency_hz = (uint32_t)s->o.cfg->stacks_hz,
                                             .cache_bytes = s->o.cfg->stacks_cache};
    return &s->stacks;
}

/* In start order. */
static const struct agent_probe agent_probes[] = {
    {&probe_proc_ops, NULL},
    {&probe_sched_ops, NULL},
    {&probe_collectives_ops, agent_collectives_config},
    {&probe_sync_ops, NULL},
    {&probe_marker_ops, NULL},
    {&probe_net_ops, NULL},
    {&probe_io_ops, NULL},
    {&probe_stacks_ops, agent_stacks_config},
};

#define AGENT_PROBES_N (sizeof(agent_probes) / sizeof(*agent_probes))

const char *const *agent_sources_probe_names(void)
{
    static const char *names[AGENT_PROBES_N + 1];

    for (size_t i = 0; i < AGENT_PROBES_N; i++) /* the same every time: no race to fear */
        names[i] = agent_probes[i].ops->name;
    return names;
}

/* --- starting ---------------------------------------------------------------- */

/* Create and start one source; a source that cannot run is recorded with its
 * reason and the agent runs on without it. */
static void agent_sources_add(struct agent_sources *s, const struct source_ops *ops,
                              const void *config)
{
    struct agent_source *src;

    if (s->n >= AGENT_SOURCES_MAX)
        return;
    src = &s->sources[s->n++];
    *src = (struct agent_source){.ops = ops, .fd = -1};
    if (ops->supported && ops->supported(src->why, sizeof(src->why)) < 0)
        goto off;
    src->state = ops->create(config, src->why, sizeof(src->why));
    if (!src->state)
        goto off;
    if (ops->start(src->state, &s->o.sink, src->why, sizeof(src->why)) < 0)
        goto off;
    src->running = true;
    src->fd = ops->fd ? ops->fd(src->state) : -1;
    if (src->fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = src};
        epoll_ctl(s->o.epfd, EPOLL_CTL_ADD, src->fd, &ev);
    }
    log_info("agent", "source %s running", ops->name);
    return;
off:
    log_warn("agent", "source %s is off: %s", ops->name, src->why[0] ? src->why : "unsupported");
    if (src->state)
        ops->destroy(src->state);
    src->state = NULL;
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

void agent_sources_start_probes(struct agent_sources *s)
{
    for (size_t i = 0; i < AGENT_PROBES_N; i++) {
        const struct agent_probe *p = &agent_probes[i];

        if (agent_listed(s->o.cfg->probes, p->ops->name))
            agent_sources_add(s, p->ops, p->config ? p->config(s) : NULL);
    }
}

void agent_sources_start_others(struct agent_sources *s)
{
    const struct agent_config *c = s->o.cfg;

    if (c->cupti_enable) {
        s->cupti = (struct source_cupti_config){
            .socket_path = c->cupti_socket,
            .socket_group = c->cupti_socket_group,
            .sample_mode = (uint32_t)c->cupti_sample_mode,
            .sample_k = (uint32_t)c->cupti_sample_k,
            .sample_n = (uint32_t)c->cupti_sample_n,
        };
        agent_sources_add(s, &source_cupti_ops, &s->cupti);
    }
    if (*c->replay_trace) {
        s->replay = (struct replay_config){
            .path = c->replay_trace,
            .job = c->replay_job,
            .node = s->o.node,
            .ranks = (uint32_t)c->replay_ranks,
            .rank_base = (uint32_t)c->replay_rank_base,
            .world = (uint32_t)c->replay_world,
            .rate = c->replay_rate,
            .stretch = c->replay_stretch,
            .steps = c->replay_steps,
        };
        agent_sources_add(s, &source_replay_ops, &s->replay);
    }
    if (*c->replay_records) {
        s->records = (struct records_config){c->replay_records, c->replay_rate};
        agent_sources_add(s, &source_records_ops, &s->records);
    }
}

struct agent_sources *agent_sources_new(const struct agent_sources_options *o)
{
    struct agent_sources *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->o = *o;
    return s;
}

void agent_sources_free(struct agent_sources *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t t0 = clock_mono_ns();
        if (!s->sources[i].state)
            continue;
        s->sources[i].ops->destroy(s->sources[i].state);
        uint64_t took = clock_mono_ns() - t0;
        if (took > 100 * NSEC_PER_MSEC)
            log_info("agent", "stopping: source %s took %.2f s", s->sources[i].ops->name,
                     (double)took / NSEC_PER_SEC);
    }
    free(s);
}

/* --- running ------------------------------------------------------------------ */

static void agent_sources_dispatch_one(struct agent_sources *s, struct agent_source *src)
{
    int r = src->ops->dispatch(src->state);

    if (r < 0)
        log_ratelimited(s->o.rl, LOG_LEVEL_WARN, "agent", "source %s: %s", src->ops->name,
                        strerror(-r));
}

void agent_sources_dispatch(struct agent_sources *s, void *handle)
{
    agent_sources_dispatch_one(s, handle);
}

void agent_sources_poll(struct agent_sources *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sources[i].running && s->sources[i].fd < 0)
            agent_sources_dispatch_one(s, &s->sources[i]);
}

bool agent_sources_polled(const struct agent_sources *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sources[i].running && s->sources[i].fd < 0)
            return true;
    return false;
}

void agent_sources_flush(struct agent_sources *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct agent_source *src = &s->sources[i];

        if (!src->running)
            continue;
        agent_sources_dispatch_one(s, src);
        if (src->ops->flush)
            src->ops->flush(src->state);
    }
}

void agent_sources_track(struct agent_sources *s, const struct source_ops *only, uint32_t pid,
                         const char *root, bool add)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct agent_source *src = &s->sources[i];

        if (src->running && src->ops->track && (!only || src->ops == only))
            src->ops->track(src->state, pid, root, add);
    }
}

void *agent_sources_state(const struct agent_sources *s, const struct source_ops *ops)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sources[i].running && s->sources[i].ops == ops)
            return s->sources[i].state;
    return NULL;
}

void agent_sources_apply_sampling(struct agent_sources *s, const struct agent_config *c)
{
    void *cupti = agent_sources_state(s, &source_cupti_ops);

    if (cupti)
        source_cupti_set_sampling(cupti, (uint32_t)c->cupti_sample_mode,
                                  (uint32_t)c->cupti_sample_k, (uint32_t)c->cupti_sample_n);
}

size_t agent_sources_status(const struct agent_sources *s, struct agent_source_status *out,
                            size_t max)
{
    size_t n = s->n < max ? s->n : max;

    for (size_t i = 0; i < n; i++)
        out[i] = (struct agent_source_status){s->sources[i].ops->name, s->sources[i].running};
    return n;
}

void agent_sources_metrics(const struct agent_sources *s, char *buf, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++) {
        const struct agent_source *src = &s->sources[i];

        if (src->running && src->ops->metrics && n + 1 < len)
            n += src->ops->metrics(src->state, buf + n, len - n);
    }
    buf[n < len ? n : len - 1] = 0;
}
