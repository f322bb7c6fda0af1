/* argusctl compare: see compare.h. */
#include "tools/argusctl/compare.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "tools/argusctl/channel.h"
#include "tools/argusctl/compare_dist.h"
#include "tools/argusctl/target.h"
#include "proto/argus.pb-c.h"

#define COMPARE_PAGE 100000u /* records per Steps call */
#define COMPARE_MAX_ROWS (1u << 20)

enum { CMP_OK = 0, CMP_NOT_FOUND = 1, CMP_USAGE = 2, CMP_UNREACHABLE = 3, CMP_ERROR = 4 };
enum compare_kind { KIND_STEP = 0, KIND_PHASE = 1, KIND_KERNEL = 2 };
static const char *const kind_names[] = {"step", "phase", "kernel"};

struct compare_config {
    char *collector, *collectors, *collectors_dns;
    bool plaintext;
    char *tls_ca, *tls_cert, *tls_key;
    char *job;
    char *vs_job;
    char *steps;
    char *vs_steps;
    bool json;
    uint64_t top;
    uint64_t timeout;
};

#define CMP_OPT(key, type, field, def, lo, hi, help)                                               \
    CONFIG_OPTION(struct compare_config, key, type, field, def, lo, hi, help, NULL, NULL, false)

static const struct config_option compare_options[] = {
    CTL_CONNECT_OPTIONS(struct compare_config),
    CMP_OPT("job", CONFIG_STRING, job, "", 0, 0, "job of side A (a second --job is --vs-job)"),
    CMP_OPT("vs-job", CONFIG_STRING, vs_job, "", 0, 0, "job of side B (empty: the same job)"),
    CMP_OPT("steps", CONFIG_STRING, steps, "", 0, 0, "steps of side A, X-Y (empty: all)"),
    CMP_OPT("vs-steps", CONFIG_STRING, vs_steps, "", 0, 0, "steps of side B, Z-W (empty: all)"),
    CMP_OPT("json", CONFIG_BOOL, json, "false", 0, 0, "print JSON instead of tables"),
    CMP_OPT("top", CONFIG_UINT, top, "10", 1, 1e6, "top changes shown"),
    CMP_OPT("timeout", CONFIG_DURATION, timeout, "30s", 0.001, 3600, "how long to wait"),
};

static const struct config_table compare_table = {
    .program = "argusctl compare",
    .summary = "compare two jobs, or two step ranges of one job",
    .usage = "Usage: argusctl compare --job A --job B | --job A --steps X-Y --vs-steps Z-W\n"
             "Step and phase quantiles are exact; kernels reach the collector as the\n"
             "agent's cluster summaries, so kernel p50, p90 and W1 are estimates: --json\n"
             "gives their bounds (p50_lo_ns..p50_hi_ns, p90_lo_ns..p90_hi_ns, w1_err_ns).\n"
             "The table prints each name in full, in its last column.\n",
    .options = compare_options,
    .count = sizeof(compare_options) / sizeof(compare_options[0]),
    .positional = false,
};

/* One row on one side: its distribution (compare_dist.h), its count and
 * total of ns over the side's records. */
struct side {
    struct compare_dist d;
    double total;
    uint64_t count;
};

struct row {
    uint64_t key; /* name id (0 for the step row) */
    enum compare_kind kind;
    const char *name;
    struct side side[2];
    struct compare_quantile p50[2], p90[2];
    double mean[2], w1, w1_err, impact;
};

struct compare {
    struct compare_config cfg;
    struct ctl_target *target; /* one collector or a set (target.h) */
    struct row *rows;
    size_t n_rows, cap_rows;
    uint32_t *slots; /* row index + 1 */
    size_t mask;
    char **names; /* id -> name pairs */
    uint64_t *name_ids;
    size_t n_names, cap_names;
    uint64_t records[2];
    uint64_t traced[2]; /* records whose kernels were traced (sampled) */
    uint64_t from[2], to[2];
    const char *job[2];
};

static uint64_t compare_hash(enum compare_kind kind, uint64_t key)
{
    return (key ^ ((uint64_t)kind * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
}

static int compare_rehash(struct compare *c, size_t slots)
{
    uint32_t *t = calloc(slots, sizeof(*t));

    if (!t)
        return -ENOMEM;
    free(c->slots);
    c->slots = t;
    c->mask = slots - 1;
    for (size_t i = 0; i < c->n_rows; i++) {
        size_t h = compare_hash(c->rows[i].kind, c->rows[i].key) & c->mask;
        while (t[h])
            h = (h + 1) & c->mask;
        t[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* The row of (kind, key), created when new; NULL on -ENOMEM or too many. */
static struct row *compare_row(struct compare *c, enum compare_kind kind, uint64_t key)
{
    size_t h;

    if (!c->slots && compare_rehash(c, 1024) < 0)
        return NULL;
    for (h = compare_hash(kind, key) & c->mask; c->slots[h]; h = (h + 1) & c->mask) {
        struct row *r = &c->rows[c->slots[h] - 1];
        if (r->kind == kind && r->key == key)
            return r;
    }
    if (c->n_rows >= COMPARE_MAX_ROWS)
        return NULL;
    if (c->n_rows == c->cap_rows) {
        size_t cap = c->cap_rows ? c->cap_rows * 2 : 256;
        struct row *tmp = realloc(c->rows, cap * sizeof(*tmp));
        if (!tmp)
            return NULL;
        c->rows = tmp;
        c->cap_rows = cap;
    }
    c->rows[c->n_rows] = (struct row){.key = key, .kind = kind};
    c->slots[h] = (uint32_t)++c->n_rows;
    if (c->n_rows * 2 > c->mask && compare_rehash(c, (c->mask + 1) * 2) < 0)
        return NULL;
    return &c->rows[c->n_rows - 1];
}

/* Remember a name of the Steps reply. */
static void compare_names(struct compare *c, const Argus__V1__StepsResponse *resp)
{
    for (size_t i = 0; i < resp->n_names; i++) {
        size_t k;
        for (k = 0; k < c->n_names && c->name_ids[k] != resp->names[i]->id; k++)
            ;
        if (k < c->n_names || c->n_names == COMPARE_MAX_ROWS)
            continue;
        if (c->n_names == c->cap_names) {
            size_t cap = c->cap_names ? c->cap_names * 2 : 256;
            char **n = realloc(c->names, cap * sizeof(*n));
            if (n)
                c->names = n;
            uint64_t *ids = n ? realloc(c->name_ids, cap * sizeof(*ids)) : NULL;
            if (!n || !ids)
                return;
            c->name_ids = ids;
            c->cap_names = cap;
        }
        c->names[c->n_names] = strdup(resp->names[i]->name);
        c->name_ids[c->n_names] = resp->names[i]->id;
        if (c->names[c->n_names])
            c->n_names++;
    }
}

/* One kernel group of a record into its row on side s. */
static int compare_kernel(struct compare *c, int s, const Argus__V1__KernelGroup *kg)
{
    struct row *r = compare_row(c, KIND_KERNEL, kg->name_id);
    double before;

    if (!r)
        return -ENOMEM;
    before = r->side[s].d.sum;
    if (compare_dist_add_group(&r->side[s].d, kg) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < kg->n_clusters; k++)
        r->side[s].count += kg->clusters[k]->count;
    r->side[s].total += r->side[s].d.sum - before;
    return 0;
}

/* One step or phase duration into the row (kind, key) of side s. */
static int compare_sample(struct compare *c, int s, enum compare_kind kind, uint64_t key,
                          uint64_t ns)
{
    struct row *r = compare_row(c, kind, key);

    if (!r || compare_dist_add_sample(&r->side[s].d, (double)ns) < 0)
        return -ENOMEM;
    r->side[s].count++;
    r->side[s].total += (double)ns;
    return 0;
}

/* One record into the rows of side s. A record whose kernels were not
 * traced (the agent's duty cycle) counts for steps and phases only. */
static int compare_record(struct compare *c, int s, const Argus__V1__StepRecord *rec)
{
    if (compare_sample(c, s, KIND_STEP, 0, rec->duration_ns) < 0)
        return -ENOMEM;
    for (size_t p = 0; p < rec->n_phases; p++)
        if (compare_sample(c, s, KIND_PHASE, rec->phases[p]->name_id, rec->phases[p]->duration_ns) <
            0)
            return -ENOMEM;
    for (size_t k = 0; k < rec->n_kernels; k++)
        if (compare_kernel(c, s, rec->kernels[k]) < 0)
            return -ENOMEM;
    c->records[s]++;
    c->traced[s] += rec->sampled || rec->n_kernels;
    return 0;
}

/* Call Steps (every member of a set, merged); an exit code. */
static int compare_call(struct compare *c, Argus__V1__StepsRequest *req,
                        Argus__V1__StepsResponse **resp)
{
    return ctl_target_call(c->target, RPC_QUERY_STEPS, &req->base,
                           &argus__v1__steps_response__descriptor, c->cfg.timeout / NSEC_PER_MSEC,
                           false, (ProtobufCMessage **)resp);
}

/* Every record of side s, a page at a time. */
static int compare_fetch(struct compare *c, int s)
{
    uint64_t lo = c->from[s];

    for (;;) {
        Argus__V1__StepsRequest req = ARGUS__V1__STEPS_REQUEST__INIT;
        Argus__V1__StepsResponse *resp;
        uint64_t last;
        int r;

        req.job = (char *)c->job[s];
        req.rank = -1;
        req.from_step = lo;
        req.to_step = c->to[s];
        req.limit = COMPARE_PAGE;
        if ((r = compare_call(c, &req, &resp)))
            return r;
        compare_names(c, resp);
        last = resp->n_steps ? resp->steps[resp->n_steps - 1]->step : lo;
        bool more = resp->truncated && last > lo;
        for (size_t i = 0; i < resp->n_steps && r == 0; i++)
            if (!more || resp->steps[i]->step < last)
                r = compare_record(c, s, resp->steps[i]);
        argus__v1__steps_response__free_unpacked(resp, NULL);
        if (r)
            return CMP_ERROR;
        if (!more)
            return CMP_OK;
        lo = last;
    }
}

/* Time of row r per record of side s: kernels per traced record. */
static double compare_per_record(const struct compare *c, const struct row *r, int s)
{
    uint64_t n = r->kind == KIND_KERNEL ? c->traced[s] : c->records[s];

    return n ? r->side[s].total / (double)n : 0;
}

/* The statistics of every row. */
static int compare_stats(struct compare *c)
{
    for (size_t i = 0; i < c->n_rows; i++) {
        struct row *r = &c->rows[i];

        for (int k = 0; k < 2; k++) {
            static const double p[] = {0.5, 0.9};
            struct compare_quantile q[2];
            if (compare_dist_quantiles(&r->side[k].d, p, 2, q) == -ENOMEM)
                return -ENOMEM;
            r->p50[k] = q[0];
            r->p90[k] = q[1];
            r->mean[k] = r->side[k].count ? r->side[k].total / (double)r->side[k].count : 0;
        }
        int e = compare_dist_w1(&r->side[0].d, &r->side[1].d, &r->w1, &r->w1_err);
        if (e == -ENOMEM)
            return -ENOMEM;
        if (e < 0)
            r->w1 = r->w1_err = NAN;
        r->impact = compare_per_record(c, r, 1) - compare_per_record(c, r, 0);
        for (size_t n = 0; n < c->n_names; n++)
            if (c->name_ids[n] == r->key)
                r->name = c->names[n];
        if (r->kind == KIND_STEP)
            r->name = "step";
    }
    return 0;
}

static int impact_cmp(const void *a, const void *b)
{
    const struct row *const *x = a, *const *y = b;
    double dx = fabs((*x)->impact), dy = fabs((*y)->impact);

    return dx > dy ? -1 : dx < dy;
}

static const char *row_name(const struct row *r, char *buf, size_t len)
{
    if (r->name)
        return r->name;
    snprintf(buf, len, "%016" PRIx64, r->key);
    return buf;
}

/* A row of the table: the numbers in fixed columns, the full name last
 * (C++ kernel names run to hundreds of characters: the terminal wraps it
 * and the columns of the next row stay aligned). */
static void print_row(const struct row *r)
{
    char id[24];

    printf("%-6s %7" PRIu64 " %9.3f %9.3f %9.3f | %7" PRIu64
           " %9.3f %9.3f %9.3f | %9.3f %+10.3f  %s\n",
           kind_names[r->kind], r->side[0].count, r->p50[0].v / 1e6, r->p90[0].v / 1e6,
           r->mean[0] / 1e6, r->side[1].count, r->p50[1].v / 1e6, r->p90[1].v / 1e6,
           r->mean[1] / 1e6, isnan(r->w1) ? 0 : r->w1 / 1e6, r->impact / 1e6,
           row_name(r, id, sizeof(id)));
}

static void compare_print(struct compare *c, struct row **by_impact)
{
    for (int s = 0; s < 2; s++) {
        printf("%c: job %s steps ", s ? 'B' : 'A', c->job[s]);
        if (c->to[s])
            printf("%" PRIu64 "-%" PRIu64, c->from[s], c->to[s]);
        else
            printf("all");
        printf(" (%" PRIu64 " records", c->records[s]);
        if (c->traced[s] != c->records[s])
            printf(", kernels traced in %" PRIu64, c->traced[s]);
        printf(")\n");
    }
    printf("%-6s %7s %9s %9s %9s | %7s %9s %9s %9s | %9s %10s  %s\n", "KIND", "A.COUNT", "A.P50ms",
           "A.P90ms", "A.MEANms", "B.COUNT", "B.P50ms", "B.P90ms", "B.MEANms", "W1ms", "IMPACTms",
           "NAME");
    bool kernels = false;
    for (int kind = KIND_STEP; kind <= KIND_KERNEL; kind++)
        for (size_t i = 0; i < c->n_rows; i++)
            if (by_impact[i]->kind == (enum compare_kind)kind) {
                print_row(by_impact[i]);
                kernels |= kind == KIND_KERNEL;
            }
    if (kernels)
        printf("kernel p50, p90 and W1 are estimated from the agent's cluster summaries "
               "(--json: their bounds)\n");
    printf("top changes (impact = change of time per step record):\n");
    for (size_t i = 0, shown = 0; i < c->n_rows && shown < c->cfg.top; i++) {
        const struct row *r = by_impact[i];
        char id[24];
        if (r->kind == KIND_STEP)
            continue;
        printf("%3zu. %-6s %s: mean %.3f -> %.3f ms (%+.0f%%), %+.3f ms per step, W1 %.3f ms\n",
               ++shown, kind_names[r->kind], row_name(r, id, sizeof(id)), r->mean[0] / 1e6,
               r->mean[1] / 1e6, r->mean[0] > 0 ? (r->mean[1] / r->mean[0] - 1) * 100 : 0,
               r->impact / 1e6, isnan(r->w1) ? 0 : r->w1 / 1e6);
    }
}

/* A number, or null when it is not finite (an unbounded bound). */
static json_object *json_number(double v)
{
    return isfinite(v) ? json_object_new_double(v) : NULL;
}

static void quantile_json(json_object *d, const char *key, const struct compare_quantile *q)
{
    char k[32];

    json_object_object_add(d, key, json_object_new_double(q->v));
    snprintf(k, sizeof(k), "%.3s_lo_ns", key);
    json_object_object_add(d, k, json_number(q->lo));
    snprintf(k, sizeof(k), "%.3s_hi_ns", key);
    json_object_object_add(d, k, json_number(q->hi));
}

static json_object *row_json(const struct row *r)
{
    json_object *o = json_object_new_object();
    char id[24];

    json_object_object_add(o, "kind", json_object_new_string(kind_names[r->kind]));
    json_object_object_add(o, "name", json_object_new_string(row_name(r, id, sizeof(id))));
    for (int s = 0; s < 2; s++) {
        json_object *d = json_object_new_object();
        json_object_object_add(d, "count", json_object_new_uint64(r->side[s].count));
        quantile_json(d, "p50_ns", &r->p50[s]);
        quantile_json(d, "p90_ns", &r->p90[s]);
        json_object_object_add(d, "mean_ns", json_object_new_double(r->mean[s]));
        json_object_object_add(o, s ? "b" : "a", d);
    }
    json_object_object_add(o, "w1_ns", isnan(r->w1) ? NULL : json_object_new_double(r->w1));
    json_object_object_add(o, "w1_err_ns", json_number(r->w1_err));
    json_object_object_add(o, "impact_ns_per_step", json_object_new_double(r->impact));
    return o;
}

static void compare_print_json(struct compare *c, struct row **by_impact)
{
    json_object *root = json_object_new_object(), *rows = json_object_new_array();
    json_object *top = json_object_new_array();

    for (int s = 0; s < 2; s++) {
        json_object *side = json_object_new_object();
        json_object_object_add(side, "job", json_object_new_string(c->job[s]));
        json_object_object_add(side, "from_step", json_object_new_uint64(c->from[s]));
        json_object_object_add(side, "to_step", json_object_new_uint64(c->to[s]));
        json_object_object_add(side, "records", json_object_new_uint64(c->records[s]));
        json_object_object_add(side, "traced_records", json_object_new_uint64(c->traced[s]));
        json_object_object_add(root, s ? "b" : "a", side);
    }
    for (size_t i = 0; i < c->n_rows; i++)
        json_object_array_add(rows, row_json(by_impact[i]));
    for (size_t i = 0, shown = 0; i < c->n_rows && shown < c->cfg.top; i++)
        if (by_impact[i]->kind != KIND_STEP && ++shown)
            json_object_array_add(top, row_json(by_impact[i]));
    json_object_object_add(root, "rows", rows);
    json_object_object_add(root, "top_changes", top);
    puts(json_object_to_json_string_ext(root,
                                        JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
}

/* "X-Y" (or "X") into from/to; empty = everything. */
static int parse_range(const char *text, const char *flag, uint64_t *from, uint64_t *to)
{
    char *end;

    *from = *to = 0;
    if (!*text)
        return 0;
    errno = 0;
    *from = strtoull(text, &end, 10);
    *to = *from;
    if (!errno && *end == '-' && end[1] >= '0' && end[1] <= '9')
        *to = strtoull(end + 1, &end, 10);
    if (errno || *end || end == text || *text == '-' || *to < *from) {
        fprintf(stderr, "argusctl: --%s '%s': expected a step range X-Y with X <= Y\n", flag, text);
        return -EINVAL;
    }
    return 0;
}

static int compare_run(struct compare *c)
{
    struct row **by_impact;
    int r;

    c->job[0] = c->cfg.job;
    c->job[1] = *c->cfg.vs_job ? c->cfg.vs_job : c->cfg.job;
    if (!*c->cfg.job || (!*c->cfg.vs_job && !*c->cfg.steps && !*c->cfg.vs_steps)) {
        fprintf(stderr, "argusctl: compare needs --job A --job B, or --job A --steps X-Y "
                        "--vs-steps Z-W\n");
        return CMP_USAGE;
    }
    if (parse_range(c->cfg.steps, "steps", &c->from[0], &c->to[0]) < 0 ||
        parse_range(c->cfg.vs_steps, "vs-steps", &c->from[1], &c->to[1]) < 0)
        return CMP_USAGE;
    for (int s = 0; s < 2; s++)
        if ((r = compare_fetch(c, s)))
            return r;
    for (int s = 0; s < 2; s++) {
        if (c->records[s])
            continue;
        fprintf(stderr, "argusctl: no step records for job %s in steps %s\n", c->job[s],
                (s ? c->cfg.vs_steps : c->cfg.steps)[0] ? (s ? c->cfg.vs_steps : c->cfg.steps)
                                                        : "(all)");
        return CMP_NOT_FOUND;
    }
    if (compare_stats(c) < 0 || !(by_impact = malloc(c->n_rows * sizeof(*by_impact)))) {
        fprintf(stderr, "argusctl: out of memory\n");
        return CMP_ERROR;
    }
    for (size_t i = 0; i < c->n_rows; i++)
        by_impact[i] = &c->rows[i];
    qsort(by_impact, c->n_rows, sizeof(*by_impact), impact_cmp);
    if (c->cfg.json)
        compare_print_json(c, by_impact);
    else
        compare_print(c, by_impact);
    free(by_impact);
    return CMP_OK;
}

static void compare_free(struct compare *c)
{
    for (size_t i = 0; i < c->n_rows; i++)
        for (int s = 0; s < 2; s++)
            compare_dist_free(&c->rows[i].side[s].d);
    for (size_t i = 0; i < c->n_names; i++)
        free(c->names[i]);
    free(c->names);
    free(c->name_ids);
    free(c->rows);
    free(c->slots);
    ctl_target_free(c->target);
    config_free(&compare_table, &c->cfg);
}

int compare_main(int argc, char **argv)
{
    struct compare c = {0};
    struct config_result res;
    char *args[256], vs[512];
    int n = 0, jobs = 0, r;
    struct collector_address addr;

    if (argc > 255) {
        fprintf(stderr, "argusctl: compare: more than 254 arguments\n");
        return CMP_USAGE;
    }
    for (int i = 0; i < argc; i++) { /* drop the command word; a second --job is --vs-job */
        if (i > 0 && n == i && strcmp(argv[i], "compare") == 0)
            continue;
        args[n] = argv[i];
        if ((!strcmp(argv[i], "--job") || !strncmp(argv[i], "--job=", 6)) && jobs++ == 1) {
            snprintf(vs, sizeof(vs), "--vs-job%s", argv[i] + 5);
            args[n] = vs;
        }
        n++;
    }
    args[n] = NULL;
    if (config_load(&compare_table, &c.cfg, n, args, &res) < 0) {
        fprintf(stderr, "argusctl: compare: %s\n", res.error);
        config_free(&compare_table, &c.cfg);
        return CMP_USAGE;
    }
    if (res.help) {
        config_usage(&compare_table, stdout);
        config_free(&compare_table, &c.cfg);
        return CMP_OK;
    }
    if (ctl_address(c.cfg.collector, c.cfg.collectors, c.cfg.collectors_dns, &addr) < 0) {
        compare_free(&c);
        return CMP_USAGE;
    }
    r = ctl_target_open(
        &addr, &(struct ctl_tls){c.cfg.plaintext, c.cfg.tls_ca, c.cfg.tls_cert, c.cfg.tls_key},
        &c.target);
    if (r == CMP_OK)
        r = compare_run(&c);
    compare_free(&c);
    return r;
}
