/* The per-step kernel summarizer: groups, KDE clustering and the output
 * allocation. See summarize.h. */
#include "agent/steps/summarize.h"

#include <errno.h>
#include <math.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

#define SUMMARIZE_SMALL_SORT 48       /* insertion sort below this many durations */
#define SUMMARIZE_KERNEL_SIGMAS 4.0   /* direct Gaussian kernel truncated at 4h */
#define SUMMARIZE_RECURSIVE_SIGMA 3.0 /* wider kernels (grid steps): recursive filter */
#define SUMMARIZE_GRID_PAD 3.0        /* grid spans [min - 3h, max + 3h] */
#define SUMMARIZE_MAX_DEPTH 4         /* re-splits of a segment with its own bandwidth */
#define SUMMARIZE_IDLE_STEPS 16       /* a group without events this many steps is forgotten */
#define SUMMARIZE_MIN_EVENTS_CAP 1024u

/* Events are kept in arrival order in two flat arrays and only grouped at
 * finish, by one counting pass into a contiguous buffer: the step closes long
 * after its events arrived, and one cold sequential read costs far less than
 * visiting a buffer of its own per group. */
struct group {
    uint64_t name_id;
    uint32_t stream;
    uint32_t n;    /* events this step */
    uint32_t at;   /* finish: scatter cursor into the grouped buffer */
    uint32_t idle; /* steps in a row without events */
};

/* Sort key of a group: output is ordered by (name_id, stream). */
struct group_key {
    uint64_t name_id;
    uint32_t stream;
    uint32_t index;
};

/* One cluster before it is copied into the protobuf block. */
struct cluster {
    uint32_t count;
    uint64_t sum, p50, p99, min, max;
};

struct summarizer {
    struct summarize_options o;
    struct group *groups;
    uint32_t n_groups, cap_groups;
    uint32_t *table; /* open addressing: group index + 1, 0 = empty */
    uint32_t table_mask;
    uint32_t *order;    /* every group index, by (name_id, stream) */
    bool order_stale;   /* groups came or went since order was built */
    uint32_t *ev_group; /* this step's events: group index and duration */
    uint64_t *ev_dur;
    size_t ev_cap;
    uint64_t events, dropped;
    /* scratch for finish, grown as needed */
    uint64_t *grouped; /* events durations, group after group (events) */
    uint32_t *active;  /* groups with events, in order (n_groups) */
    size_t grouped_cap, active_cap;
    uint64_t *tmp;
    double *logs;
    size_t scratch_cap;
    double *bins, *dens, *weights; /* grid_points each */
    struct cluster *clusters;
    size_t clusters_cap;
};

void summarize_options_default(struct summarize_options *o)
{
    *o = (struct summarize_options){
        .grid_points = SUMMARIZE_DEFAULT_GRID_POINTS,
        .min_count = SUMMARIZE_DEFAULT_MIN_COUNT,
        .min_fraction = SUMMARIZE_DEFAULT_MIN_FRACTION,
        .min_log_gap = SUMMARIZE_DEFAULT_MIN_LOG_GAP,
        .max_valley_ratio = SUMMARIZE_DEFAULT_MAX_VALLEY_RATIO,
        .max_clusters = SUMMARIZE_DEFAULT_MAX_CLUSTERS,
        .max_events = SUMMARIZE_DEFAULT_MAX_EVENTS,
        .fields = SUMMARIZE_DEFAULT_FIELDS,
        .quantize_bits = SUMMARIZE_DEFAULT_QUANTIZE_BITS,
    };
}

static bool options_valid(const struct summarize_options *o)
{
    return o->grid_points >= 16 && o->grid_points <= SUMMARIZE_MAX_GRID_POINTS &&
           o->min_count >= 1 && o->min_fraction >= 0 && o->min_fraction < 0.5 &&
           o->min_log_gap >= 0 && o->max_valley_ratio > 0 && o->max_valley_ratio <= 1 &&
           o->max_clusters >= 1 && o->max_clusters <= SUMMARIZE_MAX_CLUSTERS &&
           o->max_events >= 1 && (o->fields & ~SUMMARIZE_FIELDS_ALL) == 0 && o->quantize_bits <= 63;
}

struct summarizer *summarizer_new(const struct summarize_options *o)
{
    struct summarizer *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    if (o)
        s->o = *o;
    else
        summarize_options_default(&s->o);
    if (!options_valid(&s->o)) {
        free(s);
        errno = EINVAL;
        return NULL;
    }
    s->table_mask = 63;
    s->table = calloc(s->table_mask + 1, sizeof(*s->table));
    s->bins = calloc(s->o.grid_points, sizeof(double));
    s->dens = calloc(s->o.grid_points, sizeof(double));
    s->weights = calloc(s->o.grid_points, sizeof(double));
    if (!s->table || !s->bins || !s->dens || !s->weights) {
        summarizer_free(s);
        errno = ENOMEM;
        return NULL;
    }
    return s;
}

void summarizer_free(struct summarizer *s)
{
    if (!s)
        return;
    free(s->groups);
    free(s->table);
    free(s->ev_group);
    free(s->ev_dur);
    free(s->grouped);
    free(s->active);
    free(s->tmp);
    free(s->logs);
    free(s->bins);
    free(s->dens);
    free(s->weights);
    free(s->order);
    free(s->clusters);
    free(s);
}

static uint32_t group_hash(uint64_t name_id, uint32_t stream)
{
    uint64_t h = (name_id ^ ((uint64_t)stream * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

    return (uint32_t)(h >> 32);
}

/* Insert every group into the (empty) table. */
static void table_fill(struct summarizer *s)
{
    for (uint32_t i = 0; i < s->n_groups; i++) {
        uint32_t h = group_hash(s->groups[i].name_id, s->groups[i].stream) & s->table_mask;

        while (s->table[h])
            h = (h + 1) & s->table_mask;
        s->table[h] = i + 1;
    }
}

/* Rebuild the table for the current groups with slots slots. */
static int table_rebuild(struct summarizer *s, uint32_t slots)
{
    uint32_t *t = calloc(slots, sizeof(*t));

    if (!t)
        return -ENOMEM;
    free(s->table);
    s->table = t;
    s->table_mask = slots - 1;
    table_fill(s);
    return 0;
}

/* The group of (name_id, stream), created when new; NULL on -ENOMEM. */
static struct group *group_get(struct summarizer *s, uint64_t name_id, uint32_t stream)
{
    uint32_t h = group_hash(name_id, stream) & s->table_mask;

    for (; s->table[h]; h = (h + 1) & s->table_mask) {
        struct group *g = &s->groups[s->table[h] - 1];

        if (g->name_id == name_id && g->stream == stream)
            return g;
    }
    if (s->n_groups == s->cap_groups) {
        uint32_t cap = s->cap_groups ? s->cap_groups * 2 : 64;
        struct group *tmp = realloc(s->groups, cap * sizeof(*tmp));

        if (!tmp)
            return NULL;
        s->groups = tmp;
        s->cap_groups = cap;
    }
    s->groups[s->n_groups] = (struct group){.name_id = name_id, .stream = stream};
    s->table[h] = ++s->n_groups;
    s->order_stale = true;
    if (s->n_groups * 2 > s->table_mask + 1 && table_rebuild(s, (s->table_mask + 1) * 2) < 0) {
        s->table[h] = 0; /* undo: the table stays valid without it */
        s->n_groups--;
        return NULL;
    }
    return &s->groups[s->n_groups - 1];
}

/* Resize the event arrays to cap entries (cap >= s->events). */
static int events_resize(struct summarizer *s, size_t cap)
{
    uint32_t *grp = realloc(s->ev_group, cap * sizeof(*grp));

    if (!grp)
        return -ENOMEM;
    s->ev_group = grp;
    uint64_t *dur = realloc(s->ev_dur, cap * sizeof(*dur));
    if (!dur)
        return -ENOMEM; /* ev_group is merely larger than needed */
    s->ev_dur = dur;
    s->ev_cap = cap;
    return 0;
}

int summarizer_add(struct summarizer *s, uint64_t name_id, uint32_t stream, uint64_t duration_ns)
{
    struct group *g;

    if (s->events >= s->o.max_events) {
        s->dropped++;
        return -ENOSPC;
    }
    if (s->events == s->ev_cap) {
        size_t cap = s->ev_cap ? 2 * s->ev_cap : SUMMARIZE_MIN_EVENTS_CAP;

        if (cap > s->o.max_events)
            cap = s->o.max_events;
        if (events_resize(s, cap) < 0) {
            s->dropped++;
            return -ENOMEM;
        }
    }
    g = group_get(s, name_id, stream);
    if (!g) {
        s->dropped++;
        return -ENOMEM;
    }
    g->n++;
    s->ev_group[s->events] = (uint32_t)(g - s->groups);
    s->ev_dur[s->events++] = duration_ns;
    return 0;
}

uint64_t summarizer_events(const struct summarizer *s)
{
    return s->events;
}

uint64_t summarizer_dropped(const struct summarizer *s)
{
    return s->dropped;
}

/* Empty the step. Groups idle for SUMMARIZE_IDLE_STEPS steps are forgotten
 * and the event arrays shrink after a burst, so memory follows the recent
 * steps, while a steady job keeps its groups, table and order untouched. */
void summarizer_reset(struct summarizer *s)
{
    uint32_t kept = 0;

    for (uint32_t i = 0; i < s->n_groups; i++) {
        struct group *g = &s->groups[i];

        g->idle = g->n ? 0 : g->idle + 1;
        g->n = 0;
        if (g->idle <= SUMMARIZE_IDLE_STEPS)
            s->groups[kept++] = *g;
    }
    if (s->ev_cap > 64 * SUMMARIZE_MIN_EVENTS_CAP && s->events < s->ev_cap / 4)
        events_resize(s, s->ev_cap / 2); /* on failure the arrays stay as they are */
    s->events = 0;
    if (kept == s->n_groups)
        return;
    s->n_groups = kept;
    s->order_stale = true;
    memset(s->table, 0, (s->table_mask + 1) * sizeof(*s->table));
    table_fill(s);
}

/* --- sorting ------------------------------------------------------------- */

/* LSD radix sort, 8 bits per pass; passes where every key has the same digit
 * (the high bytes of durations) are skipped. tmp holds n values, n > 0. */
static void radix_sort_u64(uint64_t *a, uint64_t *tmp, size_t n)
{
    size_t hist[8][256] = {{0}};
    uint64_t *src = a, *dst = tmp;

    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < 8; p++)
            hist[p][(a[i] >> (8 * p)) & 0xff]++;
    for (int p = 0; p < 8; p++) {
        size_t sum = 0;

        if (hist[p][(a[0] >> (8 * p)) & 0xff] == n)
            continue;
        for (int d = 0; d < 256; d++) {
            size_t c = hist[p][d];

            hist[p][d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[hist[p][(src[i] >> (8 * p)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(*a));
}

/* Sort n durations: insertion sort when few, radix sort otherwise. */
static void sort_u64(uint64_t *a, uint64_t *tmp, size_t n)
{
    if (n >= SUMMARIZE_SMALL_SORT) {
        radix_sort_u64(a, tmp, n);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        size_t j = i;

        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

static int group_cmp(const void *pa, const void *pb)
{
    const struct group_key *a = pa, *b = pb;

    if (a->name_id != b->name_id)
        return a->name_id < b->name_id ? -1 : 1;
    return a->stream < b->stream ? -1 : a->stream > b->stream;
}

/* --- clustering ---------------------------------------------------------- */

/* Round v to bits significant bits (0 = exact). Monotonic, so the order
 * min <= p50 <= p99 <= max survives. */
static uint64_t quantize(uint64_t v, uint32_t bits)
{
    int msb;
    uint32_t shift;

    if (!bits || v == 0)
        return v;
    msb = 63 - __builtin_clzll(v);
    if ((uint32_t)msb < bits)
        return v;
    shift = (uint32_t)msb + 1 - bits;
    if (v > UINT64_MAX - (UINT64_C(1) << (shift - 1)))
        return v;
    return ((v + (UINT64_C(1) << (shift - 1))) >> shift) << shift;
}

/* Statistics of sorted dur[0..m), nearest-rank percentiles. */
static void cluster_fill(const struct summarize_options *o, const uint64_t *dur, size_t m,
                         struct cluster *c)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < m; i++)
        sum += dur[i];
    c->count = (uint32_t)m;
    c->p50 = quantize(dur[(50 * m + 99) / 100 - 1], o->quantize_bits);
    c->p99 = quantize(dur[(99 * m + 99) / 100 - 1], o->quantize_bits);
    c->sum = (o->fields & SUMMARIZE_FIELD_SUM) ? quantize(sum, o->quantize_bits) : 0;
    c->min = (o->fields & SUMMARIZE_FIELD_MIN_MAX) ? quantize(dur[0], o->quantize_bits) : 0;
    c->max = (o->fields & SUMMARIZE_FIELD_MIN_MAX) ? quantize(dur[m - 1], o->quantize_bits) : 0;
}

/* Number of logs[0..n) below x (logs sorted). */
static size_t count_below(const double *logs, size_t n, double x)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (logs[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* dens = bins convolved with a Gaussian of sigma grid steps, by the
 * recursive filter of Young and van Vliet (1995): a causal and an anti-causal
 * third-order pass, O(grid) whatever sigma. The grid's 3h padding holds no
 * samples, so starting both passes from zero costs nothing where it matters. */
static void gauss_recursive(const double *bins, double *dens, uint32_t g, double sigma)
{
    double q =
        sigma >= 2.5 ? 0.98711 * sigma - 0.96330 : 3.97156 - 4.14554 * sqrt(1 - 0.26891 * sigma);
    double b0 = 1.57825 + 2.44413 * q + 1.4281 * q * q + 0.422205 * q * q * q;
    double b1 = (2.44413 * q + 2.85619 * q * q + 1.26661 * q * q * q) / b0;
    double b2 = -(1.4281 * q * q + 1.26661 * q * q * q) / b0;
    double b3 = 0.422205 * q * q * q / b0;
    double gain = 1 - (b1 + b2 + b3), w1 = 0, w2 = 0, w3 = 0;

    for (uint32_t i = 0; i < g; i++) {
        double w = gain * bins[i] + b1 * w1 + b2 * w2 + b3 * w3;

        dens[i] = w;
        w3 = w2, w2 = w1, w1 = w;
    }
    w1 = w2 = w3 = 0;
    for (uint32_t i = g; i-- > 0;) {
        double y = gain * dens[i] + b1 * w1 + b2 * w2 + b3 * w3;

        dens[i] = y;
        w3 = w2, w2 = w1, w1 = y;
    }
}

/* dens = bins convolved with the Gaussian of sigma grid steps truncated at
 * 4 sigma, directly: for narrow kernels, where it is cheap and exact. */
static void gauss_direct(const double *bins, double *dens, double *w, uint32_t g, double sigma)
{
    uint32_t k_max = (uint32_t)fmin(g - 1, ceil(SUMMARIZE_KERNEL_SIGMAS * sigma));

    for (uint32_t k = 0; k <= k_max; k++)
        w[k] = exp(-0.5 * (k / sigma) * (k / sigma));
    memset(dens, 0, g * sizeof(*dens));
    for (uint32_t j = 0; j < g; j++) {
        uint32_t a = j > k_max ? j - k_max : 0, b = j + k_max < g - 1 ? j + k_max : g - 1;

        if (bins[j] == 0)
            continue;
        for (uint32_t i = a; i <= b; i++)
            dens[i] += bins[j] * w[i > j ? i - j : j - i];
    }
}

/* The KDE of the sorted logs on the grid lo + i * dx, into s->dens (up to a
 * constant factor): linear binning, then the Gaussian of bandwidth h. */
static void kde_density(struct summarizer *s, const double *logs, size_t n, double h, double lo,
                        double dx)
{
    uint32_t g = s->o.grid_points;
    double *bins = s->bins;

    memset(bins, 0, g * sizeof(*bins));
    for (size_t i = 0; i < n; i++) {
        double t = (logs[i] - lo) / dx;
        uint32_t j = (uint32_t)t;
        double frac = t - j;

        if (j >= g - 1) {
            j = g - 2;
            frac = 1;
        }
        bins[j] += 1 - frac;
        bins[j + 1] += frac;
    }
    if (h / dx >= SUMMARIZE_RECURSIVE_SIGMA)
        gauss_recursive(bins, s->dens, g, h / dx);
    else
        gauss_direct(bins, s->dens, s->weights, g, h / dx);
}

/* Index of the highest density in dens[a..b]. */
static uint32_t peak_in(const double *dens, uint32_t a, uint32_t b)
{
    uint32_t best = a;

    for (uint32_t i = a + 1; i <= b; i++)
        if (dens[i] > dens[best])
            best = i;
    return best;
}

/* Cut positions (as counts of logs below each cut, increasing) of one group;
 * returns how many, at most max_cuts. */
static uint32_t kde_cuts(struct summarizer *s, const double *logs, size_t n, size_t *cuts,
                         uint32_t max_cuts)
{
    const struct summarize_options *o = &s->o;
    double mean = 0, var = 0, h, lo, dx;
    uint32_t g = o->grid_points, n_cuts = 0, left_peak, seg_start = 0;
    size_t below_last = 0, min_side = (size_t)ceil(o->min_fraction * (double)n);

    for (size_t i = 0; i < n; i++)
        mean += logs[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (logs[i] - mean) * (logs[i] - mean);
    var /= (double)(n - 1);
    if (!(var > 1e-18))
        return 0;
    h = 1.06 * sqrt(var) * pow((double)n, -0.2);
    lo = logs[0] - SUMMARIZE_GRID_PAD * h;
    dx = (logs[n - 1] + SUMMARIZE_GRID_PAD * h - lo) / (g - 1);
    kde_density(s, logs, n, h, lo, dx);
    if (min_side < o->min_count)
        min_side = o->min_count;

    for (uint32_t i = 1; i + 1 < g && n_cuts < max_cuts; i++) {
        const double *d = s->dens;
        uint32_t next = i + 1, right_peak;
        size_t below;

        if (!(d[i] < d[i - 1] && d[i] <= d[i + 1]))
            continue;
        /* the right mode: up to the next valley (or the end) */
        while (next + 1 < g && !(d[next] < d[next - 1] && d[next] <= d[next + 1]))
            next++;
        left_peak = peak_in(d, seg_start, i);
        right_peak = peak_in(d, i, next);
        below = count_below(logs, n, lo + i * dx);
        if (below - below_last >= min_side && n - below >= min_side &&
            (right_peak - left_peak) * dx >= o->min_log_gap &&
            d[i] <= o->max_valley_ratio * fmin(d[left_peak], d[right_peak])) {
            cuts[n_cuts++] = below;
            below_last = below;
            seg_start = i;
        }
    }
    return n_cuts;
}

/* Cuts of logs[0..n) (counts below each cut, plus offset) appended to
 * cuts[*n_cuts..max_cuts): one KDE pass, then each resulting segment again
 * with its own bandwidth, because Scott's rule over several modes is wide
 * enough to blur two neighbouring ones into one. */
static void split_segment(struct summarizer *s, const double *logs, size_t n, size_t offset,
                          size_t *cuts, uint32_t *n_cuts, uint32_t max_cuts, int depth)
{
    size_t local[SUMMARIZE_MAX_CLUSTERS], start = 0;
    uint32_t found;

    if (*n_cuts >= max_cuts || n < 2 * (size_t)s->o.min_count)
        return;
    found = kde_cuts(s, logs, n, local, max_cuts - *n_cuts);
    for (uint32_t c = 0; c <= found && *n_cuts < max_cuts; c++) {
        size_t end = c < found ? local[c] : n;

        if (found && depth < SUMMARIZE_MAX_DEPTH)
            split_segment(s, logs + start, end - start, offset + start, cuts, n_cuts, max_cuts,
                          depth + 1);
        if (c < found && *n_cuts < max_cuts)
            cuts[(*n_cuts)++] = offset + end;
        start = end;
    }
}

/* Sort the n durations of one group and append its clusters to s->clusters
 * (room for max_clusters more is guaranteed by the caller). Returns how
 * many. */
static uint32_t group_summarize(struct summarizer *s, uint64_t *dur, size_t n, size_t at)
{
    size_t cuts[SUMMARIZE_MAX_CLUSTERS], start = 0;
    uint32_t n_cuts = 0;

    sort_u64(dur, s->tmp, n);
    if (n >= 2 * (size_t)s->o.min_count && s->o.max_clusters > 1) {
        for (size_t i = 0; i < n; i++)
            s->logs[i] = log(dur[i] ? (double)dur[i] : 1.0);
        split_segment(s, s->logs, n, 0, cuts, &n_cuts, s->o.max_clusters - 1, 0);
    }
    for (uint32_t c = 0; c <= n_cuts; c++) {
        size_t end = c < n_cuts ? cuts[c] : n;

        cluster_fill(&s->o, dur + start, end - start, &s->clusters[at + c]);
        start = end;
    }
    return n_cuts + 1;
}

/* Rebuild s->order: every group index by (name_id, stream). */
static int order_build(struct summarizer *s)
{
    struct group_key *keys = malloc((s->n_groups ? s->n_groups : 1) * sizeof(*keys));
    uint32_t *order = realloc(s->order, (s->n_groups ? s->n_groups : 1) * sizeof(*order));

    if (order)
        s->order = order;
    if (!keys || !order) {
        free(keys);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < s->n_groups; i++)
        keys[i] = (struct group_key){s->groups[i].name_id, s->groups[i].stream, i};
    if (s->n_groups > 1)
        qsort(keys, s->n_groups, sizeof(*keys), group_cmp);
    for (uint32_t i = 0; i < s->n_groups; i++)
        s->order[i] = keys[i].index;
    free(keys);
    s->order_stale = false;
    return 0;
}

/* Grow the scratch arrays for the largest group and all clusters. */
static int scratch_reserve(struct summarizer *s, size_t largest, size_t groups)
{
    size_t need_clusters = groups * s->o.max_clusters;

    if (largest > s->scratch_cap) {
        uint64_t *tmp = malloc(largest * sizeof(*tmp));
        double *logs = malloc(largest * sizeof(*logs));

        if (!tmp || !logs) {
            free(tmp);
            free(logs);
            return -ENOMEM;
        }
        free(s->tmp);
        free(s->logs);
        s->tmp = tmp;
        s->logs = logs;
        s->scratch_cap = largest;
    }
    return array_reserve((void **)&s->clusters, &s->clusters_cap, need_clusters,
                         sizeof(*s->clusters));
}

#define ALIGN_UP(x) (((x) + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1))

/* Copy the clusters into one block: group pointers, groups, cluster
 * pointers, clusters. free(out->kernels) releases all of it. */
static int output_build(struct summarizer *s, uint32_t n_groups, const uint32_t *n_clusters,
                        size_t total, Argus__V1__StepRecord *out)
{
    size_t off_groups = ALIGN_UP(n_groups * sizeof(void *));
    size_t off_cptrs = off_groups + ALIGN_UP(n_groups * sizeof(Argus__V1__KernelGroup));
    size_t off_clusters = off_cptrs + ALIGN_UP(total * sizeof(void *));
    char *block = malloc(off_clusters + total * sizeof(Argus__V1__Cluster));
    size_t c = 0;

    if (!block)
        return -ENOMEM;
    out->kernels = (Argus__V1__KernelGroup **)block;
    out->n_kernels = n_groups;
    for (uint32_t i = 0; i < n_groups; i++) {
        Argus__V1__KernelGroup *kg = (Argus__V1__KernelGroup *)(block + off_groups) + i;
        const struct group *g = &s->groups[s->active[i]];

        argus__v1__kernel_group__init(kg);
        kg->name_id = g->name_id;
        kg->stream = g->stream;
        kg->n_clusters = n_clusters[i];
        kg->clusters = (Argus__V1__Cluster **)(block + off_cptrs) + c;
        for (uint32_t k = 0; k < n_clusters[i]; k++, c++) {
            Argus__V1__Cluster *pc = (Argus__V1__Cluster *)(block + off_clusters) + c;
            const struct cluster *sc = &s->clusters[c];

            argus__v1__cluster__init(pc);
            pc->count = sc->count;
            pc->sum_ns = sc->sum;
            pc->p50_ns = sc->p50;
            pc->p99_ns = sc->p99;
            pc->min_ns = sc->min;
            pc->max_ns = sc->max;
            kg->clusters[k] = pc;
        }
        out->kernels[i] = kg;
    }
    return 0;
}

/* The groups with events into s->active, in order, each with its slice of
 * s->grouped (at = its end after the scatter); returns how many, or -ENOMEM. */
static int group_events(struct summarizer *s, size_t *largest)
{
    uint32_t n = 0, off = 0;

    if ((s->order_stale && order_build(s) < 0) ||
        array_reserve((void **)&s->active, &s->active_cap, s->n_groups, sizeof(*s->active)) < 0 ||
        array_reserve((void **)&s->grouped, &s->grouped_cap, s->events, sizeof(*s->grouped)) < 0)
        return -ENOMEM;
    *largest = 0;
    for (uint32_t i = 0; i < s->n_groups; i++) {
        struct group *g = &s->groups[s->order[i]];

        if (!g->n)
            continue;
        s->active[n++] = s->order[i];
        g->at = off;
        off += g->n;
        if (g->n > *largest)
            *largest = g->n;
    }
    for (size_t e = 0; e < s->events; e++)
        s->grouped[s->groups[s->ev_group[e]].at++] = s->ev_dur[e];
    return (int)n;
}

int summarizer_finish(struct summarizer *s, Argus__V1__StepRecord *out)
{
    uint32_t n = 0, *n_clusters = NULL;
    size_t largest = 0, total = 0;
    int err = group_events(s, &largest);

    if (err >= 0) {
        n = (uint32_t)err;
        err = scratch_reserve(s, largest, n);
    }
    n_clusters = malloc((n ? n : 1) * sizeof(*n_clusters));
    if (err < 0 || !n_clusters) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct group *g = &s->groups[s->active[i]];

        n_clusters[i] = group_summarize(s, s->grouped + (g->at - g->n), g->n, total);
        total += n_clusters[i];
    }
    if (n)
        err = output_build(s, n, n_clusters, total, out);
    if (err < 0)
        goto out;
    if (!n) {
        out->kernels = NULL;
        out->n_kernels = 0;
    }
    out->kernel_events = s->events;
    summarizer_reset(s);
out:
    free(n_clusters);
    return err;
}

void summarizer_free_groups(Argus__V1__StepRecord *out)
{
    if (!out)
        return;
    free(out->kernels);
    out->kernels = NULL;
    out->n_kernels = 0;
}
