/* The heatmap grid: see heatmap.h. */
#include "common/heatmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/causes.h"

struct heatmap {
    uint32_t nranks;
    uint64_t first, nsteps;
    uint64_t *ns; /* nranks x nsteps, 0 = no record */
    float *ratio; /* nranks x nsteps after heatmap_finish */
    char **node;  /* per rank, NULL = unknown */
    uint32_t *group;
    uint64_t onset, report_from;
    bool has_onset, has_report_from;
    size_t nsuspects;
    uint32_t suspect_rank[HEATMAP_MAX_SUSPECTS];
    char *suspect_label[HEATMAP_MAX_SUSPECTS];
};

struct heatmap *heatmap_new(uint32_t nranks, uint64_t first_step, uint64_t nsteps)
{
    struct heatmap *h;

    if (!nranks || !nsteps || (uint64_t)nranks * nsteps > HEATMAP_MAX_CELLS)
        return NULL;
    h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->nranks = nranks;
    h->first = first_step;
    h->nsteps = nsteps;
    h->ns = calloc((size_t)nranks * nsteps, sizeof(*h->ns));
    h->node = calloc(nranks, sizeof(*h->node));
    h->group = calloc(nranks, sizeof(*h->group));
    if (!h->ns || !h->node || !h->group) {
        heatmap_free(h);
        return NULL;
    }
    return h;
}

void heatmap_free(struct heatmap *h)
{
    if (!h)
        return;
    for (uint32_t r = 0; h->node && r < h->nranks; r++)
        free(h->node[r]);
    for (size_t i = 0; i < h->nsuspects; i++)
        free(h->suspect_label[i]);
    free(h->node);
    free(h->group);
    free(h->ns);
    free(h->ratio);
    free(h);
}

int heatmap_set_rank(struct heatmap *h, uint32_t rank, const char *node, uint32_t group)
{
    char *copy = NULL;

    if (rank >= h->nranks)
        return -ERANGE;
    /* consecutive ranks of one node share nothing but the text: strdup */
    if (node && *node && !(copy = strdup(node)))
        return -ENOMEM;
    free(h->node[rank]);
    h->node[rank] = copy;
    h->group[rank] = group;
    return 0;
}

void heatmap_set(struct heatmap *h, uint32_t rank, uint64_t step, uint64_t value_ns)
{
    if (rank >= h->nranks || step < h->first || step - h->first >= h->nsteps)
        return;
    h->ns[(size_t)rank * h->nsteps + (step - h->first)] = value_ns;
}

int heatmap_add_suspect(struct heatmap *h, uint32_t rank, const char *label)
{
    if (rank >= h->nranks)
        return -ERANGE;
    if (h->nsuspects == HEATMAP_MAX_SUSPECTS)
        return -ENOSPC;
    h->suspect_label[h->nsuspects] = strdup(label ? label : "");
    if (!h->suspect_label[h->nsuspects])
        return -ENOMEM;
    h->suspect_rank[h->nsuspects++] = rank;
    return 0;
}

void heatmap_set_onset(struct heatmap *h, uint64_t step)
{
    h->onset = step;
    h->has_onset = true;
}

static int heatmap_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int heatmap_cmp_group(const void *a, const void *b, void *ctx)
{
    const uint32_t *group = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    if (group[x] != group[y])
        return group[x] < group[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Ratios of one step: each group's records against their median. order
 * lists the ranks sorted by group; col is scratch for nranks values. */
static void heatmap_step_ratios(struct heatmap *h, uint64_t s, const uint32_t *order, uint64_t *col)
{
    for (uint32_t i = 0; i < h->nranks;) {
        uint32_t j = i, n = 0, g = h->group[order[i]];
        for (; j < h->nranks && h->group[order[j]] == g; j++)
            if (h->ns[(size_t)order[j] * h->nsteps + s])
                col[n++] = h->ns[(size_t)order[j] * h->nsteps + s];
        qsort(col, n, sizeof(*col), heatmap_cmp_u64);
        double med = n ? (n % 2 ? (double)col[n / 2] : (col[n / 2 - 1] + col[n / 2]) / 2.0) : 0;
        for (; i < j; i++) {
            size_t k = (size_t)order[i] * h->nsteps + s;
            h->ratio[k] = h->ns[k] && med > 0 ? (float)(h->ns[k] / med) : 0;
        }
    }
}

/* Without an onset from the caller: the first step from which the first
 * suspect is HEATMAP_ONSET_RATIO slower in 3 of 5 steps, else the first step
 * of its earliest report. */
static void heatmap_find_onset(struct heatmap *h)
{
    const float *row;

    if (h->has_onset || !h->nsuspects)
        return;
    row = h->ratio + (size_t)h->suspect_rank[0] * h->nsteps;
    for (uint64_t s = 0; s < h->nsteps; s++) {
        uint64_t end = s + 5 < h->nsteps ? s + 5 : h->nsteps, hits = 0;
        if (row[s] < HEATMAP_ONSET_RATIO)
            continue;
        for (uint64_t k = s; k < end; k++)
            hits += row[k] >= HEATMAP_ONSET_RATIO;
        if (hits * 2 > end - s) { /* most of the next five */
            heatmap_set_onset(h, h->first + s);
            return;
        }
    }
    if (h->has_report_from)
        heatmap_set_onset(h, h->report_from);
}

int heatmap_finish(struct heatmap *h)
{
    uint32_t *order = malloc(h->nranks * sizeof(*order));
    uint64_t *col = malloc(h->nranks * sizeof(*col));
    int r = -ENOMEM;

    free(h->ratio);
    h->ratio = calloc((size_t)h->nranks * h->nsteps, sizeof(*h->ratio));
    if (order && col && h->ratio) {
        for (uint32_t i = 0; i < h->nranks; i++)
            order[i] = i;
        qsort_r(order, h->nranks, sizeof(*order), heatmap_cmp_group, h->group);
        for (uint64_t s = 0; s < h->nsteps; s++)
            heatmap_step_ratios(h, s, order, col);
        heatmap_find_onset(h);
        r = 0;
    }
    free(order);
    free(col);
    return r;
}

double heatmap_ratio(const struct heatmap *h, uint32_t rank, uint64_t step)
{
    if (!h->ratio || rank >= h->nranks || step < h->first || step - h->first >= h->nsteps)
        return 0;
    return h->ratio[(size_t)rank * h->nsteps + (step - h->first)];
}

double heatmap_max_ratio(const struct heatmap *h, uint32_t first, uint32_t last, uint64_t s0,
                         uint64_t s1)
{
    float worst = 0;

    if (!h->ratio)
        return 0;
    for (uint32_t r = first; r <= last && r < h->nranks; r++) {
        const float *row = h->ratio + (size_t)r * h->nsteps;
        for (uint64_t s = s0; s <= s1 && s < h->nsteps; s++)
            worst = row[s] > worst ? row[s] : worst;
    }
    return worst;
}

static int heatmap_cmp_span(const void *x, const void *y)
{
    const struct heatmap_span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

uint64_t heatmap_own_spans(uint64_t start, uint64_t duration, struct heatmap_span *sp, size_t n)
{
    uint64_t hi = start + duration, inside = 0, end = start;
    size_t k = 0;

    for (size_t i = 0; i < n; i++) { /* clip to the step, drop the empty */
        uint64_t a = sp[i].a < start ? start : sp[i].a, b = sp[i].b > hi ? hi : sp[i].b;
        if (a < b)
            sp[k++] = (struct heatmap_span){a, b};
    }
    qsort(sp, k, sizeof(*sp), heatmap_cmp_span);
    for (size_t i = 0; i < k; i++) { /* the union: overlapping calls count once */
        uint64_t a = sp[i].a > end ? sp[i].a : end;
        if (sp[i].b > a)
            inside += sp[i].b - a;
        end = sp[i].b > end ? sp[i].b : end;
    }
    return duration > inside ? duration - inside : 1;
}

bool heatmap_coll_span(uint64_t gpu_start, uint64_t gpu_end, uint64_t host_arrival,
                       uint64_t host_return, struct heatmap_span *out)
{
    if (gpu_start && gpu_end > gpu_start) {
        *out = (struct heatmap_span){gpu_start, gpu_end};
        return true;
    }
    if (host_arrival && host_return > host_arrival) {
        *out = (struct heatmap_span){host_arrival, host_return};
        return true;
    }
    return false;
}

uint64_t heatmap_own_ns(const Argus__V1__StepRecord *s)
{
    struct heatmap_span stack[64], *sp = stack;
    uint64_t own;
    size_t n = 0;

    if (s->n_collectives > 64 && !(sp = malloc(s->n_collectives * sizeof(*sp))))
        return s->duration_ns;
    for (size_t i = 0; i < s->n_collectives; i++) {
        const Argus__V1__Collective *c = s->collectives[i];
        n += heatmap_coll_span(c->gpu_start_unix_ns, c->gpu_end_unix_ns, c->host_arrival_unix_ns,
                               c->host_return_unix_ns, &sp[n]);
    }
    own = heatmap_own_spans(s->start_unix_ns, s->duration_ns, sp, n);
    if (sp != stack)
        free(sp);
    return own;
}

static bool heatmap_same_node(const struct heatmap *h, uint32_t a, uint32_t b)
{
    const char *x = h->node[a], *y = h->node[b];
    return x && y && strcmp(x, y) == 0;
}

/* Nodes as runs of consecutive ranks: the first rank of each, in *starts
 * (malloc'd, nranks + 1 entries, the last = nranks). Returns the count. */
static uint32_t heatmap_node_runs(const struct heatmap *h, uint32_t **starts)
{
    uint32_t n = 0, *st = malloc(((size_t)h->nranks + 1) * sizeof(*st));

    *starts = st;
    if (!st)
        return 0;
    for (uint32_t r = 0; r < h->nranks; r++)
        if (r == 0 || !heatmap_same_node(h, r - 1, r))
            st[n++] = r;
    st[n] = h->nranks;
    return n;
}

struct heatmap_row *heatmap_rows(const struct heatmap *h, uint32_t max_rows, uint32_t *n)
{
    uint32_t *starts, nodes = heatmap_node_runs(h, &starts), per, rows;
    struct heatmap_row *out = NULL;

    *n = 0;
    if (!starts || max_rows == 0)
        goto out;
    if (h->nranks <= max_rows) {
        out = calloc(h->nranks, sizeof(*out));
        for (uint32_t r = 0, k = 0; out && r < h->nranks; r++) {
            bool start = k < nodes && starts[k] == r;
            k += start;
            out[r] = (struct heatmap_row){r, r, 0, start};
        }
        *n = out ? h->nranks : 0;
        goto out;
    }
    per = (nodes + max_rows - 1) / max_rows;
    rows = (nodes + per - 1) / per;
    out = calloc(rows, sizeof(*out));
    for (uint32_t i = 0; out && i < rows; i++) {
        uint32_t a = i * per, b = a + per < nodes ? a + per : nodes;
        out[i] = (struct heatmap_row){starts[a], starts[b] - 1, b - a, true};
    }
    *n = out ? rows : 0;
out:
    free(starts);
    return out;
}

uint32_t heatmap_nranks(const struct heatmap *h)
{
    return h->nranks;
}

uint64_t heatmap_first_step(const struct heatmap *h)
{
    return h->first;
}

uint64_t heatmap_nsteps(const struct heatmap *h)
{
    return h->nsteps;
}

const char *heatmap_node(const struct heatmap *h, uint32_t rank)
{
    return rank < h->nranks && h->node[rank] ? h->node[rank] : "";
}

bool heatmap_onset(const struct heatmap *h, uint64_t *step)
{
    *step = h->onset;
    return h->has_onset;
}

size_t heatmap_nsuspects(const struct heatmap *h)
{
    return h->nsuspects;
}

uint32_t heatmap_suspect(const struct heatmap *h, size_t i, const char **label)
{
    *label = h->suspect_label[i];
    return h->suspect_rank[i];
}

int heatmap_add_resource(struct heatmap *h, const Argus__V1__Resource *res)
{
    return heatmap_set_rank(h, res->rank, res->node, res->pp);
}

static bool heatmap_is_suspect(const struct heatmap *h, uint32_t rank)
{
    for (size_t i = 0; i < h->nsuspects; i++)
        if (h->suspect_rank[i] == rank)
            return true;
    return false;
}

int heatmap_add_report(struct heatmap *h, const Argus__V1__Report *rep)
{
    char label[96];
    int r = 0;

    for (size_t i = 0; i < rep->n_suspects && r == 0; i++) {
        const Argus__V1__Suspect *s = rep->suspects[i];
        if (!s->pages || s->rank >= h->nranks || heatmap_is_suspect(h, s->rank))
            continue;
        snprintf(label, sizeof(label), "rank %u %s", s->rank, causes_get(s->cause)->name);
        r = heatmap_add_suspect(h, s->rank, label);
        if (r == -ENOSPC)
            return 0; /* enough marked; the report page lists the rest */
        if (r == 0 && (!h->has_report_from || rep->from_step < h->report_from)) {
            h->report_from = rep->from_step;
            h->has_report_from = true;
        }
    }
    return r;
}
