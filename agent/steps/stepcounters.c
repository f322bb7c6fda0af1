/* Host counters by time range: see stepcounters.h. */
#include "agent/steps/stepcounters.h"

#include <string.h>

/* Make room for one sample: the oldest is merged into the next one of its
 * counter, or dropped when there is none. */
static void stepcounters_fold(struct stepcounters *c)
{
    const struct stepcounters_sample *old = &c->samples[0];

    for (uint32_t i = 1; i < c->n; i++)
        if (c->samples[i].counter == old->counter) {
            c->samples[i].from_ns = old->from_ns;
            c->samples[i].value += old->value;
            break;
        }
    memmove(c->samples, c->samples + 1, (c->n - 1) * sizeof(*c->samples));
    c->n--;
}

void stepcounters_add(struct stepcounters *c, uint32_t counter, uint64_t value, uint64_t ts_ns)
{
    uint64_t from;

    if (counter >= STEPCOUNTERS_N || !value)
        return;
    for (uint32_t i = c->n; i-- > 0;)
        if (c->samples[i].to_ns == ts_ns && c->samples[i].counter == counter) {
            c->samples[i].value += value;
            return;
        }
    from = c->last_ns[counter];
    if (!from || from > ts_ns)
        from = ts_ns;
    if (c->n == STEPCOUNTERS_SAMPLES)
        stepcounters_fold(c);
    c->samples[c->n++] = (struct stepcounters_sample){from, ts_ns, value, counter};
    if (ts_ns > c->last_ns[counter])
        c->last_ns[counter] = ts_ns;
}

/* v * num / den without overflow (num <= den, den > 0). */
static uint64_t stepcounters_scale(uint64_t v, uint64_t num, uint64_t den)
{
    return (uint64_t)((unsigned __int128)v * num / den);
}

/* The part of s within (start_ns, end_ns]; s keeps what lies after end_ns. */
static uint64_t stepcounters_share(struct stepcounters_sample *s, uint64_t start_ns,
                                   uint64_t end_ns)
{
    uint64_t span = s->to_ns - s->from_ns, lo, hi, later = 0, part;

    if (s->to_ns <= start_ns || s->from_ns >= end_ns)
        return 0;
    if (!span)
        return s->to_ns <= end_ns ? s->value : 0;
    lo = s->from_ns > start_ns ? s->from_ns : start_ns;
    hi = s->to_ns < end_ns ? s->to_ns : end_ns;
    if (s->to_ns > end_ns)
        later = stepcounters_scale(s->value, s->to_ns - end_ns, span);
    part = stepcounters_scale(s->value, hi - lo, span);
    if (part > s->value - later)
        part = s->value - later;
    s->value = later;
    s->from_ns = end_ns;
    return part;
}

void stepcounters_take(struct stepcounters *c, uint64_t start_ns, uint64_t end_ns,
                       uint64_t out[STEPCOUNTERS_N])
{
    uint32_t keep = 0;

    memset(out, 0, STEPCOUNTERS_N * sizeof(*out));
    for (uint32_t i = 0; i < c->n; i++) {
        struct stepcounters_sample *s = &c->samples[i];

        out[s->counter] += stepcounters_share(s, start_ns, end_ns);
        if (s->to_ns > end_ns)
            c->samples[keep++] = *s;
    }
    c->n = keep;
}
