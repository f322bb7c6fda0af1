/* Steps of ranks without annotation, numbered by the collective sequence
 * (see stepinfer.h). */
#include "agent/steps/stepinfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/steps/stepcounters.h"
#include "agent/steps/stepdetect.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/name_id.h"

#define STEPINFER_DETECT_STEPS 256 /* steps one detection reports */
#define STEPINFER_MAX_COLLS 1024   /* collectives one step record carries */
#define STEPINFER_MAX_COMMS 16     /* groups per rank; more share the last slot */
#define STEPINFER_MIN_STEPS 8      /* whole steps a detection must span */
#define STEPINFER_MIN_CALLS 48     /* calls before the first detection */
#define STEPINFER_REORDER 16       /* how late a call may arrive and be put in place */
#define STEPINFER_MISFIT_UNLOCK 4  /* misfits in the last 16 steps that unlock a model */
#define STEPINFER_VOTE_TICKS 5     /* ticks a rank waits for another to agree */
#define STEPINFER_MAX_PENDING 16   /* processes kept before they are known ranks */

struct stepinfer_comm {
    uint64_t id;
    int64_t last_seq; /* g of its last call, -1 before the first */
    bool lib;         /* the library numbered at least one of its calls */
};

/* What the window holds besides the stepdetect_call of each call. */
struct stepinfer_entry {
    uint64_t seq;     /* g: the call's sequence number in its group */
    uint64_t comm_id; /* the process-local handle */
    uint32_t comm;    /* index into the rank's comms */
    bool shared;      /* g is the library's */
    uint64_t group;   /* the id shared by the group's members, 0 unknown */
    uint64_t done_ns; /* host end, 0 unknown */
};

/* How a locked rank's steps are cut and numbered (see stepinfer.h). */
struct stepinfer_model {
    bool locked;
    bool lib;       /* the anchor's sequence numbers are the library's (the same on every rank) */
    uint32_t calls; /* calls per step, all groups */
    uint32_t anchor;
    uint64_t span, phase;
    uint64_t gap_threshold_ns; /* gaps above it are compute */
    uint64_t step_ns;          /* the detected step time (median) */
    uint64_t signature;        /* stepinfer_signature of the detected step */
    uint16_t misfits;          /* the last 16 steps, a bit set for each that did not fit */
    int64_t base;              /* added to the numbers: continues them after a relock */
};

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
    uint64_t *scratch;
    struct stepdetect_call *detect; /* the window with the group folded into name_id */
    struct stepdetect_step *steps;
    Argus__V1__Collective *colls, *coll_ptrs[STEPINFER_MAX_COLLS];
    struct stepinfer_stats stats;
};

struct stepinfer *stepinfer_new(assembler_step_fn emit, void *ctx, const struct clock_offset *clock)
{
    struct stepinfer *si = calloc(1, sizeof(*si));

    if (!si)
        return NULL;
    si->emit = emit;
    si->ctx = ctx;
    si->clock = clock;
    si->scratch = calloc(2 * STEPINFER_WINDOW, sizeof(*si->scratch));
    si->detect = calloc(STEPINFER_WINDOW, sizeof(*si->detect));
    si->steps = calloc(STEPINFER_DETECT_STEPS, sizeof(*si->steps));
    si->colls = calloc(STEPINFER_MAX_COLLS, sizeof(*si->colls));
    if (!si->scratch || !si->detect || !si->steps || !si->colls) {
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
    free(si->scratch);
    free(si->detect);
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

/* A new rank (job NULL: a process not known as a rank yet). NULL when out
 * of memory. */
static struct stepinfer_rank *stepinfer_add(struct stepinfer *si, uint32_t pid, const char *job,
                                            uint32_t rank)
{
    struct stepinfer_rank *r, **grown = realloc(si->ranks, (si->nranks + 1) * sizeof(*grown));

    if (!grown)
        return NULL;
    si->ranks = grown;
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

static int stepinfer_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static uint64_t stepinfer_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0x100000001b3ULL;
}

static void stepinfer_continue(struct stepinfer_rank *r);

/* The operations of calls [from, to), in any order (two groups' calls may
 * interleave differently from step to step; group ids are not comparable
 * across ranks, whose models are shared by the vote). */
static uint64_t stepinfer_signature(const struct stepinfer_rank *r, size_t from, size_t to)
{
    uint64_t sum = 0;

    for (size_t i = from; i < to; i++)
        sum += stepinfer_mix(r->calls[i].name_id, 0);
    return sum;
}

/* The median step time of steps[0..n) (scratch: n entries). */
static uint64_t stepinfer_median_step(const struct stepdetect_step *steps, size_t n,
                                      uint64_t *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = steps[i].step_ns;
    qsort(scratch, n, sizeof(*scratch), stepinfer_cmp_u64);
    return scratch[n / 2];
}

/* Find a model from the period of the rank's window into *out. Returns 0,
 * or -EAGAIN when the window shows no steps yet. */
static int stepinfer_detect(struct stepinfer *si, struct stepinfer_rank *r,
                            struct stepinfer_model *out)
{
    struct stepdetect_info info;
    const struct stepdetect_step *st;
    struct stepinfer_model m = {.locked = true};
    size_t c0, c1;
    int n;

    for (size_t i = 0; i < r->n; i++) { /* calls of different groups never match */
        si->detect[i] = r->calls[i];
        si->detect[i].name_id = stepinfer_mix(r->calls[i].name_id, r->entries[i].comm);
    }
    n = stepdetect_find(si->detect, r->n, NULL, si->scratch, si->steps, STEPINFER_DETECT_STEPS,
                        &info);
    if (n < STEPINFER_MIN_STEPS)
        return -EAGAIN;
    st = &si->steps[n - 1];
    c0 = st->first_call;
    c1 = c0 + st->ncalls; /* the next step's opening call (cut_steps keeps it inside) */
    m.calls = st->ncalls;
    m.anchor = r->entries[c0].comm;
    m.gap_threshold_ns = info.gap_threshold_ns; /* a candidate until stepinfer_lock */
    m.step_ns = stepinfer_median_step(si->steps, (size_t)n, si->scratch);
    if (c1 < r->n && r->entries[c1].comm == m.anchor && r->entries[c1].seq > r->entries[c0].seq)
        m.span = r->entries[c1].seq - r->entries[c0].seq;
    for (size_t i = c0; !m.span && i < c1; i++)
        m.span += r->entries[i].comm == m.anchor;
    m.phase = r->entries[c0].seq % m.span;
    m.lib = r->comms[m.anchor].lib;
    m.signature = stepinfer_signature(r, c0, c1);
    *out = m;
    return 0;
}

static bool stepinfer_same(const struct stepinfer_model *a, const struct stepinfer_model *b)
{
    return a->lib && b->lib && a->calls == b->calls && a->span == b->span && a->phase == b->phase;
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

static size_t stepinfer_votes(const struct stepinfer *si, const struct stepinfer_rank *r,
                              const struct stepinfer_model *m)
{
    size_t votes = 0;

    for (size_t k = 0; k < si->nranks; k++) {
        const struct stepinfer_model *b = stepinfer_ballot(r, si->ranks[k]);
        votes += b && stepinfer_same(b, m);
    }
    return votes;
}

static size_t stepinfer_job_ranks(const struct stepinfer *si, const struct stepinfer_rank *r)
{
    size_t n = 0;

    for (size_t k = 0; k < si->nranks; k++)
        n += si->ranks[k]->job && !strcmp(si->ranks[k]->job, r->job);
    return n;
}

/* Lock r on the model most ranks of its job on this agent found (every
 * rank issues the same collectives, so they share calls, span and phase;
 * a rank whose gaps are noisier is outvoted), else on its own candidate.
 * Unless forced, a rank of a job with other ranks here waits (up to
 * STEPINFER_VOTE_TICKS) until two of them agree. Returns whether it locked. */
static bool stepinfer_lock(struct stepinfer *si, struct stepinfer_rank *r, bool force)
{
    const struct stepinfer_model *best = &r->candidate;
    size_t best_votes = stepinfer_votes(si, r, best);

    for (size_t k = 0; best->lib && k < si->nranks; k++) {
        const struct stepinfer_model *b = stepinfer_ballot(r, si->ranks[k]);
        size_t votes = b ? stepinfer_votes(si, r, b) : 0;

        if (votes > best_votes) {
            best = b;
            best_votes = votes;
        }
    }
    if (!force && best_votes < 2 && r->waited++ < STEPINFER_VOTE_TICKS &&
        stepinfer_job_ranks(si, r) > 1)
        return false;
    r->model = *best;
    r->model.anchor = r->candidate.anchor;
    r->model.gap_threshold_ns = r->candidate.gap_threshold_ns;
    r->model.misfits = 0;
    r->model.locked = true;
    r->waited = 0;
    stepinfer_continue(r);
    si->stats.locks++;
    log_info("steps",
             "rank %u of job %s (pid %u): %u calls a step, opening call g = %llu mod %llu, "
             "numbers %+lld, after step %lld (%zu votes)",
             r->rank, r->job, r->pid, r->model.calls, (unsigned long long)r->model.phase,
             (unsigned long long)r->model.span, (long long)r->model.base, (long long)r->last_step,
             best_votes);
    return true;
}

static bool stepinfer_opens(const struct stepinfer_rank *r, size_t i)
{
    const struct stepinfer_entry *e = &r->entries[i];

    return e->comm == r->model.anchor && e->seq % r->model.span == r->model.phase;
}

static int64_t stepinfer_number(const struct stepinfer_rank *r, size_t i)
{
    return (int64_t)((r->entries[i].seq - r->model.phase) / r->model.span) + r->model.base;
}

/* After a relock, go on from the last emitted number: the first opening
 * call at or after the one that closed the last step gets the next number
 * (the same call on every rank, so the ranks still agree). */
static void stepinfer_continue(struct stepinfer_rank *r)
{
    for (size_t i = 1; r->last_step >= 0 && i < r->n; i++)
        if (r->calls[i].ts_ns >= r->closed_ns && stepinfer_opens(r, i)) {
            r->model.base = r->last_step + 1 - stepinfer_number(r, i);
            return;
        }
}

/* The rank's host counters over the step (start_ns, end_ns], by time. */
static void stepinfer_take_counters(struct stepinfer_rank *r, uint64_t start_ns, uint64_t end_ns,
                                    Argus__V1__HostCounters *host)
{
    uint64_t got[STEPCOUNTERS_N];

    stepcounters_take(&r->counters, start_ns, end_ns, got);
    host->off_cpu_ns = got[AGENT_COUNTER_OFF_CPU_NS];
    host->runq_ns = got[AGENT_COUNTER_RUNQ_NS];
    host->sync_wait_ns = got[AGENT_COUNTER_SYNC_WAIT_NS];
    host->launches = got[AGENT_COUNTER_LAUNCHES];
    host->retransmits = got[AGENT_COUNTER_RETRANSMITS];
    host->io_wait_ns = got[AGENT_COUNTER_IO_WAIT_NS];
    host->alloc_ns = got[AGENT_COUNTER_ALLOC_NS];
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
 * call (no gap inside twice as long), and, with time, about its time (half
 * to twice the detected one)? */
static bool stepinfer_fits(const struct stepinfer_rank *r, const struct stepinfer_span *sp,
                           bool time)
{
    uint64_t ns = sp->end_ns - sp->start_ns;

    if (sp->to - sp->from != r->model.calls || sp->max_gap_ns > 2 * sp->open_gap_ns ||
        stepinfer_signature(r, sp->from, sp->to) != r->model.signature)
        return false;
    return !time || (ns >= r->model.step_ns / 2 && ns <= 2 * r->model.step_ns);
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

        while (r->last_step >= 0 && keep + 1 < r->n && r->calls[keep + 1].ts_ns < r->closed_ns)
            keep++;
        log_info("steps",
                 "rank %u of job %s (pid %u): steps stopped fitting after step %lld "
                 "(misfits %04x, %zu calls since the last opening one)",
                 r->rank, r->job, r->pid, (long long)r->last_step, r->model.misfits,
                 r->n - (open < r->n ? open : 0));
        stepinfer_shift(r, keep);
        r->model = (struct stepinfer_model){0};
        si->stats.unlocks++;
    }
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

void stepinfer_get_stats(const struct stepinfer *si, struct stepinfer_stats *out)
{
    *out = si->stats;
}
