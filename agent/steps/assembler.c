#include "agent/steps/assembler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/steps/host_counters.h"
#include "agent/steps/summarize.h"
#include "common/clock.h"

#define ASSEMBLER_PHASE_STACK 16

struct assembler_phase_open {
    uint64_t name_id, ts;
    uint32_t stream;
};

struct assembler_rank {
    uint32_t pid;
    char *job;
    uint32_t rank;
    struct summarizer *sum;
    bool in_step, had_step;
    uint64_t step, start_ts, last_ts;
    uint32_t source;
    bool sampled;
    Argus__V1__Phase *phases, **phase_ptrs;
    size_t nphases;
    Argus__V1__Collective *colls, **coll_ptrs;
    size_t ncolls;
    Argus__V1__HostCounters host;
    struct assembler_phase_open stack[ASSEMBLER_PHASE_STACK];
    size_t depth;
};

struct assembler {
    struct assembler_options o;
    assembler_step_fn fn;
    void *ctx;
    struct assembler_rank **ranks;
    size_t nranks;
    struct assembler_stats stats;
};

struct assembler *assembler_new(const struct assembler_options *o, assembler_step_fn fn, void *ctx)
{
    struct assembler *a = calloc(1, sizeof(*a));

    if (!a)
        return NULL;
    a->o = *o;
    if (!a->o.max_phases)
        a->o.max_phases = 64;
    if (!a->o.max_collectives)
        a->o.max_collectives = 1024;
    a->fn = fn;
    a->ctx = ctx;
    return a;
}

static void assembler_rank_free(struct assembler_rank *r)
{
    summarizer_free(r->sum);
    free(r->phases);
    free(r->phase_ptrs);
    free(r->colls);
    free(r->coll_ptrs);
    free(r->job);
    free(r);
}

void assembler_free(struct assembler *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nranks; i++)
        assembler_rank_free(a->ranks[i]);
    free(a->ranks);
    free(a);
}

static struct assembler_rank *assembler_find(struct assembler *a, uint32_t pid, size_t *index)
{
    for (size_t i = 0; i < a->nranks; i++) {
        if (a->ranks[i]->pid == pid) {
            if (index)
                *index = i;
            return a->ranks[i];
        }
    }
    return NULL;
}

int assembler_track(struct assembler *a, const Argus__V1__Resource *res)
{
    struct assembler_rank *r = assembler_find(a, res->pid, NULL);

    if (r) {
        char *job = strdup(res->job);
        if (!job)
            return -ENOMEM;
        free(r->job);
        r->job = job;
        r->rank = res->rank;
        return 0;
    }
    struct assembler_rank **grown = realloc(a->ranks, (a->nranks + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    a->ranks = grown;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->pid = res->pid;
    r->rank = res->rank;
    argus__v1__host_counters__init(&r->host);
    r->job = strdup(res->job);
    r->sum = summarizer_new(NULL);
    r->phases = calloc(a->o.max_phases, sizeof(*r->phases));
    r->colls = calloc(a->o.max_collectives, sizeof(*r->colls));
    r->phase_ptrs = calloc(a->o.max_phases, sizeof(*r->phase_ptrs));
    r->coll_ptrs = calloc(a->o.max_collectives, sizeof(*r->coll_ptrs));
    if (!r->job || !r->sum || !r->phases || !r->colls || !r->phase_ptrs || !r->coll_ptrs) {
        assembler_rank_free(r);
        return -ENOMEM;
    }
    a->ranks[a->nranks++] = r;
    a->stats.ranks = a->nranks;
    return 0;
}

/* Emit the open step of r as ending at end_ts. */
static void assembler_close(struct assembler *a, struct assembler_rank *r, uint64_t end_ts)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;

    if (!r->in_step)
        return;
    s.job = r->job;
    s.rank = r->rank;
    s.step = r->step;
    s.start_unix_ns = clock_offset_to_real(a->o.clock, r->start_ts);
    s.duration_ns = end_ts > r->start_ts ? end_ts - r->start_ts : 0;
    s.source = r->source;
    s.sampled = r->sampled;
    for (size_t i = 0; i < r->nphases; i++)
        r->phase_ptrs[i] = &r->phases[i];
    for (size_t i = 0; i < r->ncolls; i++)
        r->coll_ptrs[i] = &r->colls[i];
    s.n_phases = r->nphases;
    s.phases = r->phase_ptrs;
    s.n_collectives = r->ncolls;
    s.collectives = r->coll_ptrs;
    s.host = &r->host;
    if (summarizer_finish(r->sum, &s) < 0)
        summarizer_reset(r->sum);
    a->fn(a->ctx, r->pid, &s);
    summarizer_free_groups(&s);
    a->stats.steps++;
    r->in_step = false;
    r->nphases = r->ncolls = r->depth = 0;
    argus__v1__host_counters__init(&r->host);
}

void assembler_untrack(struct assembler *a, uint32_t pid)
{
    size_t i;
    struct assembler_rank *r = assembler_find(a, pid, &i);

    if (!r)
        return;
    assembler_close(a, r, r->last_ts);
    assembler_rank_free(r);
    a->ranks[i] = a->ranks[--a->nranks];
    a->stats.ranks = a->nranks;
}

static void assembler_add_phase(struct assembler *a, struct assembler_rank *r, uint64_t name_id,
                                uint64_t ts, uint64_t duration, uint32_t stream)
{
    if (r->nphases >= a->o.max_phases) {
        a->stats.dropped_phases++;
        return;
    }
    Argus__V1__Phase *p = &r->phases[r->nphases++];
    argus__v1__phase__init(p);
    p->name_id = name_id;
    p->start_ns = ts > r->start_ts ? ts - r->start_ts : 0;
    p->duration_ns = duration;
    p->stream = stream;
}

static void assembler_add_collective(struct assembler *a, struct assembler_rank *r,
                                     const struct agent_event *ev)
{
    if (r->ncolls >= a->o.max_collectives) {
        a->stats.dropped_collectives++;
        return;
    }
    Argus__V1__Collective *c = &r->colls[r->ncolls++];
    argus__v1__collective__init(c);
    c->seq = ev->collective.seq;
    c->name_id = ev->collective.name_id;
    c->bytes = ev->collective.bytes;
    c->host_arrival_unix_ns = clock_offset_to_real(a->o.clock, ev->ts_ns);
    if (ev->collective.gpu_start_ns)
        c->gpu_start_unix_ns = clock_offset_to_real(a->o.clock, ev->collective.gpu_start_ns);
    if (ev->collective.gpu_end_ns)
        c->gpu_end_unix_ns = clock_offset_to_real(a->o.clock, ev->collective.gpu_end_ns);
    if (ev->collective.host_return_ns)
        c->host_return_unix_ns = clock_offset_to_real(a->o.clock, ev->collective.host_return_ns);
    c->stream = ev->collective.stream;
    c->comm_id = ev->collective.comm_id;
    c->seq_local = !(ev->flags & AGENT_EVENT_FLAG_SEQ_SHARED) || !c->comm_id;
}

static void assembler_step(struct assembler *a, struct assembler_rank *r,
                           const struct agent_event *ev)
{
    uint64_t next =
        ev->step.number == UINT64_MAX ? (r->in_step ? r->step + 1 : 0) : ev->step.number;

    assembler_close(a, r, ev->ts_ns);
    r->in_step = r->had_step = true;
    r->step = next;
    r->start_ts = ev->ts_ns;
    r->source = ev->step.source;
    /* Only the CUPTI source samples kernels (duty cycle); it says per step. */
    r->sampled = ev->step.source != ARGUS__V1__STEP_SOURCE__STEP_SOURCE_NVTX ||
                 (ev->flags & AGENT_EVENT_FLAG_SAMPLED);
}

void assembler_event(struct assembler *a, const struct agent_event *ev)
{
    struct assembler_rank *r = assembler_find(a, ev->pid, NULL);

    a->stats.events++;
    if (!r) {
        a->stats.untracked++;
        return;
    }
    if (ev->ts_ns > r->last_ts)
        r->last_ts = ev->ts_ns;
    if (ev->kind == AGENT_EVENT_STEP) {
        assembler_step(a, r, ev);
        return;
    }
    if (!r->in_step) {
        a->stats.outside_step++;
        return;
    }
    switch (ev->kind) {
    case AGENT_EVENT_PHASE_BEGIN:
        if (r->depth < ASSEMBLER_PHASE_STACK)
            r->stack[r->depth++] =
                (struct assembler_phase_open){ev->phase.name_id, ev->ts_ns, ev->phase.stream};
        break;
    case AGENT_EVENT_PHASE_END:
        if (r->depth) {
            struct assembler_phase_open *p = &r->stack[--r->depth];
            assembler_add_phase(a, r, p->name_id, p->ts, ev->ts_ns - p->ts, p->stream);
        }
        break;
    case AGENT_EVENT_PHASE:
        assembler_add_phase(a, r, ev->phase.name_id, ev->ts_ns, ev->phase.duration_ns,
                            ev->phase.stream);
        break;
    case AGENT_EVENT_KERNEL:
        if (summarizer_add_shape(r->sum, ev->kernel.name_id, ev->kernel.stream,
                                 ev->kernel.duration_ns, ev->kernel.shape) < 0)
            a->stats.dropped_kernels++;
        break;
    case AGENT_EVENT_COLLECTIVE:
        assembler_add_collective(a, r, ev);
        break;
    case AGENT_EVENT_COUNTER:
        if (host_counters_add(&r->host, ev->counter.counter, ev->counter.value) < 0)
            a->stats.unknown_counters++;
        break;
    default:
        break;
    }
}

bool assembler_has_steps(const struct assembler *a, uint32_t pid)
{
    for (size_t i = 0; i < a->nranks; i++)
        if (a->ranks[i]->pid == pid)
            return a->ranks[i]->had_step;
    return false;
}

void assembler_flush(struct assembler *a)
{
    for (size_t i = 0; i < a->nranks; i++)
        assembler_close(a, a->ranks[i], a->ranks[i]->last_ts);
}

void assembler_get_stats(const struct assembler *a, struct assembler_stats *out)
{
    *out = a->stats;
}
