/* Fleet memory: see fleet.h. */
#include "collector/fleet/fleet.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/store/store.h"
#include "common/causes.h"
#include "common/clock.h"
#include "common/fleet_rank.h"
#include "common/http.h"

/* Rows gathered before duplicates are folded: the scan's memory bound. */
#define FLEET_GATHER_ROWS (4 * FLEET_MAX_ROWS)

struct fleet_snapshot {
    char **nodes;         /* the FLEET_METRIC_NODES highest, ranked */
    uint32_t *jobs;       /* their scores */
    size_t n;             /* entries in nodes and jobs */
    size_t culprit_nodes; /* every node with a score */
    size_t suspect_nodes; /* those at or above fleet.suspect_jobs */
    uint64_t refresh_ns;  /* how long the last renewal took */
    uint64_t refresh_errors;
};

struct fleet {
    struct store *store;
    struct fleet_options o;
    uint64_t next_ns; /* fleet_tick's next renewal (collector clock); 0: now */
    pthread_mutex_t lock;
    struct fleet_snapshot snap;
};

/* The rows a scan gathers. */
struct fleet_gather {
    Argus__V1__NodeCulprit **rows;
    size_t n, cap;
    bool truncated;
};

static void fleet_row_free(Argus__V1__NodeCulprit *r)
{
    if (!r)
        return;
    free(r->node);
    free(r->job);
    free(r->report_id);
    free(r);
}

/* A row of suspect s of report rep; NULL on allocation failure. */
static Argus__V1__NodeCulprit *fleet_row_new(const Argus__V1__Report *rep,
                                             const Argus__V1__Suspect *s)
{
    Argus__V1__NodeCulprit *r = malloc(sizeof(*r));

    if (!r)
        return NULL;
    argus__v1__node_culprit__init(r);
    r->node = strdup(s->node);
    r->job = strdup(rep->job);
    r->report_id = strdup(rep->id);
    r->gpu = s->gpu;
    r->cause = s->cause;
    r->created_unix_ns = rep->created_unix_ns;
    if (!r->node || !r->job || !r->report_id) {
        fleet_row_free(r);
        return NULL;
    }
    return r;
}

/* By (node, gpu, job), the newest report first. */
static int fleet_row_cmp(const void *a, const void *b)
{
    const Argus__V1__NodeCulprit *x = *(Argus__V1__NodeCulprit *const *)a;
    const Argus__V1__NodeCulprit *y = *(Argus__V1__NodeCulprit *const *)b;
    int c = strcmp(x->node, y->node);

    if (!c)
        c = (x->gpu > y->gpu) - (x->gpu < y->gpu);
    if (!c)
        c = strcmp(x->job, y->job);
    if (!c)
        c = (x->created_unix_ns < y->created_unix_ns) - (x->created_unix_ns > y->created_unix_ns);
    if (!c)
        c = strcmp(y->report_id, x->report_id);
    return c;
}

/* Sort g's rows and keep the first (newest) of each (node, gpu, job). */
static void fleet_fold(struct fleet_gather *g)
{
    size_t m = 0;

    if (g->n == 0)
        return;
    qsort(g->rows, g->n, sizeof(*g->rows), fleet_row_cmp);
    for (size_t i = 0; i < g->n; i++) {
        const Argus__V1__NodeCulprit *k = m ? g->rows[m - 1] : NULL;
        if (k && strcmp(k->node, g->rows[i]->node) == 0 && k->gpu == g->rows[i]->gpu &&
            strcmp(k->job, g->rows[i]->job) == 0)
            fleet_row_free(g->rows[i]);
        else
            g->rows[m++] = g->rows[i];
    }
    g->n = m;
}

/* Room for one more row: folds the duplicates when the gather bound is
 * reached. 0, 1 when the distinct rows reached FLEET_MAX_ROWS, -ENOMEM. */
static int fleet_room(struct fleet_gather *g)
{
    if (g->n == FLEET_GATHER_ROWS) {
        fleet_fold(g);
        if (g->n >= FLEET_MAX_ROWS) {
            g->truncated = true;
            return 1;
        }
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 256;
        Argus__V1__NodeCulprit **rows = realloc(g->rows, cap * sizeof(*rows));
        if (!rows)
            return -ENOMEM;
        g->rows = rows;
        g->cap = cap;
    }
    return 0;
}

/* A suspect that counts: it pages, names a node, of a fleet cause. */
static bool fleet_counts(const Argus__V1__Suspect *s)
{
    return s->pages && s->node && *s->node && causes_fleet(s->cause);
}

/* store_scan_fn: the rows of one report. */
static int fleet_gather_report(void *ctx, const void *value, size_t len)
{
    struct fleet_gather *g = ctx;
    Argus__V1__Report *rep = argus__v1__report__unpack(NULL, len, value);
    int r = 0;

    if (!rep)
        return 0; /* a report we cannot read is skipped, as the Stragglers query does */
    for (size_t i = 0; r == 0 && i < rep->n_suspects; i++) {
        if (!fleet_counts(rep->suspects[i]) || (r = fleet_room(g)) != 0)
            continue;
        g->rows[g->n] = fleet_row_new(rep, rep->suspects[i]);
        r = g->rows[g->n] ? 0 : -ENOMEM;
        g->n += r == 0;
    }
    argus__v1__report__free_unpacked(rep, NULL);
    return r;
}

void fleet_rows_free(Argus__V1__NodesResponse *r)
{
    for (size_t i = 0; i < r->n_culprits; i++)
        fleet_row_free(r->culprits[i]);
    free(r->culprits);
    r->culprits = NULL;
    r->n_culprits = 0;
}

int fleet_collect(struct store *store, uint64_t since_ns, Argus__V1__NodesResponse *out)
{
    struct fleet_gather g = {0};
    int r = store_scan_reports_since(store, since_ns, fleet_gather_report, &g);

    fleet_fold(&g);
    if (g.n > FLEET_MAX_ROWS) { /* the last fold can leave a few over */
        for (size_t i = FLEET_MAX_ROWS; i < g.n; i++)
            fleet_row_free(g.rows[i]);
        g.n = FLEET_MAX_ROWS;
        g.truncated = true;
    }
    out->culprits = g.rows;
    out->n_culprits = g.n;
    out->truncated = g.truncated;
    if (r < 0) {
        fleet_rows_free(out);
        return r;
    }
    return (int)g.n;
}

int fleet_answer(struct fleet *f, uint64_t since_ns, uint64_t now_ns, Argus__V1__NodesResponse *out)
{
    if (!since_ns)
        since_ns = now_ns > f->o.window_ns ? now_ns - f->o.window_ns : 1;
    out->since_unix_ns = since_ns;
    out->suspect_jobs = f->o.suspect_jobs;
    return fleet_collect(f->store, since_ns, out);
}

struct fleet *fleet_new(struct store *store, const struct fleet_options *o)
{
    struct fleet *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->store = store;
    f->o = *o;
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

static void fleet_snapshot_clear(struct fleet_snapshot *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->nodes[i]);
    free(s->nodes);
    free(s->jobs);
    s->nodes = NULL;
    s->jobs = NULL;
    s->n = 0;
}

void fleet_free(struct fleet *f)
{
    if (!f)
        return;
    fleet_snapshot_clear(&f->snap);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* The snapshot of rows (ranked), into s (empty); 0 or -ENOMEM (what was
 * made is in s for fleet_snapshot_clear). */
static int fleet_snapshot_make(struct fleet *f, Argus__V1__NodesResponse *rows,
                               struct fleet_snapshot *s)
{
    struct fleet_rank_node *nodes;
    int count = fleet_rank(rows->culprits, rows->n_culprits, &nodes), r;
    size_t n;

    if (count < 0)
        return count;
    s->culprit_nodes = (size_t)count;
    for (int i = 0; i < count; i++)
        s->suspect_nodes += nodes[i].jobs >= f->o.suspect_jobs;
    n = s->culprit_nodes < FLEET_METRIC_NODES ? s->culprit_nodes : FLEET_METRIC_NODES;
    s->nodes = calloc(n + 1, sizeof(*s->nodes));
    s->jobs = calloc(n + 1, sizeof(*s->jobs));
    r = s->nodes && s->jobs ? 0 : -ENOMEM;
    for (size_t i = 0; r == 0 && i < n; i++) {
        s->nodes[i] = strdup(nodes[i].node);
        s->jobs[i] = nodes[i].jobs;
        r = s->nodes[i] ? 0 : -ENOMEM;
        s->n += r == 0;
    }
    free(nodes);
    return r;
}

int fleet_tick(struct fleet *f, uint64_t now_ns)
{
    Argus__V1__NodesResponse rows = ARGUS__V1__NODES_RESPONSE__INIT;
    struct fleet_snapshot fresh = {0};
    uint64_t t0 = clock_mono_ns();
    int r;

    if (now_ns < f->next_ns)
        return 0;
    f->next_ns = now_ns + f->o.refresh_ns;
    r = fleet_answer(f, 0, now_ns, &rows);
    if (r >= 0)
        r = fleet_snapshot_make(f, &rows, &fresh);
    fleet_rows_free(&rows);
    pthread_mutex_lock(&f->lock);
    if (r < 0) {
        f->snap.refresh_errors++;
    } else {
        fresh.refresh_errors = f->snap.refresh_errors;
        fresh.refresh_ns = clock_mono_ns() - t0;
        fleet_snapshot_clear(&f->snap);
        f->snap = fresh;
        fresh = (struct fleet_snapshot){0};
    }
    pthread_mutex_unlock(&f->lock);
    fleet_snapshot_clear(&fresh);
    return r < 0 ? r : 1;
}

void fleet_write_metrics(struct fleet *f, struct http_buf *b)
{
    char e[300], labels[320];

    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    http_buf_printf(b,
                    "# HELP argus_node_culprit_jobs distinct jobs in fleet.window whose "
                    "report named the node as a hardware-class culprit (the %u highest)\n"
                    "# TYPE argus_node_culprit_jobs gauge\n",
                    FLEET_METRIC_NODES);
    for (size_t i = 0; i < f->snap.n; i++) {
        snprintf(labels, sizeof(labels), "node=\"%s\"",
                 http_label_escape(e, sizeof(e), f->snap.nodes[i]));
        http_buf_sample(b, "argus_node_culprit_jobs", labels, f->snap.jobs[i]);
    }
    http_buf_metric(b, "argus_fleet_culprit_nodes", "gauge",
                    "nodes that were a hardware-class culprit of a job in fleet.window", "",
                    f->snap.culprit_nodes);
    http_buf_metric(b, "argus_fleet_suspect_nodes", "gauge",
                    "nodes with at least fleet.suspect_jobs culprit jobs in fleet.window", "",
                    f->snap.suspect_nodes);
    http_buf_metric(b, "argus_fleet_refresh_seconds", "gauge",
                    "how long the last renewal of the fleet snapshot took", "",
                    f->snap.refresh_ns / 1e9);
    http_buf_metric(b, "argus_fleet_refresh_errors_total", "counter",
                    "renewals of the fleet snapshot that failed (the old one kept)", "",
                    f->snap.refresh_errors);
    pthread_mutex_unlock(&f->lock);
}
