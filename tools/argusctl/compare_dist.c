/* The distributions of argusctl compare: see compare_dist.h. */
#include "tools/argusctl/compare_dist.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clusters.h"

#define Q COMPARE_DIST_ROUNDING
/* The spread below p50 of the model's prior, relative to the one above. */
#define COMPARE_LOWER_SPREAD 0.75

static int dist_reserve(struct compare_dist *d, size_t more)
{
    size_t cap = d->cap ? d->cap : 64;
    struct compare_piece *p;

    if (d->n + more <= d->cap)
        return 0;
    while (cap < d->n + more)
        cap *= 2;
    p = realloc(d->p, cap * sizeof(*p));
    if (!p)
        return -ENOMEM;
    d->p = p;
    d->cap = cap;
    return 0;
}

static void dist_push(struct compare_dist *d, const struct compare_piece *pc)
{
    d->p[d->n++] = *pc;
    d->count += pc->w;
}

static int dist_compact(struct compare_dist *d);

int compare_dist_add_sample(struct compare_dist *d, double v)
{
    if (dist_reserve(d, 1) < 0)
        return -ENOMEM;
    dist_push(d, &(struct compare_piece){v, v, 1, v, v});
    d->sum += v;
    return d->n > COMPARE_DIST_MAX_PIECES ? dist_compact(d) : 0;
}

void compare_dist_free(struct compare_dist *d)
{
    free(d->p);
    *d = (struct compare_dist){0};
}

/* --- the model of one cluster ------------------------------------------- */

/* A known or bounded rank of a cluster; base is the log-normal's value
 * there before the shift. */
struct anchor {
    double rank, val, lo, hi; /* val when known; true value in [lo, hi] */
    double elo, ehi;          /* unknown: the estimate kept in [elo, ehi] */
    double prior;             /* unknown: model_prior at its rank */
    bool known;
};

/* The unknown ranks between two anchors: points, or segments over
 * COMPARE_DIST_RUN equal parts of them (bases at both ends). */
struct run {
    uint32_t n;
    double prior_lo[COMPARE_DIST_RUN], prior_hi[COMPARE_DIST_RUN], w[COMPARE_DIST_RUN];
};

struct cmodel {
    double n, p50, sigma;
    double top; /* ranks above this (beyond p99, up to an unknown max) form the tail */
    struct anchor a[4];
    struct run r[3];
    int na;
    bool unknown; /* some rank is not known */
};

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The model's prior at continuous rank u of n: the log-normal through p50
 * and p99 above p50; below it the same with its spread times
 * COMPARE_LOWER_SPREAD (kernel durations have a floor: they spread less
 * below their median than above it). */
static double model_prior(const struct cmodel *m, double u)
{
    double z = clusters_norm_ppf(clampd((u - 0.5) / m->n, 1e-6, 1 - 1e-6));

    return m->p50 * exp(m->sigma * z * (z < 0 ? COMPARE_LOWER_SPREAD : 1));
}

/* The value of a rank of prior v with the fit's factor e (> 0): above p50
 * the prior times e, below it the prior's distance to p50 divided by e.
 * Both grow with e; e = 1 is the prior. */
static double model_value(const struct cmodel *m, double v, double e)
{
    return v >= m->p50 ? v * e : m->p50 - (m->p50 - v) / e;
}

static void model_known(struct cmodel *m, double rank, double val)
{
    m->a[m->na++] = (struct anchor){rank, val, val * (1 - Q), val * (1 + Q), val, val, 0, true};
}

/* An unknown first or last rank, kept in [elo, ehi] (its true value in
 * those widened by the rounding). */
static void model_unknown(struct cmodel *m, double rank, double elo, double ehi)
{
    ehi = fmax(ehi, elo);
    m->a[m->na++] = (struct anchor){rank, 0,   elo * (1 - Q),        ehi * (1 + Q),
                                    elo,  ehi, model_prior(m, rank), false};
    m->unknown = true;
}

static void model_run(struct cmodel *m, struct run *r, double from, double to)
{
    double k = to - from - 1; /* unknown ranks from + 1 .. to - 1 */

    r->n = 0;
    if (k <= 0)
        return;
    m->unknown = true;
    if (k <= COMPARE_DIST_RUN) {
        for (double u = from + 1; u < to; u++, r->n++) {
            r->prior_lo[r->n] = r->prior_hi[r->n] = model_prior(m, u);
            r->w[r->n] = 1;
        }
        return;
    }
    for (uint32_t j = 0; j < COMPARE_DIST_RUN; j++, r->n++) {
        double s = from + 1 + floor(j * k / COMPARE_DIST_RUN);
        double e = from + floor((j + 1) * k / COMPARE_DIST_RUN);
        r->prior_lo[j] = model_prior(m, s - 0.5);
        r->prior_hi[j] = model_prior(m, e + 0.5);
        r->w[j] = e - s + 1;
    }
}

/* The lowest the first rank of cl can be: lo1, or what its sum leaves
 * when every other rank is at its highest (the last at most hin), divided
 * by 1 - Q (model_unknown widens it back). */
static double sum_floor(const Argus__V1__Cluster *cl, double hin, double lo1)
{
    uint64_t n = cl->count, r50 = (50 * n + 99) / 100, r99 = (99 * n + 99) / 100;
    double top = n == r99 ? 0 : cl->max_ns ? (double)cl->max_ns : hin;
    double rest = ((double)(r50 - 1) * (double)cl->p50_ns +
                   (double)(r99 - r50) * (double)cl->p99_ns + (double)(n - r99) * top) *
                  (1 + Q);

    if (!cl->sum_ns || !isfinite(rest))
        return lo1;
    return fmax(lo1, ((double)cl->sum_ns * (1 - Q) - rest) / (1 - Q));
}

/* The model of cluster c of kg: its anchors (rank 1, ceil(n/2), ceil(0.99
 * n), n as known) and the runs between them. */
static void model_build(struct cmodel *m, const Argus__V1__KernelGroup *kg, size_t c)
{
    const Argus__V1__Cluster *cl = kg->clusters[c], *prev = NULL, *next = NULL;
    uint64_t n = cl->count, r50 = (50 * n + 99) / 100, r99 = (99 * n + 99) / 100;
    double p50 = cl->p50_ns ? (double)cl->p50_ns : 1, p99 = fmax((double)cl->p99_ns, p50);
    double lo1 = 0, hin = INFINITY;

    for (size_t i = c; i-- > 0 && !prev;)
        prev = kg->clusters[i]->count ? kg->clusters[i] : NULL;
    for (size_t i = c + 1; i < kg->n_clusters && !next; i++)
        next = kg->clusters[i]->count ? kg->clusters[i] : NULL;
    if (prev) /* clusters do not overlap: this one starts at or above prev's longest */
        lo1 = (double)(prev->max_ns ? prev->max_ns : prev->p99_ns);
    if (next)
        hin = (double)(next->min_ns ? next->min_ns : next->p50_ns);
    *m = (struct cmodel){.n = (double)n, .p50 = p50, .top = (double)n};
    /* no spread between p50 and p99: a small one the sum can still widen */
    m->sigma = p99 > p50 ? log(p99 / p50) / CLUSTERS_Z99 : 0.01;
    if (cl->min_ns && r50 > 1) { /* (at r50 = 1 the shortest is p50) */
        model_known(m, 1, (double)cl->min_ns);
        lo1 = (double)cl->min_ns;
    } else if (r50 > 1) {
        model_unknown(m, 1, fmin(sum_floor(cl, hin, lo1), p50), p50);
    }
    model_known(m, (double)r50, p50);
    if (r99 > r50)
        model_known(m, (double)r99, p99);
    if (cl->max_ns && n > r99) {
        model_known(m, (double)n, (double)cl->max_ns);
    } else if (n > r99) {
        /* what the sum leaves when every other rank is at its lowest */
        if (cl->sum_ns)
            hin = fmin(hin,
                       ((double)cl->sum_ns * (1 + Q) - (double)(r50 - 1) * lo1 * (1 - Q) -
                        (double)(r99 - r50) * p50 * (1 - Q) - (double)(n - r99) * p99 * (1 - Q)) /
                           (1 + Q));
        model_unknown(m, (double)n, p99, hin);
        m->top = (double)r99;
    }
    for (int i = 0; i + 1 < m->na; i++)
        model_run(m, &m->r[i], m->a[i].rank, m->a[i + 1].rank);
}

/* The pieces of m into out (COMPARE_DIST_PIECES room), the unknown ranks
 * at model_value with e (etop for the tail); returns how many. *sum gets
 * their sum. */
static size_t model_emit(const struct cmodel *m, double e, double etop, struct compare_piece *out,
                         double *sum)
{
    double est[4];
    size_t k = 0;

    *sum = 0;
    for (int i = 0; i < m->na; i++) {
        const struct anchor *a = &m->a[i];
        double f = a->rank > m->top ? etop : e;
        est[i] = a->known ? a->val : clampd(model_value(m, a->prior, f), a->elo, a->ehi);
        out[k++] = (struct compare_piece){est[i], est[i], 1, a->lo, a->hi};
        *sum += est[i];
    }
    for (int i = 0; i + 1 < m->na; i++) {
        const struct run *r = &m->r[i];
        double f = m->a[i].rank >= m->top ? etop : e;
        for (uint32_t j = 0; j < r->n; j++) {
            double lo = clampd(model_value(m, r->prior_lo[j], f), est[i], est[i + 1]);
            double hi = clampd(model_value(m, r->prior_hi[j], f), est[i], est[i + 1]);
            out[k++] = (struct compare_piece){lo, hi, r->w[j], m->a[i].lo, m->a[i + 1].hi};
            *sum += r->w[j] * (lo + hi) / 2;
        }
    }
    return k;
}

/* The log of the factor in [lo, hi] that meets target: etop alone (tail),
 * or e and etop together. The model's sum grows with both. */
static double model_bisect(const struct cmodel *m, double target, bool tail, double lo, double hi)
{
    struct compare_piece tmp[COMPARE_DIST_PIECES];
    double sum;

    for (int i = 0; i < 32; i++) {
        double mid = (lo + hi) / 2;
        model_emit(m, tail ? 1 : exp(mid), exp(mid), tmp, &sum);
        if (sum < target)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* The factors (model_value's e, and etop of the tail) that meet the
 * cluster's sum: a sum above the model's puts the excess in the tail first
 * (heavy tails carry it there), then everywhere; one below it lowers
 * everything. Both 1 without a sum or with nothing unknown. */
static void model_fit(const struct cmodel *m, double target, double *e, double *etop)
{
    struct compare_piece tmp[COMPARE_DIST_PIECES];
    double sum;

    *e = *etop = 1;
    if (!m->unknown || !(target > 0))
        return;
    model_emit(m, 1, 1, tmp, &sum);
    if (sum < target && m->top < m->n) {
        model_emit(m, 1, exp(16), tmp, &sum);
        if (sum >= target) {
            *etop = exp(model_bisect(m, target, true, 0, 16));
            return;
        }
    }
    *e = *etop = exp(model_bisect(m, target, false, -16, 16));
}

/* A bound on the sum of |true - estimate| over the ranks of a cluster's
 * pieces p[0..k) (each true value in its piece's [env_lo, env_hi]). With
 * the sum known the true values add up to the estimates' (within the
 * rounding and what the fit missed), so what some ranks are above their
 * estimate others are below: twice the smaller room, up or down. */
static double model_deviation(const struct compare_piece *p, size_t k, double sum_ns,
                              double est_sum)
{
    double up = 0, down = 0, both = 0;

    for (size_t i = 0; i < k; i++) {
        double mid = (p[i].lo + p[i].hi) / 2;
        up += p[i].w * (p[i].env_hi - mid);
        down += p[i].w * (mid - p[i].env_lo);
        both += p[i].w * fmax(p[i].env_hi - mid, mid - p[i].env_lo);
    }
    if (!(sum_ns > 0))
        return both;
    return fmin(both, 2 * fmin(up, down) + fabs(sum_ns - est_sum) + sum_ns * Q);
}

int compare_dist_add_group(struct compare_dist *d, const Argus__V1__KernelGroup *kg)
{
    for (size_t c = 0; c < kg->n_clusters; c++) {
        const Argus__V1__Cluster *cl = kg->clusters[c];
        struct cmodel m;
        double sum;
        double e, etop;
        size_t k;

        if (!cl->count)
            continue;
        if (dist_reserve(d, COMPARE_DIST_PIECES) < 0)
            return -ENOMEM;
        model_build(&m, kg, c);
        model_fit(&m, (double)cl->sum_ns, &e, &etop);
        k = model_emit(&m, e, etop, d->p + d->n, &sum);
        d->deviation += model_deviation(d->p + d->n, k, (double)cl->sum_ns, sum);
        for (size_t i = 0; i < k; i++) {
            struct compare_piece pc = d->p[d->n];
            dist_push(d, &pc);
        }
        d->sum += cl->sum_ns ? (double)cl->sum_ns : sum;
        if (d->n > COMPARE_DIST_MAX_PIECES && dist_compact(d) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* --- the CDF of a distribution ------------------------------------------ */

enum cdf_view { VIEW_EST, VIEW_LOW, VIEW_HIGH };

/* F is piecewise linear: F(x) = f[k] + s[k] * (x - x[k]) on [x[k], x[k+1]),
 * f[k] counting the values at x[k]. */
struct cdf {
    double *x, *f, *s;
    size_t n;
    double total;
};

struct event {
    double x, jump, slope;
};

static int event_cmp(const void *a, const void *b)
{
    const struct event *p = a, *q = b;

    return p->x < q->x ? -1 : p->x > q->x;
}

/* The events of d's pieces as view v sees them into ev; returns how many. */
static size_t cdf_events(const struct compare_dist *d, enum cdf_view v, struct event *ev)
{
    size_t k = 0;

    for (size_t i = 0; i < d->n; i++) {
        const struct compare_piece *p = &d->p[i];
        double lo = v == VIEW_EST ? p->lo : v == VIEW_LOW ? p->env_lo : p->env_hi;
        double hi = v == VIEW_EST ? p->hi : lo;

        if (hi - lo <= 1e-9 * fabs(hi)) {
            ev[k++] = (struct event){lo, p->w, 0};
        } else {
            ev[k++] = (struct event){lo, 0, p->w / (hi - lo)};
            ev[k++] = (struct event){hi, 0, -p->w / (hi - lo)};
        }
    }
    return k;
}

static void cdf_free(struct cdf *c)
{
    free(c->x);
    free(c->f);
    free(c->s);
}

static int cdf_build(struct cdf *c, const struct compare_dist *d, enum cdf_view v)
{
    struct event *ev = malloc(2 * (d->n ? d->n : 1) * sizeof(*ev));
    size_t m = ev ? cdf_events(d, v, ev) : 0;
    long double f = 0, s = 0, at = 0;

    *c = (struct cdf){.x = malloc((m + 1) * sizeof(double)),
                      .f = malloc((m + 1) * sizeof(double)),
                      .s = malloc((m + 1) * sizeof(double)),
                      .total = d->count};
    if (!ev || !c->x || !c->f || !c->s) {
        free(ev);
        cdf_free(c);
        return -ENOMEM;
    }
    qsort(ev, m, sizeof(*ev), event_cmp);
    for (size_t i = 0; i < m;) {
        double x = ev[i].x;
        if (s != 0)
            f += s * (x - at);
        for (at = x; i < m && ev[i].x == x; i++) {
            f += ev[i].jump;
            s += ev[i].slope;
        }
        if (s < 0 || i == m)
            s = 0;
        c->x[c->n] = x;
        c->f[c->n] = (double)f;
        c->s[c->n++] = (double)s;
    }
    free(ev);
    return 0;
}

/* The smallest x with F(x) >= p * total, searched from breakpoint *from
 * (0 at first; left where the answer is, so increasing p cost O(n) in all). */
static double cdf_quantile_from(const struct cdf *c, double p, size_t *from)
{
    double t = p * c->total * (1 - 1e-12);

    for (size_t k = *from; k < c->n; k++) {
        *from = k;
        if (c->f[k] >= t)
            return c->x[k];
        if (k + 1 < c->n && c->s[k] > 0 && c->f[k] + c->s[k] * (c->x[k + 1] - c->x[k]) >= t)
            return fmin(c->x[k] + (t - c->f[k]) / c->s[k], c->x[k + 1]);
    }
    return c->n ? c->x[c->n - 1] : 0;
}

static double cdf_quantile(const struct cdf *c, double p)
{
    size_t from = 0;

    return cdf_quantile_from(c, p, &from);
}

int compare_dist_quantiles(const struct compare_dist *d, const double *p, size_t n,
                           struct compare_quantile *q)
{
    struct cdf c;

    memset(q, 0, n * sizeof(*q));
    if (!d->n || !(d->count > 0))
        return -ENODATA;
    for (enum cdf_view v = VIEW_EST; v <= VIEW_HIGH; v++) {
        if (cdf_build(&c, d, v) < 0)
            return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
            double x = cdf_quantile(&c, p[i]);
            *(v == VIEW_EST ? &q[i].v : v == VIEW_LOW ? &q[i].lo : &q[i].hi) = x;
        }
        cdf_free(&c);
    }
    /* an estimate outside its bounds only by the rounding of the sweep */
    for (size_t i = 0; i < n; i++)
        q[i].v = clampd(q[i].v, q[i].lo, q[i].hi);
    return 0;
}

/* F / total of c at x (right-continuous), walking *k forward: x must not
 * decrease between calls; *slope gets the slope / total after x. */
static double cdf_at(const struct cdf *c, double x, size_t *k, double *slope)
{
    while (*k < c->n && c->x[*k] <= x)
        (*k)++;
    if (*k == 0) {
        *slope = 0;
        return 0;
    }
    *slope = c->s[*k - 1] / c->total;
    return (c->f[*k - 1] + c->s[*k - 1] * (x - c->x[*k - 1])) / c->total;
}

/* The integral of |d0 + (d1 - d0) t / len| over [0, len]. */
static double abs_linear(double d0, double d1, double len)
{
    if ((d0 >= 0) == (d1 >= 0))
        return fabs(d0 + d1) / 2 * len;
    return (d0 * d0 + d1 * d1) / (2 * (fabs(d0) + fabs(d1))) * len;
}

static double cdf_w1(const struct cdf *a, const struct cdf *b)
{
    size_t i = 0, k = 0, ka = 0, kb = 0;
    double x = 0, sum = 0;
    bool started = false;

    while (i < a->n || k < b->n) {
        double next = k >= b->n || (i < a->n && a->x[i] <= b->x[k]) ? a->x[i] : b->x[k];
        double sa, sb;
        if (started) {
            double d0 = cdf_at(a, x, &ka, &sa) - cdf_at(b, x, &kb, &sb);
            double len = next - x;
            sum += abs_linear(d0, d0 + (sa - sb) * len, len);
        }
        x = next;
        started = true;
        while (i < a->n && a->x[i] == next)
            i++;
        while (k < b->n && b->x[k] == next)
            k++;
    }
    return sum;
}

int compare_dist_w1(const struct compare_dist *a, const struct compare_dist *b, double *w1,
                    double *err)
{
    struct cdf ca, cb;

    *w1 = *err = 0;
    if (!a->n || !b->n || !(a->count > 0) || !(b->count > 0))
        return -ENODATA;
    if (cdf_build(&ca, a, VIEW_EST) < 0)
        return -ENOMEM;
    if (cdf_build(&cb, b, VIEW_EST) < 0) {
        cdf_free(&ca);
        return -ENOMEM;
    }
    *w1 = cdf_w1(&ca, &cb);
    *err = a->deviation / a->count + b->deviation / b->count;
    cdf_free(&ca);
    cdf_free(&cb);
    return 0;
}

/* The sketch of d: COMPARE_DIST_SKETCH pieces of count / SKETCH each, the
 * k-th spread over the estimate's quantiles k / SKETCH .. (k + 1) / SKETCH,
 * its true values between the low view's quantile at k / SKETCH and the high
 * view's at (k + 1) / SKETCH (which hold the true ones). The estimate moves
 * by at most the range / SKETCH in W1, added to the deviation. Returns 0 or
 * -ENOMEM (d unchanged). */
static int dist_compact(struct compare_dist *d)
{
    struct compare_piece *p = malloc(COMPARE_DIST_SKETCH * sizeof(*p));
    struct cdf c[3];
    int built = 0;

    for (; p && built < 3 && cdf_build(&c[built], d, (enum cdf_view)built) == 0; built++)
        ;
    if (built == 3) {
        double w = d->count / COMPARE_DIST_SKETCH, prev[3];
        size_t from[3] = {0, 0, 0};
        for (int v = 0; v < 3; v++)
            prev[v] = cdf_quantile(&c[v], 0);
        for (uint32_t k = 0; k < COMPARE_DIST_SKETCH; k++) {
            double next[3];
            for (int v = 0; v < 3; v++)
                next[v] = cdf_quantile_from(&c[v], (double)(k + 1) / COMPARE_DIST_SKETCH, &from[v]);
            p[k] = (struct compare_piece){prev[VIEW_EST], next[VIEW_EST], w, prev[VIEW_LOW],
                                          next[VIEW_HIGH]};
            memcpy(prev, next, sizeof(prev));
        }
        d->deviation += d->count * (prev[VIEW_EST] - c[VIEW_EST].x[0]) / COMPARE_DIST_SKETCH;
        free(d->p);
        d->p = p;
        d->n = d->cap = COMPARE_DIST_SKETCH;
        p = NULL;
    }
    while (built-- > 0)
        cdf_free(&c[built]);
    free(p);
    return d->p && d->n <= COMPARE_DIST_SKETCH ? 0 : -ENOMEM;
}
