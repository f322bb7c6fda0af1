/* Merging the answers of a collector set: see merge.h. */
#include "tools/argusctl/merge.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/argus.pb-c.h"
#include "tools/argusctl/merge_nodes.h"

/* The order of a kind of item (0: same key) and which of two with the same
 * key is kept (true: a is newer than b; NULL: the first member's). */
struct merge_key {
    int (*cmp)(const void *a, const void *b);
    bool (*newer)(const void *a, const void *b);
};

struct merge_entry {
    void *item;
    size_t member; /* which answer it came from: ties go to the first */
};

static int merge_entry_cmp(const void *x, const void *y, void *ctx)
{
    const struct merge_entry *a = x, *b = y;
    const struct merge_key *k = ctx;
    int c = k->cmp(a->item, b->item);

    if (c)
        return c;
    if (k->newer && k->newer(a->item, b->item))
        return -1;
    if (k->newer && k->newer(b->item, a->item))
        return 1;
    return a->member < b->member ? -1 : a->member > b->member;
}

/* The union of n lists (items[i] of count[i] items) by k: sorted, one item
 * per key. Returns a malloc'd array of *out items (pointers into the lists),
 * or NULL on allocation failure (an empty union gives a 1-slot array). */
static void **merge_union(void **const *items, const size_t *count, size_t n,
                          const struct merge_key *k, size_t *out)
{
    size_t total = 0, m = 0;
    struct merge_entry *e;
    void **u;

    for (size_t i = 0; i < n; i++)
        total += count[i];
    e = calloc(total ? total : 1, sizeof(*e));
    u = calloc(total ? total : 1, sizeof(*u));
    if (!e || !u) {
        free(e);
        free(u);
        return NULL;
    }
    for (size_t i = 0, j = 0; i < n; i++)
        for (size_t x = 0; x < count[i]; x++, j++)
            e[j] = (struct merge_entry){items[i][x], i};
    qsort_r(e, total, sizeof(*e), merge_entry_cmp, (void *)k);
    for (size_t j = 0; j < total; j++)
        if (m == 0 || k->cmp(u[m - 1], e[j].item) != 0)
            u[m++] = e[j].item;
    free(e);
    *out = m;
    return u;
}

/* Drop the items of u above the lowest last item of a truncated list: a
 * member that stopped there may hold more below what another one reached. */
static size_t merge_cut(void **u, size_t m, void **const *items, const size_t *count,
                        const protobuf_c_boolean *truncated, size_t n, const struct merge_key *k)
{
    const void *cut = NULL;

    for (size_t i = 0; i < n; i++)
        if (truncated[i] && count[i] && (!cut || k->cmp(items[i][count[i] - 1], cut) < 0))
            cut = items[i][count[i] - 1];
    while (cut && m && k->cmp(u[m - 1], cut) > 0)
        m--;
    return m;
}

/* A new message with view's content, owned by no input. */
static ProtobufCMessage *merge_copy(const ProtobufCMessage *view)
{
    size_t len = protobuf_c_message_get_packed_size(view);
    uint8_t *buf = malloc(len ? len : 1);
    ProtobufCMessage *m = NULL;

    if (buf) {
        protobuf_c_message_pack(view, buf);
        m = protobuf_c_message_unpack(view->descriptor, NULL, len, buf);
    }
    free(buf);
    return m;
}

static int merge_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static int merge_job_cmp(const void *a, const void *b)
{
    return strcmp(((const Argus__V1__JobInfo *)a)->job, ((const Argus__V1__JobInfo *)b)->job);
}

static bool merge_job_newer(const void *x, const void *y)
{
    const Argus__V1__JobInfo *a = x, *b = y;

    return a->last_seen_unix_ns != b->last_seen_unix_ns
               ? a->last_seen_unix_ns > b->last_seen_unix_ns
               : a->rank_steps > b->rank_steps;
}

static int merge_step_cmp(const void *x, const void *y)
{
    const Argus__V1__StepRecord *a = x, *b = y;

    return a->step != b->step ? merge_u64(a->step, b->step) : merge_u64(a->rank, b->rank);
}

static int merge_name_cmp(const void *x, const void *y)
{
    return merge_u64(((const Argus__V1__NameEntry *)x)->id, ((const Argus__V1__NameEntry *)y)->id);
}

static int merge_rank_cmp(const void *x, const void *y)
{
    return merge_u64(((const Argus__V1__Resource *)x)->rank,
                     ((const Argus__V1__Resource *)y)->rank);
}

static bool merge_rank_newer(const void *x, const void *y)
{
    return ((const Argus__V1__Resource *)x)->restart > ((const Argus__V1__Resource *)y)->restart;
}

static int merge_report_cmp(const void *x, const void *y)
{
    return strcmp(((const Argus__V1__Report *)x)->id, ((const Argus__V1__Report *)y)->id);
}

static bool merge_report_newer(const void *x, const void *y)
{
    return ((const Argus__V1__Report *)x)->created_unix_ns >
           ((const Argus__V1__Report *)y)->created_unix_ns;
}

/* Reports in the order a collector lists them: by created time, then id. */
static int merge_report_time_cmp(const void *x, const void *y)
{
    const Argus__V1__Report *a = *(const Argus__V1__Report *const *)x;
    const Argus__V1__Report *b = *(const Argus__V1__Report *const *)y;

    return a->created_unix_ns != b->created_unix_ns
               ? merge_u64(a->created_unix_ns, b->created_unix_ns)
               : strcmp(a->id, b->id);
}

static int merge_alert_cmp(const void *x, const void *y)
{
    return strcmp(((const Argus__V1__Alert *)x)->id, ((const Argus__V1__Alert *)y)->id);
}

/* When the alert last changed. */
static uint64_t merge_alert_changed(const Argus__V1__Alert *a)
{
    uint64_t t = a->created_unix_ns;

    t = a->firing_unix_ns > t ? a->firing_unix_ns : t;
    return a->resolved_unix_ns > t ? a->resolved_unix_ns : t;
}

static bool merge_alert_newer(const void *x, const void *y)
{
    return merge_alert_changed(x) > merge_alert_changed(y);
}

static int merge_alert_time_cmp(const void *x, const void *y)
{
    const Argus__V1__Alert *a = *(const Argus__V1__Alert *const *)x;
    const Argus__V1__Alert *b = *(const Argus__V1__Alert *const *)y;

    return a->created_unix_ns != b->created_unix_ns
               ? merge_u64(a->created_unix_ns, b->created_unix_ns)
               : strcmp(a->id, b->id);
}

#define MERGE_MAX_ANSWERS 64 /* members of a set at most (COLLECTOR_SET_MAX) */

/* items[i], count[i]: the repeated field of answer i, a message of type T. */
#define MERGE_LISTS(T, field, in, n, items, count)                                                 \
    for (size_t i_ = 0; i_ < (n); i_++) {                                                          \
        (items)[i_] = (void **)((T *)(in)[i_])->field;                                             \
        (count)[i_] = ((T *)(in)[i_])->n_##field;                                                  \
    }

static ProtobufCMessage *merge_jobs(ProtobufCMessage *const *in, size_t n)
{
    static const struct merge_key k = {merge_job_cmp, merge_job_newer};
    Argus__V1__JobsResponse view = ARGUS__V1__JOBS_RESPONSE__INIT;
    void **items[MERGE_MAX_ANSWERS] = {0};
    size_t count[MERGE_MAX_ANSWERS] = {0};
    ProtobufCMessage *m = NULL;

    MERGE_LISTS(Argus__V1__JobsResponse, jobs, in, n, items, count);
    view.jobs = (Argus__V1__JobInfo **)merge_union(items, count, n, &k, &view.n_jobs);
    if (view.jobs)
        m = merge_copy(&view.base);
    free(view.jobs);
    return m;
}

static ProtobufCMessage *merge_steps(ProtobufCMessage *const *in, size_t n)
{
    static const struct merge_key steps = {merge_step_cmp, NULL}, names = {merge_name_cmp, NULL};
    Argus__V1__StepsResponse view = ARGUS__V1__STEPS_RESPONSE__INIT;
    void **items[MERGE_MAX_ANSWERS] = {0};
    size_t count[MERGE_MAX_ANSWERS] = {0};
    protobuf_c_boolean truncated[MERGE_MAX_ANSWERS] = {0};
    ProtobufCMessage *m = NULL;

    MERGE_LISTS(Argus__V1__StepsResponse, steps, in, n, items, count);
    view.steps = (Argus__V1__StepRecord **)merge_union(items, count, n, &steps, &view.n_steps);
    for (size_t i = 0; i < n; i++) {
        truncated[i] = ((Argus__V1__StepsResponse *)in[i])->truncated;
        view.truncated |= truncated[i];
    }
    if (view.steps)
        view.n_steps =
            merge_cut((void **)view.steps, view.n_steps, items, count, truncated, n, &steps);
    MERGE_LISTS(Argus__V1__StepsResponse, names, in, n, items, count);
    view.names = (Argus__V1__NameEntry **)merge_union(items, count, n, &names, &view.n_names);
    if (view.steps && view.names)
        m = merge_copy(&view.base);
    free(view.steps);
    free(view.names);
    return m;
}

static ProtobufCMessage *merge_ranks(ProtobufCMessage *const *in, size_t n)
{
    static const struct merge_key k = {merge_rank_cmp, merge_rank_newer};
    Argus__V1__RanksResponse view = ARGUS__V1__RANKS_RESPONSE__INIT;
    void **items[MERGE_MAX_ANSWERS] = {0};
    size_t count[MERGE_MAX_ANSWERS] = {0};
    ProtobufCMessage *m = NULL;

    MERGE_LISTS(Argus__V1__RanksResponse, ranks, in, n, items, count);
    view.ranks = (Argus__V1__Resource **)merge_union(items, count, n, &k, &view.n_ranks);
    if (view.ranks)
        m = merge_copy(&view.base);
    free(view.ranks);
    return m;
}

static ProtobufCMessage *merge_stragglers(ProtobufCMessage *const *in, size_t n)
{
    static const struct merge_key k = {merge_report_cmp, merge_report_newer};
    Argus__V1__StragglersResponse view = ARGUS__V1__STRAGGLERS_RESPONSE__INIT;
    void **items[MERGE_MAX_ANSWERS] = {0};
    size_t count[MERGE_MAX_ANSWERS] = {0};
    ProtobufCMessage *m = NULL;

    MERGE_LISTS(Argus__V1__StragglersResponse, reports, in, n, items, count);
    view.reports = (Argus__V1__Report **)merge_union(items, count, n, &k, &view.n_reports);
    if (!view.reports)
        return NULL;
    qsort(view.reports, view.n_reports, sizeof(*view.reports), merge_report_time_cmp);
    m = merge_copy(&view.base);
    free(view.reports);
    return m;
}

static ProtobufCMessage *merge_alerts(ProtobufCMessage *const *in, size_t n)
{
    static const struct merge_key k = {merge_alert_cmp, merge_alert_newer};
    Argus__V1__AlertsResponse view = ARGUS__V1__ALERTS_RESPONSE__INIT;
    void **items[MERGE_MAX_ANSWERS] = {0};
    size_t count[MERGE_MAX_ANSWERS] = {0};
    ProtobufCMessage *m = NULL;

    MERGE_LISTS(Argus__V1__AlertsResponse, alerts, in, n, items, count);
    view.alerts = (Argus__V1__Alert **)merge_union(items, count, n, &k, &view.n_alerts);
    if (!view.alerts)
        return NULL;
    qsort(view.alerts, view.n_alerts, sizeof(*view.alerts), merge_alert_time_cmp);
    m = merge_copy(&view.base);
    free(view.alerts);
    return m;
}

/* One heatmap cell of an answer. */
struct merge_cell {
    uint64_t step, value;
    uint32_t rank;
};

static int merge_cell_cmp(const void *x, const void *y)
{
    const struct merge_cell *a = x, *b = y;

    return a->step != b->step ? merge_u64(a->step, b->step) : merge_u64(a->rank, b->rank);
}

/* The cells of answer h as items: *cells and the returned pointer array are
 * malloc'd (NULL on failure). */
static void **merge_heatmap_cells(const Argus__V1__HeatmapResponse *h, struct merge_cell **cells,
                                  size_t *count)
{
    size_t n = h->n_ranks < h->n_steps ? h->n_ranks : h->n_steps;
    void **items;

    n = n < h->n_values_ns ? n : h->n_values_ns;
    *cells = calloc(n ? n : 1, sizeof(**cells));
    items = calloc(n ? n : 1, sizeof(*items));
    if (!*cells || !items) {
        free(*cells);
        free(items);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        (*cells)[i] = (struct merge_cell){h->steps[i], h->values_ns[i], h->ranks[i]};
        items[i] = &(*cells)[i];
    }
    *count = n;
    return items;
}

/* The merged cells u[0..m) as a HeatmapResponse. */
static ProtobufCMessage *merge_heatmap_answer(void **u, size_t m, protobuf_c_boolean truncated)
{
    Argus__V1__HeatmapResponse view = ARGUS__V1__HEATMAP_RESPONSE__INIT;
    ProtobufCMessage *r = NULL;

    view.ranks = calloc(m ? m : 1, sizeof(*view.ranks));
    view.steps = calloc(m ? m : 1, sizeof(*view.steps));
    view.values_ns = calloc(m ? m : 1, sizeof(*view.values_ns));
    if (view.ranks && view.steps && view.values_ns) {
        for (size_t i = 0; i < m; i++) {
            const struct merge_cell *c = u[i];
            view.ranks[i] = c->rank, view.steps[i] = c->step, view.values_ns[i] = c->value;
        }
        view.n_ranks = view.n_steps = view.n_values_ns = m;
        view.truncated = truncated;
        r = merge_copy(&view.base);
    }
    free(view.ranks);
    free(view.steps);
    free(view.values_ns);
    return r;
}

static ProtobufCMessage *merge_heatmap(ProtobufCMessage *const *in, size_t n)
{
    static const struct merge_key k = {merge_cell_cmp, NULL};
    struct merge_cell *cells[MERGE_MAX_ANSWERS] = {0};
    void **items[MERGE_MAX_ANSWERS] = {0};
    size_t count[MERGE_MAX_ANSWERS] = {0}, m = 0;
    protobuf_c_boolean truncated[MERGE_MAX_ANSWERS] = {0}, any = 0;
    ProtobufCMessage *r = NULL;
    void **u = NULL;
    bool ok = true;

    for (size_t i = 0; i < n; i++) {
        const Argus__V1__HeatmapResponse *h = (const Argus__V1__HeatmapResponse *)in[i];
        items[i] = merge_heatmap_cells(h, &cells[i], &count[i]);
        ok = ok && items[i];
        truncated[i] = h->truncated;
        any |= h->truncated;
    }
    if (ok)
        u = merge_union(items, count, n, &k, &m);
    if (u)
        r = merge_heatmap_answer(u, merge_cut(u, m, items, count, truncated, n, &k), any);
    for (size_t i = 0; i < n; i++) {
        free(cells[i]);
        free(items[i]);
    }
    free(u);
    return r;
}

/* The one answer better says is best, copied. */
static ProtobufCMessage *merge_pick(ProtobufCMessage *const *in, size_t n,
                                    bool (*better)(const ProtobufCMessage *a,
                                                   const ProtobufCMessage *b))
{
    size_t best = 0;

    for (size_t i = 1; i < n; i++)
        if (better(in[i], in[best]))
            best = i;
    return merge_copy(in[best]);
}

static bool merge_report_better(const ProtobufCMessage *x, const ProtobufCMessage *y)
{
    const Argus__V1__ReportResponse *a = (const void *)x, *b = (const void *)y;

    return a->report && (!b->report || a->report->created_unix_ns > b->report->created_unix_ns);
}

static bool merge_trace_better(const ProtobufCMessage *x, const ProtobufCMessage *y)
{
    return ((const Argus__V1__TraceResponse *)x)->windows >
           ((const Argus__V1__TraceResponse *)y)->windows;
}

static ProtobufCMessage *merge_report(ProtobufCMessage *const *in, size_t n)
{
    return merge_pick(in, n, merge_report_better);
}

static ProtobufCMessage *merge_trace(ProtobufCMessage *const *in, size_t n)
{
    return merge_pick(in, n, merge_trace_better);
}

/* One row per answer type: how its answers are merged. */
static const struct merge_rule {
    const ProtobufCMessageDescriptor *type;
    ProtobufCMessage *(*merge)(ProtobufCMessage *const *in, size_t n);
} merge_rules[] = {
    {&argus__v1__jobs_response__descriptor, merge_jobs},
    {&argus__v1__steps_response__descriptor, merge_steps},
    {&argus__v1__ranks_response__descriptor, merge_ranks},
    {&argus__v1__stragglers_response__descriptor, merge_stragglers},
    {&argus__v1__report_response__descriptor, merge_report},
    {&argus__v1__alerts_response__descriptor, merge_alerts},
    {&argus__v1__heatmap_response__descriptor, merge_heatmap},
    {&argus__v1__trace_response__descriptor, merge_trace},
    {&argus__v1__nodes_response__descriptor, merge_nodes},
};

static const struct merge_rule *merge_find(const ProtobufCMessageDescriptor *type)
{
    for (size_t i = 0; i < sizeof(merge_rules) / sizeof(merge_rules[0]); i++)
        if (merge_rules[i].type == type)
            return &merge_rules[i];
    return NULL;
}

bool merge_supported(const ProtobufCMessageDescriptor *type)
{
    return merge_find(type) != NULL;
}

ProtobufCMessage *merge_answers(const ProtobufCMessageDescriptor *type, ProtobufCMessage *const *in,
                                size_t n)
{
    const struct merge_rule *rule = merge_find(type);

    if (!rule || n == 0 || n > MERGE_MAX_ANSWERS)
        return NULL;
    return rule->merge(in, n);
}
