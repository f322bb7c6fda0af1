#include "tools/argus-sim/delivery.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct delivery_agent {
    struct delivery_batch *b;
    size_t n;
    int64_t offset_ns;
};

struct delivery_plan {
    struct delivery_options o; /* windows and offsets point into the copies below */
    struct delivery_window *stalls, *outages;
    struct delivery_agent *agents;
    size_t nagents;
};

/* Randomness of the plan: uniform [0, 1) from (seed, agent, purpose, k). */
enum { RND_SPREAD, RND_PHASE, RND_DELAY, RND_JITTER };

static uint64_t delivery_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static double delivery_unit(const struct delivery_options *o, uint32_t a, unsigned what, uint64_t k)
{
    uint64_t x = delivery_mix(
        o->seed ^ delivery_mix(((uint64_t)a << 32) ^ ((uint64_t)what << 28) ^ delivery_mix(k)));
    return (double)(x >> 11) / 9007199254740992.0;
}

static double delivery_period(const struct delivery_options *o)
{
    return o->rate > 0 ? 1e9 / o->rate : 0;
}

/* When agent a's ranks finish step s. */
static uint64_t delivery_produce(const struct delivery_options *o, uint32_t a, size_t nagents,
                                 uint64_t s)
{
    double shift = o->start_spread_ns ? delivery_unit(o, a, RND_SPREAD, 0) * o->start_spread_ns : 0;
    double period = delivery_period(o);

    if (o->mode == DELIVERY_LOCKSTEP)
        shift += period * a / (double)nagents;
    return (uint64_t)(shift + period * (double)s);
}

static int delivery_push(struct delivery_agent *ag, size_t *cap, const struct delivery_batch *b)
{
    if (ag->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct delivery_batch *grown = realloc(ag->b, ncap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        ag->b = grown;
        *cap = ncap;
    }
    ag->b[ag->n++] = *b;
    return 0;
}

/* Cut agent a's steps into batches with their seal times. */
static int delivery_cut(const struct delivery_options *o, uint32_t a, size_t nagents,
                        uint32_t nranks, struct delivery_agent *ag)
{
    size_t cap = 0;
    uint64_t max_steps = o->max_records / (nranks ? nranks : 1);

    if (max_steps < 1)
        max_steps = 1;
    for (uint64_t s0 = 0; s0 < o->steps;) {
        struct delivery_batch b = {.first_step = s0, .nsteps = 1};
        uint64_t open = delivery_produce(o, a, nagents, s0);
        if (o->mode == DELIVERY_LOCKSTEP) {
            b.nsteps =
                (uint32_t)(o->steps - s0 < o->steps_per_batch ? o->steps - s0 : o->steps_per_batch);
            b.seal_ns = open;
        } else {
            double age = (double)o->max_age_ns;
            if (o->mode == DELIVERY_REALISTIC && s0 == 0) /* the batcher's phase */
                age *= 1.0 - delivery_unit(o, a, RND_PHASE, 0);
            uint64_t seal = open + (uint64_t)age;
            while (s0 + b.nsteps < o->steps && b.nsteps < max_steps &&
                   delivery_produce(o, a, nagents, s0 + b.nsteps) < seal)
                b.nsteps++;
            b.seal_ns = b.nsteps == max_steps && s0 + b.nsteps < o->steps
                            ? delivery_produce(o, a, nagents, s0 + b.nsteps - 1) /* full */
                            : seal;
        }
        b.send_ns = b.seal_ns;
        if (delivery_push(ag, &cap, &b) < 0)
            return -ENOMEM;
        s0 += b.nsteps;
    }
    return 0;
}

/* The end of the window of node a that holds t, or 0 when none does. */
static uint64_t delivery_window_end(const struct delivery_window *w, size_t n, uint32_t a,
                                    uint64_t t)
{
    uint64_t end = 0;

    for (size_t i = 0; i < n; i++)
        if (w[i].node == a && t >= w[i].at_ns && t < w[i].at_ns + w[i].len_ns &&
            w[i].at_ns + w[i].len_ns > end)
            end = w[i].at_ns + w[i].len_ns;
    return end;
}

/* Send times: delay and jitter, then stalls and outages, in seal order. */
static void delivery_send_times(const struct delivery_plan *p, uint32_t a,
                                struct delivery_agent *ag)
{
    const struct delivery_options *o = &p->o;
    double delay =
        o->mode == DELIVERY_REALISTIC ? delivery_unit(o, a, RND_DELAY, 0) * (double)o->delay_ns : 0;
    uint64_t last = 0;

    for (size_t k = 0; k < ag->n; k++) {
        struct delivery_batch *b = &ag->b[k];
        double jitter = o->mode == DELIVERY_REALISTIC
                            ? delivery_unit(o, a, RND_JITTER, k) * (double)o->jitter_ns
                            : 0;
        uint64_t t = b->seal_ns + (uint64_t)(delay + jitter), end;
        /* sealed while the stream is down: spooled, replayed after */
        b->replay = delivery_window_end(p->outages, o->noutages, a, t) != 0;
        if (t < last)
            t = last;
        /* a window may end inside the next one: repeat until clear */
        for (int moved = 1; moved;) {
            moved = 0;
            if ((end = delivery_window_end(p->stalls, o->nstalls, a, t)) != 0) {
                t = end;
                moved = 1;
            }
            if ((end = delivery_window_end(p->outages, o->noutages, a, t)) != 0) {
                t = end;
                b->replay = true;
                moved = 1;
            }
        }
        b->send_ns = last = t;
    }
}

static int delivery_check(const struct delivery_options *o, size_t nagents, char *err,
                          size_t errlen)
{
    const struct delivery_window *w[2] = {o->stalls, o->outages};
    size_t nw[2] = {o->nstalls, o->noutages};

    if (o->mode != DELIVERY_LOCKSTEP && !(o->rate > 0)) {
        snprintf(err, errlen,
                 "age and realistic delivery need a step rate (--rate > 0 or "
                 "--overload)");
        return -EINVAL;
    }
    if (o->mode == DELIVERY_LOCKSTEP && o->steps_per_batch < 1) {
        snprintf(err, errlen, "steps_per_batch must be >= 1");
        return -EINVAL;
    }
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < nw[k]; i++)
            if (w[k][i].node >= nagents) {
                snprintf(err, errlen, "%s names node %" PRIu32 ", but there are %zu nodes (0-%zu)",
                         k ? "--outage" : "--stall", w[k][i].node, nagents, nagents - 1);
                return -EINVAL;
            }
    for (size_t i = 0; i < o->noffsets; i++)
        if (o->offsets[i].node >= nagents) {
            snprintf(err, errlen, "--clock_offset names node %" PRIu32 ", but there are %zu nodes",
                     o->offsets[i].node, nagents);
            return -EINVAL;
        }
    return 0;
}

static struct delivery_window *delivery_copy(const struct delivery_window *w, size_t n)
{
    struct delivery_window *c = malloc((n + 1) * sizeof(*c));

    if (c && n)
        memcpy(c, w, n * sizeof(*c));
    return c;
}

int delivery_plan_new(const struct delivery_options *o, size_t nagents, const uint32_t *nranks,
                      struct delivery_plan **out, char *err, size_t errlen)
{
    struct delivery_plan *p;
    int r = delivery_check(o, nagents, err, errlen);

    *out = NULL;
    if (r < 0)
        return r;
    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->o = *o;
    p->nagents = nagents;
    p->stalls = delivery_copy(o->stalls, o->nstalls);
    p->outages = delivery_copy(o->outages, o->noutages);
    p->agents = calloc(nagents + 1, sizeof(*p->agents));
    r = p->stalls && p->outages && p->agents ? 0 : -ENOMEM;
    for (uint32_t a = 0; a < nagents && r == 0; a++) {
        p->agents[a].offset_ns = delivery_offset_of(o->offsets, o->noffsets, a);
        r = delivery_cut(o, a, nagents, nranks[a], &p->agents[a]);
        if (r == 0)
            delivery_send_times(p, a, &p->agents[a]);
    }
    if (r < 0) {
        snprintf(err, errlen, "out of memory");
        delivery_plan_free(p);
        return r;
    }
    p->o.stalls = p->o.outages = NULL; /* the caller's; use the copies */
    p->o.offsets = NULL;
    *out = p;
    return 0;
}

void delivery_plan_free(struct delivery_plan *p)
{
    if (!p)
        return;
    for (size_t a = 0; p->agents && a < p->nagents; a++)
        free(p->agents[a].b);
    free(p->agents);
    free(p->stalls);
    free(p->outages);
    free(p);
}

size_t delivery_plan_batches(const struct delivery_plan *p, uint32_t a)
{
    return a < p->nagents ? p->agents[a].n : 0;
}

const struct delivery_batch *delivery_plan_batch(const struct delivery_plan *p, uint32_t a,
                                                 size_t k)
{
    return a < p->nagents && k < p->agents[a].n ? &p->agents[a].b[k] : NULL;
}

size_t delivery_plan_find(const struct delivery_plan *p, uint32_t a, uint64_t step)
{
    const struct delivery_agent *ag = a < p->nagents ? &p->agents[a] : NULL;
    size_t lo = 0, hi = ag ? ag->n : 0;

    while (lo < hi) { /* the first batch whose last step is >= step */
        size_t mid = lo + (hi - lo) / 2;
        if (ag->b[mid].first_step + ag->b[mid].nsteps <= step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ag && lo < ag->n && ag->b[lo].first_step <= step ? lo : SIZE_MAX;
}

int64_t delivery_plan_clock_offset(const struct delivery_plan *p, uint32_t a)
{
    return a < p->nagents ? p->agents[a].offset_ns : 0;
}

bool delivery_plan_blocked(const struct delivery_plan *p, uint32_t a, uint64_t t_ns,
                           uint64_t *until_ns, bool *outage)
{
    uint64_t end = delivery_window_end(p->outages, p->o.noutages, a, t_ns);

    *outage = end != 0;
    if (!end)
        end = delivery_window_end(p->stalls, p->o.nstalls, a, t_ns);
    *until_ns = end;
    return end != 0;
}

bool delivery_plan_restamps(const struct delivery_plan *p)
{
    bool offsets = false;

    for (size_t a = 0; a < p->nagents && !offsets; a++)
        offsets = p->agents[a].offset_ns != 0;
    return p->o.mode != DELIVERY_LOCKSTEP || offsets;
}

/* Parse a list of ':'-separated numbers per ','-separated item, fields each. */
static long delivery_parse(const char *s, int fields, double **out, char *err, size_t errlen)
{
    size_t n = 0, cap = 0;
    const char *p = s;
    double *v = NULL;

    *out = NULL;
    while (p && *p) {
        if (n + (size_t)fields > cap) {
            cap = cap ? cap * 2 : 16;
            double *grown = realloc(v, (cap + (size_t)fields) * sizeof(*v));
            if (!grown) {
                free(v);
                return -ENOMEM;
            }
            v = grown;
        }
        for (int f = 0; f < fields; f++) {
            char *end;
            v[n + (size_t)f] = strtod(p, &end);
            if (end == p || !isfinite(v[n + (size_t)f]) || (f + 1 < fields && *end != ':') ||
                (f + 1 == fields && *end != ',' && *end != '\0') ||
                (*end == ',' && end[1] == '\0')) {
                snprintf(err, errlen, "bad item at '%s': want %s", p,
                         fields == 3 ? "NODE:AT:SECONDS" : "NODE:SECONDS");
                free(v);
                return -EINVAL;
            }
            p = *end ? end + 1 : end;
        }
        n += (size_t)fields;
    }
    *out = v;
    return (long)n / fields;
}

static bool delivery_node_ok(double node, char *err, size_t errlen)
{
    if (node < 0 || node > UINT32_MAX || node != floor(node)) {
        snprintf(err, errlen, "bad node %g: want a node index (0 = node00000)", node);
        return false;
    }
    return true;
}

long delivery_parse_windows(const char *s, struct delivery_window **out, char *err, size_t errlen)
{
    double *v;
    long n = delivery_parse(s, 3, &v, err, errlen);
    struct delivery_window *w = n >= 0 ? calloc((size_t)n + 1, sizeof(*w)) : NULL;

    *out = NULL;
    if (n >= 0 && !w)
        n = -ENOMEM;
    for (long i = 0; n > 0 && i < n; i++) {
        double node = v[3 * i], at = v[3 * i + 1], len = v[3 * i + 2];
        if (!delivery_node_ok(node, err, errlen) || at < 0 || len <= 0 || at > 1e6 || len > 1e6) {
            if (node >= 0 && node == floor(node))
                snprintf(err, errlen, "bad window %g:%g:%g: want AT >= 0 and SECONDS > 0", node, at,
                         len);
            n = -EINVAL;
            break;
        }
        w[i] =
            (struct delivery_window){(uint32_t)node, (uint64_t)(at * 1e9), (uint64_t)(len * 1e9)};
    }
    free(v);
    if (n < 0)
        free(w);
    else
        *out = w;
    return n;
}

long delivery_parse_offsets(const char *s, struct delivery_offset **out, char *err, size_t errlen)
{
    double *v;
    long n = delivery_parse(s, 2, &v, err, errlen);
    struct delivery_offset *o = n >= 0 ? calloc((size_t)n + 1, sizeof(*o)) : NULL;

    *out = NULL;
    if (n >= 0 && !o)
        n = -ENOMEM;
    for (long i = 0; n > 0 && i < n; i++) {
        if (!delivery_node_ok(v[2 * i], err, errlen) || fabs(v[2 * i + 1]) > 1e8) {
            if (v[2 * i] >= 0 && v[2 * i] == floor(v[2 * i]))
                snprintf(err, errlen, "bad clock offset %g s: want at most 1e8 s", v[2 * i + 1]);
            n = -EINVAL;
            break;
        }
        o[i] = (struct delivery_offset){(uint32_t)v[2 * i], (int64_t)(v[2 * i + 1] * 1e9)};
    }
    free(v);
    if (n < 0)
        free(o);
    else
        *out = o;
    return n;
}

int64_t delivery_offset_of(const struct delivery_offset *o, size_t n, uint32_t node)
{
    for (size_t i = 0; i < n; i++)
        if (o[i].node == node)
            return o[i].ns;
    return 0;
}
