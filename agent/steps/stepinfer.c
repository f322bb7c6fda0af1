#include "agent/steps/stepinfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/steps/stepdetect.h"
#include "common/clock.h"
#include "common/name_id.h"

#define STEPINFER_MAX_STEPS 256
#define STEPINFER_MAX_COLLS 1024
#define STEPINFER_MIN_STEPS 4  /* whole steps a detection must span */
#define STEPINFER_MIN_CALLS 32 /* calls before the first detection */

struct stepinfer_rank {
    uint32_t pid, rank;
    char *job;
    struct stepdetect_call *calls; /* ring flattened on use: calls[0..n) in arrival order */
    size_t n;
    uint64_t emitted_end_ns; /* end of the last step emitted */
    uint64_t counters[8];    /* by enum agent_counter, since the last emitted step */
    uint64_t next_step;
};

struct stepinfer {
    assembler_step_fn emit;
    void *ctx;
    int64_t mono_to_real;
    struct stepinfer_rank **ranks;
    size_t nranks;
    uint64_t *scratch;
    struct stepdetect_step *steps;
    Argus__V1__Collective *colls, *coll_ptrs[STEPINFER_MAX_COLLS];
};

struct stepinfer *stepinfer_new(assembler_step_fn emit, void *ctx, int64_t mono_to_real)
{
    struct stepinfer *si = calloc(1, sizeof(*si));

    if (!si)
        return NULL;
    si->emit = emit;
    si->ctx = ctx;
    si->mono_to_real = mono_to_real;
    si->scratch = calloc(2 * STEPINFER_WINDOW, sizeof(*si->scratch));
    si->steps = calloc(STEPINFER_MAX_STEPS, sizeof(*si->steps));
    si->colls = calloc(STEPINFER_MAX_COLLS, sizeof(*si->colls));
    if (!si->scratch || !si->steps || !si->colls) {
        stepinfer_free(si);
        return NULL;
    }
    return si;
}

static void stepinfer_rank_free(struct stepinfer_rank *r)
{
    free(r->calls);
    free(r->job);
    free(r);
}

void stepinfer_free(struct stepinfer *si)
{
    if (!si)
        return;
    for (size_t i = 0; i < si->nranks; i++)
        stepinfer_rank_free(si->ranks[i]);
    free(si->ranks);
    free(si->scratch);
    free(si->steps);
    free(si->colls);
    free(si);
}

static struct stepinfer_rank *stepinfer_find(struct stepinfer *si, uint32_t pid, size_t *index)
{
    for (size_t i = 0; i < si->nranks; i++)
        if (si->ranks[i]->pid == pid) {
            if (index)
                *index = i;
            return si->ranks[i];
        }
    return NULL;
}

int stepinfer_track(struct stepinfer *si, uint32_t pid, const char *job, uint32_t rank)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL), **grown;

    if (r)
        return 0;
    grown = realloc(si->ranks, (si->nranks + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    si->ranks = grown;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->pid = pid;
    r->rank = rank;
    r->job = strdup(job);
    r->calls = calloc(STEPINFER_WINDOW, sizeof(*r->calls));
    if (!r->job || !r->calls) {
        stepinfer_rank_free(r);
        return -ENOMEM;
    }
    si->ranks[si->nranks++] = r;
    return 0;
}

static void stepinfer_rank_tick(struct stepinfer *si, struct stepinfer_rank *r);

void stepinfer_untrack(struct stepinfer *si, uint32_t pid, bool flush)
{
    size_t i;
    struct stepinfer_rank *r = stepinfer_find(si, pid, &i);

    if (!r)
        return;
    if (flush && r->n >= 8)
        stepinfer_rank_tick(si, r);
    stepinfer_rank_free(r);
    si->ranks[i] = si->ranks[--si->nranks];
}

void stepinfer_counter(struct stepinfer *si, uint32_t pid, uint32_t counter, uint64_t value)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL);

    if (r && counter < 8)
        r->counters[counter] += value;
}

void stepinfer_call(struct stepinfer *si, uint32_t pid, uint64_t enter_ns, uint64_t exit_ns,
                    uint64_t name_id, uint64_t bytes)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL);

    if (!r)
        return;
    if (r->n && enter_ns < r->calls[r->n - 1].ts_ns)
        return; /* out of order (another thread's late report): keep the sequence sorted */
    if (r->n == STEPINFER_WINDOW) { /* drop the oldest half */
        memmove(r->calls, r->calls + STEPINFER_WINDOW / 2,
                STEPINFER_WINDOW / 2 * sizeof(*r->calls));
        r->n = STEPINFER_WINDOW / 2;
    }
    r->calls[r->n++] = (struct stepdetect_call){enter_ns, exit_ns, name_id, bytes};
}

/* Emit one detected step of r. */
static void stepinfer_emit(struct stepinfer *si, struct stepinfer_rank *r,
                           const struct stepdetect_step *st)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__HostCounters host = ARGUS__V1__HOST_COUNTERS__INIT;

    host.off_cpu_ns = r->counters[AGENT_COUNTER_OFF_CPU_NS];
    host.runq_ns = r->counters[AGENT_COUNTER_RUNQ_NS];
    host.sync_wait_ns = r->counters[AGENT_COUNTER_SYNC_WAIT_NS];
    host.launches = r->counters[AGENT_COUNTER_LAUNCHES];
    host.retransmits = r->counters[AGENT_COUNTER_RETRANSMITS];
    host.io_wait_ns = r->counters[AGENT_COUNTER_IO_WAIT_NS];
    host.alloc_ns = r->counters[AGENT_COUNTER_ALLOC_NS];
    memset(r->counters, 0, sizeof(r->counters));
    Argus__V1__Phase ph[2], *pp[2] = {&ph[0], &ph[1]};
    size_t nc = 0;

    argus__v1__phase__init(&ph[0]);
    argus__v1__phase__init(&ph[1]);
    ph[0].name_id = name_id(STEPINFER_PHASE_COMPUTE);
    ph[0].duration_ns = st->compute_ns;
    ph[1].name_id = name_id(STEPINFER_PHASE_COLLECTIVES);
    ph[1].duration_ns = st->collective_ns;
    for (uint32_t k = 0; k < st->ncalls && nc < STEPINFER_MAX_COLLS; k++) {
        const struct stepdetect_call *c = &r->calls[st->first_call + k];
        Argus__V1__Collective *x = &si->colls[nc];
        argus__v1__collective__init(x);
        x->seq = k;
        x->name_id = c->name_id;
        x->bytes = c->bytes;
        x->host_arrival_unix_ns = clock_mono_to_real(c->ts_ns, si->mono_to_real);
        si->coll_ptrs[nc++] = x;
    }
    s.job = r->job;
    s.rank = r->rank;
    s.step = r->next_step++;
    s.start_unix_ns = clock_mono_to_real(st->start_ns, si->mono_to_real);
    s.duration_ns = st->step_ns;
    s.n_phases = 2;
    s.phases = pp;
    s.n_collectives = nc;
    s.collectives = si->coll_ptrs;
    s.host = &host;
    s.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_INFERRED;
    s.sampled = 1;
    si->emit(si->ctx, r->pid, &s);
}

static void stepinfer_rank_tick(struct stepinfer *si, struct stepinfer_rank *r)
{
    int n =
        stepdetect_find(r->calls, r->n, NULL, si->scratch, si->steps, STEPINFER_MAX_STEPS, NULL);
    size_t keep_from = 0;

    for (int i = 0; i < n; i++) {
        const struct stepdetect_step *st = &si->steps[i];
        if (st->start_ns + st->step_ns <= r->emitted_end_ns)
            continue;
        if (st->start_ns + 1 < r->emitted_end_ns && r->emitted_end_ns) /* overlaps: skip */
            continue;
        stepinfer_emit(si, r, st);
        r->emitted_end_ns = st->start_ns + st->step_ns;
        keep_from = st->first_call;
    }
    /* keep a few periods of history for the next detection */
    if (keep_from > STEPINFER_WINDOW / 2) {
        size_t drop = keep_from - STEPINFER_WINDOW / 4;
        memmove(r->calls, r->calls + drop, (r->n - drop) * sizeof(*r->calls));
        r->n -= drop;
    }
}

void stepinfer_tick(struct stepinfer *si, bool (*explicit_steps)(void *ctx, uint32_t pid),
                    void *ctx)
{
    for (size_t i = 0; i < si->nranks; i++) {
        struct stepinfer_rank *r = si->ranks[i];
        if (r->n < STEPINFER_MIN_CALLS || (explicit_steps && explicit_steps(ctx, r->pid)))
            continue;
        stepinfer_rank_tick(si, r);
    }
}
