/* The per-step kernel summarizer: the group table, the events of the step,
 * and the output allocation; the clustering of each group is kde.c. See
 * summarize.h. */
#include "agent/steps/summarize.h"

#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agent/steps/kde.h"
#include "common/array.h"
#include "common/work_id.h"

#define SUMMARIZE_IDLE_STEPS 16 /* a group without events this many steps is forgotten */
#define SUMMARIZE_MIN_EVENTS_CAP 1024u

/* Events are kept in arrival order in two flat arrays and only grouped at
 * finish, by one counting pass into a contiguous buffer: the step closes long
 * after its events arrived, and one cold sequential read costs far less than
 * visiting a buffer of its own per group. */
struct group {
    uint64_t name_id;
    uint32_t stream;
    uint32_t n;      /* events this step */
    uint32_t at;     /* finish: scatter cursor into the grouped buffer */
    uint32_t idle;   /* steps in a row without events */
    uint32_t shaped; /* events this step with a launch shape */
    uint64_t work;   /* sum of their work_id_mix (common/work_id.h) */
};

/* Sort key of a group: output is ordered by (name_id, stream). */
struct group_key {
    uint64_t name_id;
    uint32_t stream;
    uint32_t index;
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
    struct kde *kde;              /* clustering, with its own scratch */
    struct kde_cluster *clusters; /* every group's, group after group */
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
    s->kde = kde_new(&s->o);
    if (!s->table || !s->kde) {
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
    kde_free(s->kde);
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
    return summarizer_add_shape(s, name_id, stream, duration_ns, 0);
}

int summarizer_add_shape(struct summarizer *s, uint64_t name_id, uint32_t stream,
                         uint64_t duration_ns, uint32_t shape)
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
    if (shape) {
        g->shaped++;
        g->work += work_id_mix(shape);
    }
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
        g->shaped = 0;
        g->work = 0;
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

static int group_cmp(const void *pa, const void *pb)
{
    const struct group_key *a = pa, *b = pb;

    if (a->name_id != b->name_id)
        return a->name_id < b->name_id ? -1 : 1;
    return a->stream < b->stream ? -1 : a->stream > b->stream;
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

    if (kde_reserve(s->kde, largest) < 0)
        return -ENOMEM;
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
        kg->work_id = work_id_of_sum(g->work, g->shaped);
        kg->n_clusters = n_clusters[i];
        kg->clusters = (Argus__V1__Cluster **)(block + off_cptrs) + c;
        for (uint32_t k = 0; k < n_clusters[i]; k++, c++) {
            Argus__V1__Cluster *pc = (Argus__V1__Cluster *)(block + off_clusters) + c;
            const struct kde_cluster *sc = &s->clusters[c];

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

        n_clusters[i] =
            kde_summarize(s->kde, s->grouped + (g->at - g->n), g->n, s->clusters + total);
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
