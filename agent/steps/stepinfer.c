/* Steps of ranks without annotation, numbered by the collective sequence
 * (see stepinfer.h): the ranks, their windows of calls, the vote, cutting
 * and emitting steps. How a rank's steps are cut and numbered is the model
 * (stepinfer_model.h), which this file calls. */
#include "agent/steps/stepinfer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/steps/host_counters.h"
#include "agent/steps/stepcounters.h"
#include "agent/steps/stepinfer_model.h"
#include "common/name_id.h"

#define STEPINFER_MAX_COLLS 1024  /* collectives one step record carries */
#define STEPINFER_MAX_COMMS 16    /* groups per rank; more share the last slot */
#define STEPINFER_MIN_CALLS 48    /* calls before the first detection */
#define STEPINFER_REORDER 16      /* how late a call may arrive and be put in place */
#define STEPINFER_MISFIT_UNLOCK 4 /* misfits in the last 16 steps that unlock a model */
#define STEPINFER_VOTE_TICKS 5    /* ticks a rank waits for another to agree */
#define STEPINFER_MAX_PENDING 16  /* processes kept before they are known ranks */

struct stepinfer_rank {
    uint32_t pid, rank;
    char *job;
    struct stepdetect_call *calls; /* calls[0..n), by arrival */
    struct stepinfer_entry *entries;
    size_t n;
    struct stepinfer_comm comms[STEPINFER_MAX_COMMS];
    uint32_t ncomms;
    struct stepinfer_model model;
    struct stepinfer_model candidate; /* found at this tick, before the vote */
    bool has_candidate;
    uint32_t waited;              /* ticks with a candidate but no agreement yet */
    int64_t last_step;            /* number of the last emitted step, -1 before the first */
    bool fitted;                  /* a step with the model's number of calls was emitted */
    uint64_t closed_ns;           /* arrival of the call that closed the last emitted step */
    struct stepcounters counters; /* host counter samples not given to a step yet */
};

struct stepinfer {
    assembler_step_fn emit;
    void *ctx;
    const struct clock_offset *clock;
    struct stepinfer_rank **ranks;
    size_t nranks;
    const struct stepinfer_model **ballots; /* room for one per rank */
    struct stepinfer_model_scratch scratch;
    Argus__V1__Collective *colls, *coll_ptrs[STEPINFER_MAX_COLLS];
    struct stepinfer_change changes[STEPINFER_CHANGES]; /* of the last tick or untrack */
    size_t nchanges;
    struct stepinfer_stats stats;
};

/* The rank's window, as the model reads it. */
static struct stepinfer_window stepinfer_window(const struct stepinfer_rank *r)
{
    return (struct stepinfer_window){r->calls, r->entries, r->n, r->comms};
}

static bool stepinfer_opens(const struct stepinfer_rank *r, size_t i)
{
    return stepinfer_model_opens(&r->model, &r->entries[i]);
}

static int64_t stepinfer_number(const struct stepinfer_rank *r, size_t i)
{
    return stepinfer_model_number(&r->model, &r->entries[i]);
}

static int stepinfer_detect(struct stepinfer *si, struct stepinfer_rank *r,
                            struct stepinfer_model *out)
{
    struct stepinfer_window w = stepinfer_window(r);

    return stepinfer_model_detect(&w, &si->scratch, out);
}

/* A change of r's model for the caller to log (stepinfer_changes); its
 * fields besides pid, rank, job, locked and last_step are the caller's. */
static struct stepinfer_change *stepinfer_change(struct stepinfer *si,
                                                 const struct stepinfer_rank *r, bool locked)
{
    struct stepinfer_change *c;

    if (si->nchanges == STEPINFER_CHANGES) {
        si->stats.changes_lost++;
        return NULL;
    }
    c = &si->changes[si->nchanges++];
    *c = (struct stepinfer_change){
        .pid = r->pid, .rank = r->rank, .locked = locked, .last_step = r->last_step};
    snprintf(c->job, sizeof(c->job), "%s", r->job ? r->job : "");
    return c;
}

struct stepinfer *stepinfer_new(assembler_step_fn emit, void *ctx, const struct clock_offset *clock)
{
    struct stepinfer *si = calloc(1, sizeof(*si));

    if (!si)
        return NULL;
    si->emit = emit;
    si->ctx = ctx;
    si->clock = clock;
    si->scratch.scratch = calloc(2 * STEPINFER_WINDOW, sizeof(*si->scratch.scratch));
    si->scratch.detect = calloc(STEPINFER_WINDOW, sizeof(*si->scratch.detect));
    si->scratch.steps = calloc(STEPINFER_DETECT_STEPS, sizeof(*si->scratch.steps));
    si->colls = calloc(STEPINFER_MAX_COLLS, sizeof(*si->colls));
    if (!si->scratch.scratch || !si->scratch.detect || !si->scratch.steps || !si->colls) {
        stepinfer_free(si);
        return NULL;
    }
    return si;
}

static void stepinfer_rank_free(struct stepinfer_rank *r)
{
    free(r->calls);
    free(r->entries);
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
    free(si->ballots);
    free(si->scratch.scratch);
    free(si->scratch.detect);
    free(si->scratch.steps);
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

/* A new rank (job NULL: a process not known as a rank yet). NULL when out
 * of memory. */
static struct stepinfer_rank *stepinfer_add(struct stepinfer *si, uint32_t pid, const char *job,
                                            uint32_t rank)
{
    struct stepinfer_rank *r, **grown = realloc(si->ranks, (si->nranks + 1) * sizeof(*grown));
    const struct stepinfer_model **ballots;

    if (!grown)
        return NULL;
    si->ranks = grown;
    ballots = realloc(si->ballots, (si->nranks + 1) * sizeof(*ballots));
    if (!ballots)
        return NULL;
    si->ballots = ballots;
    r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->pid = pid;
    r->rank = rank;
    r->last_step = -1;
    r->job = job ? strdup(job) : NULL;
    r->calls = calloc(STEPINFER_WINDOW, sizeof(*r->calls));
    r->entries = calloc(STEPINFER_WINDOW, sizeof(*r->entries));
    if ((job && !r->job) || !r->calls || !r->entries) {
        stepinfer_rank_free(r);
        return NULL;
    }
    si->ranks[si->nranks++] = r;
    return r;
}

int stepinfer_track(struct stepinfer *si, uint32_t pid, const char *job, uint32_t rank)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL);

    if (r && r->job)
        return 0;
    if (!r)
        return stepinfer_add(si, pid, job, rank) ? 0 : -ENOMEM;
    r->job = strdup(job); /* a pending process becomes a rank, with its calls so far */
    r->rank = rank;
    return r->job ? 0 : -ENOMEM;
}

/* Keep the calls of a process that is not a known rank yet (found later
 * from its communicator: its first steps would be lost), at most
 * STEPINFER_MAX_PENDING of them: the one quiet the longest makes room. */
static struct stepinfer_rank *stepinfer_pending(struct stepinfer *si, uint32_t pid)
{
    size_t pending = 0, oldest = 0;
    uint64_t oldest_ts = UINT64_MAX;

    for (size_t k = 0; k < si->nranks; k++) {
        const struct stepinfer_rank *q = si->ranks[k];
        uint64_t ts = q->n ? q->calls[q->n - 1].ts_ns : 0;

        if (q->job)
            continue;
        pending++;
        if (ts < oldest_ts) {
            oldest_ts = ts;
            oldest = k;
        }
    }
    if (pending >= STEPINFER_MAX_PENDING) {
        stepinfer_rank_free(si->ranks[oldest]);
        si->ranks[oldest] = si->ranks[--si->nranks];
    }
    return stepinfer_add(si, pid, NULL, 0);
}

static void stepinfer_rank_tick(struct stepinfer *si, struct stepinfer_rank *r);

void stepinfer_untrack(struct stepinfer *si, uint32_t pid, bool flush)
{
    size_t i;
    struct stepinfer_rank *r = stepinfer_find(si, pid, &i);

    si->nchanges = 0;
    if (!r)
        return;
    if (flush && r->job && r->n >= STEPINFER_MIN_CALLS)
        stepinfer_rank_tick(si, r);
    si->ranks[i] = si->ranks[--si->nranks];
    stepinfer_rank_free(r);
}

void stepinfer_counter(struct stepinfer *si, uint32_t pid, uint32_t counter, uint64_t value,
                       uint64_t ts_ns)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL);

    if (r)
        stepcounters_add(&r->counters, counter, value, ts_ns);
}

/* The index of the rank's group comm (the last slot when they are all taken). */
static uint32_t stepinfer_comm(struct stepinfer_rank *r, uint64_t comm)
{
    for (uint32_t i = 0; i < r->ncomms; i++)
        if (r->comms[i].id == comm)
            return i;
    if (r->ncomms == STEPINFER_MAX_COMMS)
        return STEPINFER_MAX_COMMS - 1;
    r->comms[r->ncomms] = (struct stepinfer_comm){comm, -1, false};
    return r->ncomms++;
}

/* Drop the oldest drop calls of the window (a model holds no index into
 * it). */
static void stepinfer_shift(struct stepinfer_rank *r, size_t drop)
{
    memmove(r->calls, r->calls + drop, (r->n - drop) * sizeof(*r->calls));
    memmove(r->entries, r->entries + drop, (r->n - drop) * sizeof(*r->entries));
    r->n -= drop;
}

void stepinfer_call(struct stepinfer *si, uint32_t pid, const struct stepinfer_call *c)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL);
    struct stepinfer_comm *comm;
    size_t at;
    uint32_t ci;

    if (!r)
        r = stepinfer_pending(si, pid);
    if (!r)
        return;
    at = r->n;
    while (at > 0 && r->n - at < STEPINFER_REORDER && r->calls[at - 1].ts_ns > c->enter_ns)
        at--;
    if (at > 0 && r->calls[at - 1].ts_ns > c->enter_ns) {
        si->stats.late_calls++; /* another thread's call, reported far too late */
        return;
    }
    if (r->n == STEPINFER_WINDOW) {
        stepinfer_shift(r, STEPINFER_WINDOW / 2);
        at = at > STEPINFER_WINDOW / 2 ? at - STEPINFER_WINDOW / 2 : 0;
    }
    ci = stepinfer_comm(r, c->comm);
    comm = &r->comms[ci];
    /* A call the library did not number follows the group's last one. */
    comm->last_seq = c->lib_seq >= 0 ? c->lib_seq : comm->last_seq + 1;
    comm->lib |= c->lib_seq >= 0;
    memmove(r->calls + at + 1, r->calls + at, (r->n - at) * sizeof(*r->calls));
    memmove(r->entries + at + 1, r->entries + at, (r->n - at) * sizeof(*r->entries));
    r->calls[at] = (struct stepdetect_call){c->enter_ns, c->exit_ns, c->name_id, c->bytes};
    r->entries[at] = (struct stepinfer_entry){(uint64_t)comm->last_seq, c->comm,  ci,
                                              c->lib_seq >= 0,          c->group, c->done_ns};
    r->n++;
}

void stepinfer_done(struct stepinfer *si, uint32_t pid, uint64_t comm, int64_t lib_seq,
                    uint64_t done_ns)
{
    struct stepinfer_rank *r = stepinfer_find(si, pid, NULL);

    for (size_t i = r ? r->n : 0; lib_seq >= 0 && i-- > 0;)
        if (r->entries[i].shared && r->entries[i].comm_id == comm &&
            r->entries[i].seq == (uint64_t)lib_seq) {
            r->entries[i].done_ns = done_ns;
            return;
        }
}

/* The rank's host counters over the step (start_ns, end_ns], by time. */
static void stepinfer_take_counters(struct stepinfer_rank *r, uint64_t start_ns, uint64_t end_ns,
                                    Argus__V1__HostCounters *host)
{
    uint64_t got[STEPCOUNTERS_N];

    stepcounters_take(&r->counters, start_ns, end_ns, got);
    host_counters_set(host, got);
}

/* The collectives of calls [from, to) into si->coll_ptrs; returns how many. */
static size_t stepinfer_collectives(struct stepinfer *si, const struct stepinfer_rank *r,
                                    size_t from, size_t to)
{
    size_t nc = 0;

    for (size_t i = from; i < to && nc < STEPINFER_MAX_COLLS; i++) {
        Argus__V1__Collective *x = &si->colls[nc];

        argus__v1__collective__init(x);
        x->seq = r->entries[i].seq;
        x->comm_id = r->entries[i].group;
        x->seq_local = !r->entries[i].shared || !r->entries[i].group;
        x->name_id = r->calls[i].name_id;
        x->bytes = r->calls[i].bytes;
        x->host_arrival_unix_ns = clock_offset_to_real(si->clock, r->calls[i].ts_ns);
        if (r->entries[i].done_ns)
            x->host_return_unix_ns = clock_offset_to_real(si->clock, r->entries[i].done_ns);
        si->coll_ptrs[nc++] = x;
    }
    return nc;
}

/* One whole step of r: calls [from, to), from start_ns to end_ns (the
 * latest returns before calls from and to), with compute_ns of compute
 * gaps in it. */
struct stepinfer_span {
    size_t from, to;
    uint64_t start_ns, end_ns, compute_ns;
    uint64_t open_gap_ns, max_gap_ns; /* the gap before call from; the largest after it */
};

static void stepinfer_emit(struct stepinfer *si, struct stepinfer_rank *r,
                           const struct stepinfer_span *sp)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__HostCounters host = ARGUS__V1__HOST_COUNTERS__INIT;
    Argus__V1__Phase ph[2], *pp[2] = {&ph[0], &ph[1]};
    uint64_t step_ns = sp->end_ns - sp->start_ns;
    uint64_t compute = sp->compute_ns < step_ns ? sp->compute_ns : step_ns;

    stepinfer_take_counters(r, sp->start_ns, sp->end_ns, &host);
    argus__v1__phase__init(&ph[0]);
    argus__v1__phase__init(&ph[1]);
    ph[0].name_id = name_id(STEPINFER_PHASE_COMPUTE);
    ph[0].duration_ns = compute;
    ph[1].name_id = name_id(STEPINFER_PHASE_COLLECTIVES);
    ph[1].duration_ns = step_ns - compute;
    s.job = r->job;
    s.rank = r->rank;
    s.step = (uint64_t)stepinfer_number(r, sp->from);
    s.start_unix_ns = clock_offset_to_real(si->clock, sp->start_ns);
    s.duration_ns = step_ns;
    s.n_phases = 2;
    s.phases = pp;
    s.n_collectives = stepinfer_collectives(si, r, sp->from, sp->to);
    s.collectives = si->coll_ptrs;
    s.host = &host;
    s.source = ARGUS__V1__STEP_SOURCE__STEP_SOURCE_INFERRED;
    s.sampled = 1;
    si->emit(si->ctx, r->pid, &s);
    si->stats.steps++;
    r->last_step = (int64_t)s.step;
    r->closed_ns = r->calls[sp->to].ts_ns;
}

/* Does a whole step look like the model's: its calls (how many, which
 * operations: DDP's rebuilt-bucket broadcasts at the start of its second
 * step make a step of two calls too), its compute gap before the opening
 * call (no gap inside twice as long), and, with time, not much shorter
 * (at least half the detected step time)? No upper bound: the first steps
 * of a real job (warm-up, a loaded CPU) can take several times the detected
 * time, and they are steps. */
static bool stepinfer_fits(const struct stepinfer_rank *r, const struct stepinfer_span *sp,
                           bool time)
{
    uint64_t ns = sp->end_ns - sp->start_ns;

    if (sp->to - sp->from != r->model.calls || sp->max_gap_ns > 2 * sp->open_gap_ns ||
        stepinfer_model_signature(r->calls, sp->from, sp->to) != r->model.signature)
        return false;
    return !time || ns >= r->model.step_ns / 2;
}

/* A whole step was found: emit it unless it is old or spans a hole, and
 * score how well it fits the model. Before the first emitted step, two
 * steps in a row must fit: what comes before them are set-up collectives
 * (DDP's broadcasts), whose sequence numbers are not cut like steps; the
 * first of the two waits in *candidate. */
static void stepinfer_close(struct stepinfer *si, struct stepinfer_rank *r,
                            const struct stepinfer_span *sp, struct stepinfer_span *candidate)
{
    struct stepinfer_model *m = &r->model;
    int64_t n = stepinfer_number(r, sp->from);
    bool fits = stepinfer_fits(r, sp, !r->fitted);

    if (n <= r->last_step || n < 0)
        return;
    if (stepinfer_number(r, sp->to) != n + 1 || sp->end_ns <= sp->start_ns) {
        si->stats.holes++;
        candidate->to = 0;
        return;
    }
    if (!r->fitted) {
        if (fits && candidate->to == sp->from) {
            r->fitted = true;
            stepinfer_emit(si, r, candidate);
        }
        *candidate = *sp;
        if (!fits)
            candidate->to = 0;
        if (!r->fitted)
            return;
    }
    m->misfits = (uint16_t)(m->misfits << 1 | !fits);
    stepinfer_emit(si, r, sp);
}

/* Walk the window and emit every whole step not emitted yet. Returns the
 * index of the last opening call (r->n when none). */
static size_t stepinfer_scan(struct stepinfer *si, struct stepinfer_rank *r)
{
    struct stepinfer_span sp = {0}, candidate = {0};
    uint64_t last_end = 0, compute = 0;
    size_t open = r->n;

    for (size_t i = 0; i < r->n; i++) {
        const struct stepdetect_call *c = &r->calls[i];
        uint64_t gap = i && c->ts_ns > last_end ? c->ts_ns - last_end : 0;
        uint64_t end = c->end_ns > c->ts_ns ? c->end_ns : c->ts_ns;

        if (i && stepinfer_opens(r, i)) {
            if (open < r->n) {
                sp.to = i;
                sp.end_ns = last_end;
                sp.compute_ns = compute;
                stepinfer_close(si, r, &sp, &candidate);
            }
            open = i;
            sp = (struct stepinfer_span){.from = i, .start_ns = last_end, .open_gap_ns = gap};
            compute = 0;
        } else if (gap > sp.max_gap_ns) {
            sp.max_gap_ns = gap;
        }
        if (gap > r->model.gap_threshold_ns)
            compute += gap;
        last_end = end > last_end ? end : last_end;
    }
    return open;
}

/* Emit r's new steps; unlock it when its model stopped fitting. */
static void stepinfer_rank_scan(struct stepinfer *si, struct stepinfer_rank *r)
{
    size_t open = stepinfer_scan(si, r);

    /* The pattern changed (misfits), or the anchor group went quiet while
     * others go on: find the model again from the calls after the last
     * emitted step (the old pattern would hide the new one). */
    if (__builtin_popcount(r->model.misfits) >= STEPINFER_MISFIT_UNLOCK ||
        r->n - (open < r->n ? open : 0) > 4 * (size_t)r->model.calls + STEPINFER_MIN_CALLS) {
        size_t keep = 0;
        struct stepinfer_change *c = stepinfer_change(si, r, false);

        if (c) {
            c->misfits = r->model.misfits;
            c->calls_since = r->n - (open < r->n ? open : 0);
        }
        while (r->last_step >= 0 && keep + 1 < r->n && r->calls[keep + 1].ts_ns < r->closed_ns)
            keep++;
        stepinfer_shift(r, keep);
        r->model = (struct stepinfer_model){0};
        si->stats.unlocks++;
    }
}

/* What rank q of r's job votes for: its model when locked and fitting, or
 * its candidate of this tick; NULL when it has neither or its numbers are
 * its own (counted here, not the library's). */
static const struct stepinfer_model *stepinfer_ballot(const struct stepinfer_rank *r,
                                                      const struct stepinfer_rank *q)
{
    const struct stepinfer_model *m = NULL;

    if (!q->job || strcmp(q->job, r->job))
        return NULL;
    if (q->model.locked && __builtin_popcount(q->model.misfits) < 2)
        m = &q->model;
    else if (q->has_candidate)
        m = &q->candidate;
    return m && m->lib ? m : NULL;
}

static size_t stepinfer_job_ranks(const struct stepinfer *si, const struct stepinfer_rank *r)
{
    size_t n = 0;

    for (size_t k = 0; k < si->nranks; k++)
        n += si->ranks[k]->job && !strcmp(si->ranks[k]->job, r->job);
    return n;
}

/* Lock r on the model most ranks of its job on this agent found
 * (stepinfer_model_vote), else on its own candidate. Unless forced, a rank
 * of a job with other ranks here waits (up to STEPINFER_VOTE_TICKS) until
 * two of them agree. Returns whether it locked. */
static bool stepinfer_lock(struct stepinfer *si, struct stepinfer_rank *r, bool force)
{
    struct stepinfer_window w = stepinfer_window(r);
    const struct stepinfer_model *best;
    struct stepinfer_change *c;
    size_t n = 0, votes;

    for (size_t k = 0; k < si->nranks; k++) {
        const struct stepinfer_model *b = stepinfer_ballot(r, si->ranks[k]);
        if (b)
            si->ballots[n++] = b;
    }
    best = stepinfer_model_vote(&r->candidate, si->ballots, n, &votes);
    if (!force && votes < 2 && r->waited++ < STEPINFER_VOTE_TICKS && stepinfer_job_ranks(si, r) > 1)
        return false;
    r->model = *best;
    r->model.anchor = r->candidate.anchor;
    r->model.gap_threshold_ns = r->candidate.gap_threshold_ns;
    r->model.misfits = 0;
    r->model.locked = true;
    r->waited = 0;
    stepinfer_model_continue(&r->model, &w, r->last_step, r->closed_ns);
    si->stats.locks++;
    c = stepinfer_change(si, r, true);
    if (c) {
        c->calls = r->model.calls;
        c->phase = r->model.phase;
        c->span = r->model.span;
        c->base = r->model.base;
        c->votes = votes;
    }
    return true;
}

static void stepinfer_rank_tick(struct stepinfer *si, struct stepinfer_rank *r)
{
    if (!r->model.locked) {
        if (stepinfer_detect(si, r, &r->candidate) < 0)
            return;
        r->has_candidate = true;
        stepinfer_lock(si, r, true);
        r->has_candidate = false;
    }
    stepinfer_rank_scan(si, r);
}

static bool stepinfer_due(struct stepinfer_rank *r, bool (*explicit_steps)(void *, uint32_t),
                          void *ctx)
{
    return r->job && r->n >= STEPINFER_MIN_CALLS &&
           !(explicit_steps && explicit_steps(ctx, r->pid));
}

/* Detect every unlocked rank first, then lock them (the vote sees every
 * candidate of the tick), then emit. */
void stepinfer_tick(struct stepinfer *si, bool (*explicit_steps)(void *ctx, uint32_t pid),
                    void *ctx)
{
    si->nchanges = 0;
    for (size_t i = 0; i < si->nranks; i++) {
        struct stepinfer_rank *r = si->ranks[i];
        r->has_candidate = !r->model.locked && stepinfer_due(r, explicit_steps, ctx) &&
                           stepinfer_detect(si, r, &r->candidate) == 0;
    }
    for (size_t i = 0; i < si->nranks; i++)
        if (si->ranks[i]->has_candidate)
            stepinfer_lock(si, si->ranks[i], false);
    for (size_t i = 0; i < si->nranks; i++) {
        struct stepinfer_rank *r = si->ranks[i];
        r->has_candidate = false;
        if (r->model.locked && stepinfer_due(r, explicit_steps, ctx))
            stepinfer_rank_scan(si, r);
    }
}

const struct stepinfer_change *stepinfer_changes(const struct stepinfer *si, size_t *n)
{
    *n = si->nchanges;
    return si->changes;
}

void stepinfer_get_stats(const struct stepinfer *si, struct stepinfer_stats *out)
{
    *out = si->stats;
}
