/* Persistence: see diag_persist.h. */
#include "collector/diag/diag_persist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t window_bits(const struct diag_persist *p)
{
    return p->window >= 64 ? UINT64_MAX : (1ULL << p->window) - 1;
}

void diag_persist_init(struct diag_persist *p, uint32_t window, uint32_t min_hits)
{
    memset(p, 0, sizeof(*p));
    p->window = window < 1 ? 1 : window > 64 ? 64 : window;
    p->min_hits = min_hits < 1 ? 1 : min_hits > p->window ? p->window : min_hits;
}

int diag_persist_reserve(struct diag_persist *p, uint32_t cap)
{
    size_t old = (size_t)p->cap * DIAG_CAUSE_N, n = (size_t)cap * DIAG_CAUSE_N;

    if (cap <= p->cap)
        return 0;
    uint64_t *m = realloc(p->mask, n * sizeof(*m));
    if (!m)
        return -ENOMEM;
    p->mask = m;
    struct diag_flag *l = realloc(p->last, n * sizeof(*l));
    if (!l)
        return -ENOMEM;
    p->last = l;
    bool *f = realloc(p->firing, n * sizeof(*f));
    if (!f)
        return -ENOMEM;
    p->firing = f;
    memset(m + old, 0, (n - old) * sizeof(*m));
    memset(l + old, 0, (n - old) * sizeof(*l));
    memset(f + old, 0, (n - old) * sizeof(*f));
    p->cap = cap;
    return 0;
}

void diag_persist_free(struct diag_persist *p)
{
    free(p->mask);
    free(p->last);
    free(p->firing);
    p->mask = NULL;
    p->last = NULL;
    p->firing = NULL;
    p->cap = 0;
}

void diag_persist_step(struct diag_persist *p, const struct diag_flag *flags, uint32_t n)
{
    uint64_t w = window_bits(p);
    bool any[DIAG_CAUSE_N] = {false};

    if (n > p->cap)
        n = p->cap;
    for (size_t i = 0; i < (size_t)n * DIAG_CAUSE_N; i++) {
        p->mask[i] = (p->mask[i] << 1) & w;
        if (flags[i].set) {
            p->mask[i] |= 1;
            p->last[i] = flags[i];
            any[i % DIAG_CAUSE_N] = true;
        }
    }
    for (int c = 0; c < DIAG_CAUSE_N; c++)
        p->step_mask[c] = ((p->step_mask[c] << 1) | any[c]) & w;
}

void diag_persist_amend(struct diag_persist *p, uint32_t rank, int cause, uint32_t age,
                        const struct diag_flag *flag)
{
    if (rank >= p->cap || age >= p->window || !flag->set)
        return;
    size_t i = (size_t)rank * DIAG_CAUSE_N + cause;
    uint64_t bit = 1ULL << age;
    if ((p->mask[i] & (bit - 1)) == 0)
        p->last[i] = *flag; /* the newest finding of the rank is its evidence */
    p->mask[i] |= bit;
    p->step_mask[cause] |= bit;
}

uint32_t diag_persist_hits(const struct diag_persist *p, uint32_t rank, int cause)
{
    if (rank >= p->cap)
        return 0;
    return (uint32_t)__builtin_popcountll(p->mask[(size_t)rank * DIAG_CAUSE_N + cause]);
}

void diag_persist_rotation(const struct diag_persist *p, int cause, uint32_t n, uint32_t *ranks,
                           uint32_t *steps)
{
    uint32_t half = p->min_hits / 2 ? p->min_hits / 2 : 1, count = 0;

    if (n > p->cap)
        n = p->cap;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t h = (uint32_t)__builtin_popcountll(p->mask[(size_t)r * DIAG_CAUSE_N + cause]);
        if (h >= 1 && h < half)
            count++;
    }
    *ranks = count;
    *steps = (uint32_t)__builtin_popcountll(p->step_mask[cause]);
}

bool diag_persist_settle(struct diag_persist *p, uint32_t rank, int cause)
{
    size_t i = (size_t)rank * DIAG_CAUSE_N + (size_t)cause;
    uint32_t hits = diag_persist_hits(p, rank, cause);
    bool was = p->firing[i];

    if (hits >= p->min_hits)
        p->firing[i] = true;
    else if (hits == 0 && was) {
        p->firing[i] = false;
        if (p->n_recovered < DIAG_PERSIST_RECOVERED_MAX)
            p->recovered[p->n_recovered++] = (struct diag_persist_recovery){rank, cause};
        else
            p->recovered_dropped++;
    }
    return was;
}

size_t diag_persist_take_recovered(struct diag_persist *p, struct diag_persist_recovery *out,
                                   size_t max)
{
    size_t n = p->n_recovered < max ? p->n_recovered : max;

    memcpy(out, p->recovered, n * sizeof(*out));
    memmove(p->recovered, p->recovered + n, (p->n_recovered - n) * sizeof(*out));
    p->n_recovered -= (uint32_t)n;
    return n;
}
