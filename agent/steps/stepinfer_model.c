/* A rank's step model: found from the period of its calls, agreed by the
 * vote of the job's ranks on this agent, and the numbering of its steps,
 * which goes on across relocks (see stepinfer.h). */
#include "agent/steps/stepinfer_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static void stepinfer_continue(struct stepinfer_rank *r);

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

/* The operations of calls [from, to), in any order (two groups' calls may
 * interleave differently from step to step; group ids are not comparable
 * across ranks, whose models are shared by the vote). */
uint64_t stepinfer_signature(const struct stepinfer_rank *r, size_t from, size_t to)
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
int stepinfer_detect(struct stepinfer *si, struct stepinfer_rank *r, struct stepinfer_model *out)
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
bool stepinfer_lock(struct stepinfer *si, struct stepinfer_rank *r, bool force)
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

bool stepinfer_opens(const struct stepinfer_rank *r, size_t i)
{
    const struct stepinfer_entry *e = &r->entries[i];

    return e->comm == r->model.anchor && e->seq % r->model.span == r->model.phase;
}

int64_t stepinfer_number(const struct stepinfer_rank *r, size_t i)
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
