/* A rank's step model: found from the period of its calls, chosen by the
 * vote of the job's ranks, and the numbering of its steps, which goes on
 * across relocks (see stepinfer_model.h). */
#include "agent/steps/stepinfer_model.h"

#include <errno.h>
#include <stdlib.h>

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

/* Two groups' calls may interleave differently from step to step; group
 * ids are not comparable across ranks, whose models are shared by the
 * vote: so the signature is of the operations only, in any order. */
uint64_t stepinfer_model_signature(const struct stepdetect_call *calls, size_t from, size_t to)
{
    uint64_t sum = 0;

    for (size_t i = from; i < to; i++)
        sum += stepinfer_mix(calls[i].name_id, 0);
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

int stepinfer_model_detect(const struct stepinfer_window *w, struct stepinfer_model_scratch *s,
                           struct stepinfer_model *out)
{
    struct stepdetect_info info;
    const struct stepdetect_step *st;
    struct stepinfer_model m = {.locked = true};
    size_t c0, c1;
    int n;

    for (size_t i = 0; i < w->n; i++) { /* calls of different groups never match */
        s->detect[i] = w->calls[i];
        s->detect[i].name_id = stepinfer_mix(w->calls[i].name_id, w->entries[i].comm);
    }
    n = stepdetect_find(s->detect, w->n, NULL, s->scratch, s->steps, STEPINFER_DETECT_STEPS, &info);
    if (n < STEPINFER_MIN_STEPS)
        return -EAGAIN;
    st = &s->steps[n - 1];
    c0 = st->first_call;
    c1 = c0 + st->ncalls; /* the next step's opening call (cut_steps keeps it inside) */
    m.calls = st->ncalls;
    m.anchor = w->entries[c0].comm;
    m.gap_threshold_ns = info.gap_threshold_ns; /* a candidate until locked */
    m.step_ns = stepinfer_median_step(s->steps, (size_t)n, s->scratch);
    if (c1 < w->n && w->entries[c1].comm == m.anchor && w->entries[c1].seq > w->entries[c0].seq)
        m.span = w->entries[c1].seq - w->entries[c0].seq;
    for (size_t i = c0; !m.span && i < c1; i++)
        m.span += w->entries[i].comm == m.anchor;
    m.phase = w->entries[c0].seq % m.span;
    m.lib = w->comms[m.anchor].lib;
    m.signature = stepinfer_model_signature(w->calls, c0, c1);
    *out = m;
    return 0;
}

static bool stepinfer_same(const struct stepinfer_model *a, const struct stepinfer_model *b)
{
    return a->lib && b->lib && a->calls == b->calls && a->span == b->span && a->phase == b->phase;
}

static size_t stepinfer_votes(const struct stepinfer_model *const *ballots, size_t n,
                              const struct stepinfer_model *m)
{
    size_t votes = 0;

    for (size_t k = 0; k < n; k++)
        votes += stepinfer_same(ballots[k], m);
    return votes;
}

/* Every rank issues the same collectives, so they share calls, span and
 * phase; a rank whose gaps are noisier is outvoted. */
const struct stepinfer_model *stepinfer_model_vote(const struct stepinfer_model *own,
                                                   const struct stepinfer_model *const *ballots,
                                                   size_t n, size_t *votes)
{
    const struct stepinfer_model *best = own;
    size_t best_votes = stepinfer_votes(ballots, n, best);

    for (size_t k = 0; best->lib && k < n; k++) {
        size_t v = stepinfer_votes(ballots, n, ballots[k]);

        if (v > best_votes) {
            best = ballots[k];
            best_votes = v;
        }
    }
    *votes = best_votes;
    return best;
}

bool stepinfer_model_opens(const struct stepinfer_model *m, const struct stepinfer_entry *e)
{
    return e->comm == m->anchor && e->seq % m->span == m->phase;
}

int64_t stepinfer_model_number(const struct stepinfer_model *m, const struct stepinfer_entry *e)
{
    return (int64_t)((e->seq - m->phase) / m->span) + m->base;
}

/* The same call on every rank gets the next number, so the ranks still
 * agree. */
void stepinfer_model_continue(struct stepinfer_model *m, const struct stepinfer_window *w,
                              int64_t last_step, uint64_t closed_ns)
{
    for (size_t i = 1; last_step >= 0 && i < w->n; i++)
        if (w->calls[i].ts_ns >= closed_ns && stepinfer_model_opens(m, &w->entries[i])) {
            m->base = last_step + 1 - stepinfer_model_number(m, &w->entries[i]);
            return;
        }
}
