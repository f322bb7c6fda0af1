/* argusctl: query an argus collector. Human tables by default, --json for
 * scripts. Exit codes: 0 ok, 1 not found, 2 usage, 3 collector unreachable,
 * 4 other errors reported by the collector. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/argusctl/alerts.h"
#include "tools/argusctl/heatmap.h"
#include "tools/argusctl/stragglers.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/pbjson.h"
#include "common/rpc.h"
#include "common/rpc_paths.h"
#include "proto/argus.pb-c.h"

enum ctl_exit {
    CTL_OK = 0,
    CTL_NOT_FOUND = 1,
    CTL_USAGE = 2,
    CTL_UNREACHABLE = 3,
    CTL_ERROR = 4,
};

struct ctl_config {
    char *collector;
    bool json;
    bool all;
    uint64_t timeout;
    char *job;
    int64_t rank;
    uint64_t from;
    uint64_t to;
    uint64_t limit;
    char *output;
    char *metric;
};

#define CTL_OPT(key, type, field, def, lo, hi, help)                                               \
    {                                                                                              \
        key, type, offsetof(struct ctl_config, field), def, lo, hi, help, NULL                     \
    }

static const struct config_option ctl_options[] = {
    CTL_OPT("collector", CONFIG_STRING, collector, "127.0.0.1:7700", 0, 0,
            "collector gRPC address HOST:PORT"),
    CTL_OPT("json", CONFIG_BOOL, json, "false", 0, 0, "print JSON instead of tables"),
    CTL_OPT("all", CONFIG_BOOL, all, "false", 0, 0,
            "stragglers: every report, findings that page nobody too (--json: always all)"),
    CTL_OPT("timeout", CONFIG_DURATION, timeout, "10s", 0.001, 3600, "how long to wait"),
    CTL_OPT("job", CONFIG_STRING, job, "", 0, 0, "job id (steps, ranks, stragglers)"),
    CTL_OPT("rank", CONFIG_INT, rank, "-1", -1, 1e9, "only this rank (steps; -1: all)"),
    CTL_OPT("from", CONFIG_UINT, from, "0", 0, 0, "first step (steps)"),
    CTL_OPT("to", CONFIG_UINT, to, "0", 0, 0, "last step, inclusive (steps; 0: no bound)"),
    CTL_OPT("limit", CONFIG_UINT, limit, "0", 0, 1e6, "most records (0: collector default)"),
    CTL_OPT("output", CONFIG_STRING, output, "heatmap.svg", 0, 0,
            "file the heatmap is written to (-o)"),
    CTL_OPT("metric", CONFIG_STRING, metric, "compute", 0, 0,
            "heatmap cell value: compute (phases outside collectives) or step (step time)"),
};

static const struct config_table ctl_table = {
    .program = "argusctl",
    .summary = "query an argus collector",
    .usage =
        "Usage: argusctl [OPTIONS] COMMAND\n"
        "Commands:\n"
        "  jobs                              jobs the collector knows\n"
        "  steps --job J [--rank R] [--from S --to S]   step records\n"
        "  ranks --job J                     ranks of a job and where they run\n"
        "  stragglers --job J [--all]        reports that page (--all: findings too)\n"
        "  report ID                         one report\n"
        "  heatmap --job J [-o FILE.svg] [--from S --to S]   rank x step heatmap of step time\n"
        "  alerts [--job J]                  alerts: firing, pending, resolved, with age\n"
        "Exit codes: 0 ok, 1 not found, 2 usage, 3 collector unreachable, 4 other error\n",
    .options = ctl_options,
    .count = sizeof(ctl_options) / sizeof(ctl_options[0]),
    .positional = true,
};

struct ctl {
    struct ctl_config cfg;
    struct rpc_channel *ch;
};

/* Call method with req; on success *resp is the unpacked reply. */
static int ctl_call(struct ctl *c, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *type, ProtobufCMessage **resp)
{
    char msg[256] = "";
    int status, r = rpc_call(c->ch, method, req, type, c->cfg.timeout / NSEC_PER_MSEC, resp,
                             &status, msg, sizeof(msg));

    if (r == -ETIMEDOUT || status == RPC_UNAVAILABLE || status == RPC_DEADLINE_EXCEEDED) {
        fprintf(stderr, "argusctl: collector %s unreachable: %s\n", c->cfg.collector,
                msg[0] ? msg : "timed out");
        return CTL_UNREACHABLE;
    }
    if (r < 0 || status != RPC_OK) {
        fprintf(stderr, "argusctl: %s\n", msg[0] ? msg : "call failed");
        return status == RPC_NOT_FOUND          ? CTL_NOT_FOUND
               : status == RPC_INVALID_ARGUMENT ? CTL_USAGE
                                                : CTL_ERROR;
    }
    return CTL_OK;
}

static void ctl_print_json(const ProtobufCMessage *m, pbjson_resolve_fn resolve, void *ctx)
{
    struct json_object *o = pbjson_from_message(m, resolve, ctx);

    puts(json_object_to_json_string_ext(o,
                                        JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

static const char *ctl_time(uint64_t ns, char *buf, size_t len)
{
    return ns ? clock_format_rfc3339(ns, buf, len) : "-";
}

/* Call method with req and print the reply: JSON (names resolved through
 * resolve with the reply as context) or the table printer. */
static int ctl_show(struct ctl *c, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *type,
                    void (*table)(struct ctl *c, const ProtobufCMessage *resp),
                    pbjson_resolve_fn resolve)
{
    ProtobufCMessage *resp;
    int r = ctl_call(c, method, req, type, &resp);

    if (r)
        return r;
    if (c->cfg.json)
        ctl_print_json(resp, resolve, resp);
    else
        table(c, resp);
    protobuf_c_message_free_unpacked(resp, NULL);
    return CTL_OK;
}

static void ctl_jobs_table(struct ctl *c, const ProtobufCMessage *m)
{
    const Argus__V1__JobsResponse *resp = (const Argus__V1__JobsResponse *)m;
    char t1[40], t2[40];

    printf("%-24s %7s %7s %10s %12s  %-24s  %-24s\n", "JOB", "RANKS", "WORLD", "LAST STEP",
           "RANK-STEPS", "FIRST SEEN", "LAST SEEN");
    for (size_t i = 0; i < resp->n_jobs; i++) {
        Argus__V1__JobInfo *j = resp->jobs[i];
        printf("%-24s %7" PRIu32 " %7" PRIu32 " %10" PRIu64 " %12" PRIu64 "  %-24s  %-24s\n",
               j->job, j->ranks_seen, j->world_size, j->last_step, j->rank_steps,
               ctl_time(j->first_seen_unix_ns, t1, sizeof(t1)),
               ctl_time(j->last_seen_unix_ns, t2, sizeof(t2)));
    }
    if (resp->n_jobs == 0)
        printf("(no jobs)\n");
}

static int ctl_jobs(struct ctl *c, const char *arg)
{
    Argus__V1__JobsRequest req = ARGUS__V1__JOBS_REQUEST__INIT;

    req.limit = (uint32_t)c->cfg.limit;
    return ctl_show(c, RPC_QUERY_JOBS, &req.base, &argus__v1__jobs_response__descriptor,
                    ctl_jobs_table, NULL);
}

static const char *ctl_resolve(void *ctx, uint64_t id)
{
    const Argus__V1__StepsResponse *resp = ctx;

    for (size_t i = 0; i < resp->n_names; i++)
        if (resp->names[i]->id == id)
            return resp->names[i]->name;
    return NULL;
}

static void ctl_print_step(const Argus__V1__StepsResponse *resp, const Argus__V1__StepRecord *s)
{
    char t[40];
    uint64_t kernels = 0;

    for (size_t k = 0; k < s->n_kernels; k++)
        for (size_t i = 0; i < s->kernels[k]->n_clusters; i++)
            kernels += s->kernels[k]->clusters[i]->count;
    printf("%8" PRIu64 " %6" PRIu32 "  %-24s %11.3f %8" PRIu64 " %6zu  ", s->step, s->rank,
           ctl_time(s->start_unix_ns, t, sizeof(t)), s->duration_ns / 1e6, kernels,
           s->n_collectives);
    for (size_t p = 0; p < s->n_phases; p++) {
        const char *name = ctl_resolve((void *)resp, s->phases[p]->name_id);
        printf("%s%s=%.3f", p ? " " : "", name ? name : "?", s->phases[p]->duration_ns / 1e6);
    }
    printf("\n");
}

static void ctl_steps_table(struct ctl *c, const ProtobufCMessage *m)
{
    const Argus__V1__StepsResponse *resp = (const Argus__V1__StepsResponse *)m;

    printf("%8s %6s  %-24s %11s %8s %6s  %s\n", "STEP", "RANK", "START", "TIME(ms)", "KERNELS",
           "COLLS", "PHASES (ms)");
    for (size_t i = 0; i < resp->n_steps; i++)
        ctl_print_step(resp, resp->steps[i]);
    if (resp->truncated)
        printf("(truncated: narrow --from/--to or raise --limit)\n");
    if (resp->n_steps == 0)
        printf("(no steps in that range)\n");
}

static int ctl_steps(struct ctl *c, const char *arg)
{
    Argus__V1__StepsRequest req = ARGUS__V1__STEPS_REQUEST__INIT;

    req.job = c->cfg.job;
    req.rank = c->cfg.rank;
    req.from_step = c->cfg.from;
    req.to_step = c->cfg.to;
    req.limit = (uint32_t)c->cfg.limit;
    return ctl_show(c, RPC_QUERY_STEPS, &req.base, &argus__v1__steps_response__descriptor,
                    ctl_steps_table, ctl_resolve);
}

static void ctl_ranks_table(struct ctl *c, const ProtobufCMessage *m)
{
    const Argus__V1__RanksResponse *resp = (const Argus__V1__RanksResponse *)m;

    printf("%6s %5s %6s  %-20s %4s %8s %4s %4s %4s %4s\n", "RANK", "LOCAL", "WORLD", "NODE", "GPU",
           "PID", "DP", "TP", "PP", "EP");
    for (size_t i = 0; i < resp->n_ranks; i++) {
        Argus__V1__Resource *x = resp->ranks[i];
        printf("%6" PRIu32 " %5" PRIu32 " %6" PRIu32 "  %-20s %4" PRId32 " %8" PRIu32 " %4" PRIu32
               " %4" PRIu32 " %4" PRIu32 " %4" PRIu32 "\n",
               x->rank, x->local_rank, x->world_size, x->node, x->gpu, x->pid, x->dp, x->tp, x->pp,
               x->ep);
    }
}

static int ctl_ranks(struct ctl *c, const char *arg)
{
    Argus__V1__RanksRequest req = ARGUS__V1__RANKS_REQUEST__INIT;

    req.job = c->cfg.job;
    return ctl_show(c, RPC_QUERY_RANKS, &req.base, &argus__v1__ranks_response__descriptor,
                    ctl_ranks_table, NULL);
}

static void ctl_stragglers_table(struct ctl *c, const ProtobufCMessage *m)
{
    stragglers_print(stdout, (const Argus__V1__StragglersResponse *)m, c->cfg.all, c->cfg.job);
}

static int ctl_stragglers(struct ctl *c, const char *arg)
{
    Argus__V1__StragglersRequest req = ARGUS__V1__STRAGGLERS_REQUEST__INIT;

    req.job = c->cfg.job;
    return ctl_show(c, RPC_QUERY_STRAGGLERS, &req.base, &argus__v1__stragglers_response__descriptor,
                    ctl_stragglers_table, NULL);
}

static void ctl_alerts_table(struct ctl *c, const ProtobufCMessage *m)
{
    alerts_print(stdout, (const Argus__V1__AlertsResponse *)m, clock_real_ns(), c->cfg.job);
}

static int ctl_alerts(struct ctl *c, const char *arg)
{
    Argus__V1__AlertsRequest req = ARGUS__V1__ALERTS_REQUEST__INIT;

    req.job = c->cfg.job;
    req.include_resolved = true;
    return ctl_show(c, RPC_QUERY_ALERTS, &req.base, &argus__v1__alerts_response__descriptor,
                    ctl_alerts_table, NULL);
}

/* The report alone, not its response wrapper, in both forms. */
static int ctl_report(struct ctl *c, const char *id)
{
    Argus__V1__ReportRequest req = ARGUS__V1__REPORT_REQUEST__INIT;
    Argus__V1__ReportResponse *resp;
    int r;

    req.id = (char *)id;
    r = ctl_call(c, RPC_QUERY_REPORT, &req.base, &argus__v1__report_response__descriptor,
                 (ProtobufCMessage **)&resp);
    if (r)
        return r;
    if (c->cfg.json)
        ctl_print_json(&resp->report->base, NULL, NULL);
    else
        stragglers_print_report(stdout, resp->report, true);
    argus__v1__report_response__free_unpacked(resp, NULL);
    return CTL_OK;
}

/* The job's JobInfo (world size, last step), or an exit code. */
static int ctl_job_info(struct ctl *c, uint32_t *world, uint64_t *last_step)
{
    Argus__V1__JobsRequest req = ARGUS__V1__JOBS_REQUEST__INIT;
    Argus__V1__JobsResponse *resp;
    int r = ctl_call(c, RPC_QUERY_JOBS, &req.base, &argus__v1__jobs_response__descriptor,
                     (ProtobufCMessage **)&resp);

    if (r)
        return r;
    r = CTL_NOT_FOUND;
    for (size_t i = 0; i < resp->n_jobs; i++) {
        if (strcmp(resp->jobs[i]->job, c->cfg.job) == 0) {
            *world =
                resp->jobs[i]->world_size ? resp->jobs[i]->world_size : resp->jobs[i]->ranks_seen;
            *last_step = resp->jobs[i]->last_step;
            r = CTL_OK;
        }
    }
    if (r)
        fprintf(stderr, "argusctl: no job '%s' in this collector\n", c->cfg.job);
    argus__v1__jobs_response__free_unpacked(resp, NULL);
    return r;
}

/* A phase named like a collective (its time is mostly waiting for others). */
static bool ctl_is_collective(const char *name)
{
    static const char *const words[] = {
        "allreduce",     "all_reduce", "allgather",  "all_gather", "reduce_scatter",
        "reducescatter", "alltoall",   "all_to_all", "nccl",       "broadcast",
        "send",          "recv",       "barrier",    "comm"};

    for (size_t i = 0; name && i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasestr(name, words[i]))
            return true;
    return false;
}

/* The cell value of one record: its compute time (phases that are not
 * collectives), or its step time when asked or when it has no phases. */
static uint64_t ctl_cell(struct ctl *c, const Argus__V1__StepsResponse *resp,
                         const Argus__V1__StepRecord *s)
{
    uint64_t compute = 0;

    if (strcmp(c->cfg.metric, "step") == 0 || s->n_phases == 0)
        return s->duration_ns;
    for (size_t p = 0; p < s->n_phases; p++)
        if (!ctl_is_collective(ctl_resolve((void *)resp, s->phases[p]->name_id)))
            compute += s->phases[p]->duration_ns;
    return compute ? compute : s->duration_ns;
}

/* Fill h with steps [from, to] of every rank, a page of steps at a time. */
static int ctl_heatmap_fill(struct ctl *c, struct heatmap *h, uint32_t world, uint64_t from,
                            uint64_t to)
{
    uint64_t per = 50000 / (world ? world : 1);

    if (per == 0)
        per = 1;
    for (uint64_t lo = from; lo <= to; lo += per) {
        Argus__V1__StepsRequest req = ARGUS__V1__STEPS_REQUEST__INIT;
        Argus__V1__StepsResponse *resp;
        req.job = c->cfg.job;
        req.rank = -1;
        req.from_step = lo;
        req.to_step = lo + per - 1 < to ? lo + per - 1 : to;
        req.limit = 100000;
        int r = ctl_call(c, RPC_QUERY_STEPS, &req.base, &argus__v1__steps_response__descriptor,
                         (ProtobufCMessage **)&resp);
        if (r)
            return r;
        for (size_t i = 0; i < resp->n_steps; i++)
            heatmap_set(h, resp->steps[i]->rank, resp->steps[i]->step,
                        ctl_cell(c, resp, resp->steps[i]));
        argus__v1__steps_response__free_unpacked(resp, NULL);
    }
    return CTL_OK;
}

static int ctl_heatmap(struct ctl *c, const char *arg)
{
    uint32_t world = 0;
    uint64_t last = 0, from, to;
    char title[256];
    int r;

    if (strcmp(c->cfg.metric, "compute") != 0 && strcmp(c->cfg.metric, "step") != 0) {
        fprintf(stderr, "argusctl: --metric must be compute or step\n");
        return CTL_USAGE;
    }
    if ((r = ctl_job_info(c, &world, &last)))
        return r;
    from = c->cfg.from;
    to = c->cfg.to && c->cfg.to < last ? c->cfg.to : last;
    if (from > to || world == 0) {
        fprintf(stderr, "argusctl: no steps in that range\n");
        return CTL_NOT_FOUND;
    }
    struct heatmap *h = heatmap_new(world, from, to - from + 1);
    if (!h) {
        fprintf(stderr, "argusctl: a %u x %llu heatmap is too large; narrow --from/--to\n", world,
                (unsigned long long)(to - from + 1));
        return CTL_USAGE;
    }
    r = ctl_heatmap_fill(c, h, world, from, to);
    FILE *f = r ? NULL : fopen(c->cfg.output, "we");
    if (!r && !f) {
        fprintf(stderr, "argusctl: %s: %s\n", c->cfg.output, strerror(errno));
        r = CTL_ERROR;
    }
    snprintf(title, sizeof(title), "job %s: %s time of %u ranks, steps %llu-%llu", c->cfg.job,
             c->cfg.metric, world, (unsigned long long)from, (unsigned long long)to);
    if (f && (heatmap_write_svg(h, title, 512, 400, f) < 0 || fclose(f) != 0)) {
        fprintf(stderr, "argusctl: writing %s failed\n", c->cfg.output);
        r = CTL_ERROR;
    } else if (f) {
        printf("heatmap of job %s (%u ranks x %llu steps) written to %s\n", c->cfg.job, world,
               (unsigned long long)(to - from + 1), c->cfg.output);
    }
    heatmap_free(h);
    return r;
}

static const struct {
    const char *name;
    int (*run)(struct ctl *c, const char *arg);
    bool needs_job; /* --job J */
    bool takes_arg; /* one positional argument (report ID) */
} ctl_commands[] = {
    {"jobs", ctl_jobs, false, false},     {"steps", ctl_steps, true, false},
    {"ranks", ctl_ranks, true, false},    {"stragglers", ctl_stragglers, true, false},
    {"report", ctl_report, false, true},  {"heatmap", ctl_heatmap, true, false},
    {"alerts", ctl_alerts, false, false},
};

static int ctl_dispatch(struct ctl *c, int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++) {
        if (strcmp(argv[0], ctl_commands[i].name) != 0)
            continue;
        if (ctl_commands[i].takes_arg && argc != 2) {
            fprintf(stderr, "argusctl: usage: argusctl %s ID\n", argv[0]);
            return CTL_USAGE;
        }
        if (!ctl_commands[i].takes_arg && argc != 1) {
            fprintf(stderr, "argusctl: unexpected argument '%s' (see --help)\n", argv[1]);
            return CTL_USAGE;
        }
        if (ctl_commands[i].needs_job && !*c->cfg.job) {
            fprintf(stderr, "argusctl: %s needs --job J\n", argv[0]);
            return CTL_USAGE;
        }
        return ctl_commands[i].run(c, argc > 1 ? argv[1] : NULL);
    }
    fprintf(stderr, "argusctl: unknown command '%s' (see --help)\n", argv[0]);
    return CTL_USAGE;
}

int main(int argc, char **argv)
{
    struct ctl c = {0};
    struct config_result res;
    int r;

    for (int i = 1; i < argc; i++) /* -o FILE is --output FILE */
        if (strcmp(argv[i], "-o") == 0)
            argv[i] = "--output";
    if (config_load(&ctl_table, &c.cfg, argc, argv, &res) < 0) {
        fprintf(stderr, "argusctl: %s\n", res.error);
        config_free(&ctl_table, &c.cfg);
        return CTL_USAGE;
    }
    if (res.help || res.print || res.npositional == 0) {
        if (res.print)
            config_print(&ctl_table, &c.cfg, stdout);
        else
            config_usage(&ctl_table, res.help ? stdout : stderr);
        config_free(&ctl_table, &c.cfg);
        return res.help || res.print ? CTL_OK : CTL_USAGE;
    }
    c.ch = rpc_channel_new(c.cfg.collector, NULL);
    r = c.ch ? ctl_dispatch(&c, res.npositional, res.positional) : CTL_ERROR;
    rpc_channel_free(c.ch);
    config_free(&ctl_table, &c.cfg);
    return r;
}
