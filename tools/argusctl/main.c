/* argusctl: query an argus collector. Human tables by default, --json for
 * scripts. Exit codes: 0 ok, 1 not found, 2 usage, 3 collector unreachable,
 * 4 other errors reported by the collector, 5 TLS handshake refused (the
 * collector is there; common/tls_why.h says why). The collector's address, or a
 * collector set: tools/argusctl/collector_address.h; every call goes through
 * target.h (a set's members asked together, their answers merged). A command
 * is one line of ctl_commands (its --help and man page lines come from there). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/argusctl/actions.h"
#include "tools/argusctl/alerts.h"
#include "tools/argusctl/channel.h"
#include "tools/argusctl/collector_address.h"
#include "tools/argusctl/collectors.h"
#include "tools/argusctl/ctl_exit.h"
#include "tools/argusctl/follow.h"
#include "tools/argusctl/heatmap_cmd.h"
#include "tools/argusctl/compare.h"
#include "tools/argusctl/cost_cmd.h"
#include "tools/argusctl/import.h"
#include "tools/argusctl/nodes_cmd.h"
#include "tools/argusctl/stragglers.h"
#include "tools/argusctl/tables.h"
#include "tools/argusctl/target.h"
#include "tools/argusctl/trace.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/config_man.h"
#include "common/pbjson.h"
#include "common/rpc_paths.h"
#include "common/tls.h"
#include "proto/argus.pb-c.h"

struct ctl_config {
    char *collector, *collectors, *collectors_dns;
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
    bool plaintext;
    char *tls_ca, *tls_cert, *tls_key;
    bool follow;
    uint64_t poll;
    char *cause;
    char *node;
    char *since;
    bool suspect;
    uint64_t min_jobs;
    char *format;
    char *by;
};

#define CTL_OPT(key, type, field, def, lo, hi, help)                                               \
    CONFIG_OPTION(struct ctl_config, key, type, field, def, lo, hi, help, NULL, NULL, false)

static const struct config_option ctl_options[] = {
    CTL_CONNECT_OPTIONS(struct ctl_config),
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
            "heatmap cell value: compute (step time less time inside collectives) or step"),
    CTL_OPT("follow", CONFIG_BOOL, follow, "false", 0, 0,
            "stragglers: print new reports as they arrive until interrupted (--json: one "
            "object per line)"),
    CTL_OPT("poll", CONFIG_DURATION, poll, "1s", 0.01, 3600,
            "stragglers --follow: how often to ask the collector"),
    CTL_OPT(
        "cause", CONFIG_STRING, cause, "", 0, 0,
        "stragglers: only suspects of these causes (comma-separated: compute, link, host, "
        "data_skew, silent, job_regression, hang, exited, imbalance, gpu_throttled, diag_blind, "
        "unknown)"),
    CTL_OPT("node", CONFIG_STRING, node, "", 0, 0, "stragglers: only suspects on this node"),
    CTL_OPT("since", CONFIG_STRING, since, "", 0, 0,
            "stragglers: only reports created since then: a duration back from now (10m, 2h) "
            "or an RFC 3339 time (2026-12-03T12:00:00Z); nodes: default the collector's "
            "fleet.window, exclude: default 24h, cost: default 7d"),
    CTL_OPT("suspect", CONFIG_BOOL, suspect, "false", 0, 0,
            "nodes: only nodes at or above the collector's fleet.suspect_jobs"),
    CTL_OPT("min-jobs", CONFIG_UINT, min_jobs, "0", 0, 1e6,
            "exclude: nodes that were the culprit of at least this many jobs (0: the "
            "collector's fleet.suspect_jobs)"),
    CTL_OPT("format", CONFIG_STRING, format, "slurm", 0, 0,
            "exclude: slurm (a list for srun --exclude=) or k8s (a nodeAffinity with NotIn)"),
    CTL_OPT("by", CONFIG_STRING, by, "node", 0, 0,
            "cost: rank the GPU-hours lost by node, cause or job"),
};

static const struct config_table ctl_table = {
    .program = "argusctl",
    .summary = "query an argus collector or a collector set",
    .usage = "Usage: argusctl [OPTIONS] COMMAND\n"
             "Also import-kineto FILE... --job J [--rank R] and compare --job A --job B | --job A "
             "--steps X-Y\n"
             "--vs-steps Z-W [--json], each with its own flags (argusctl import-kineto --help).\n"
             "Exit codes: 0 ok, 1 not found, 2 usage, 3 collector unreachable (nothing listens), 4 "
             "other error, 5 TLS handshake refused (a certificate problem; the message says "
             "which and why)\n",
    .options = ctl_options,
    .count = sizeof(ctl_options) / sizeof(ctl_options[0]),
    .positional = true,
};

struct ctl {
    struct ctl_config cfg;
    struct collector_address addr;
    struct stragglers_filter filter;
    uint64_t since_ns; /* --since, 0: none */
    bool quiet;        /* ctl_call says nothing (--follow while it waits) */
    const char *arg2;  /* the second positional of a command with subcommands */
    struct ctl_target *target;
};

/* Call method with req (every member of a set, merged: target.h); on
 * success *resp is the unpacked reply. */
static int ctl_call(struct ctl *c, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *type, ProtobufCMessage **resp)
{
    return ctl_target_call(c->target, method, req, type, c->cfg.timeout / NSEC_PER_MSEC, c->quiet,
                           resp);
}

static void ctl_print_json(const ProtobufCMessage *m, pbjson_resolve_fn resolve, void *ctx)
{
    struct json_object *o = pbjson_from_message(m, resolve, ctx);

    puts(json_object_to_json_string_ext(o,
                                        JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* m as one line of JSON (for --follow --json). */
static void ctl_print_json_line(const ProtobufCMessage *m)
{
    struct json_object *o = pbjson_from_message(m, NULL, NULL);

    puts(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* Call method with req and print the reply: JSON (names resolved through
 * resolve with the reply as context) or the table printer. */
static int ctl_show(struct ctl *c, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *type,
                    void (*table)(const ProtobufCMessage *resp, const char *job),
                    pbjson_resolve_fn resolve)
{
    ProtobufCMessage *resp;
    int r = ctl_call(c, method, req, type, &resp);

    if (r)
        return r;
    if (c->cfg.json)
        ctl_print_json(resp, resolve, resp);
    else
        table(resp, c->cfg.job);
    protobuf_c_message_free_unpacked(resp, NULL);
    return CTL_OK;
}

static int ctl_jobs(struct ctl *c, const char *arg)
{
    Argus__V1__JobsRequest req = ARGUS__V1__JOBS_REQUEST__INIT;

    req.limit = (uint32_t)c->cfg.limit;
    return ctl_show(c, RPC_QUERY_JOBS, &req.base, &argus__v1__jobs_response__descriptor,
                    tables_jobs, NULL);
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
                    tables_steps, tables_resolve);
}

static int ctl_ranks(struct ctl *c, const char *arg)
{
    Argus__V1__RanksRequest req = ARGUS__V1__RANKS_REQUEST__INIT;

    req.job = c->cfg.job;
    return ctl_show(c, RPC_QUERY_RANKS, &req.base, &argus__v1__ranks_response__descriptor,
                    tables_ranks, NULL);
}

/* One Stragglers call for reports created since from_ns: *raw is the reply
 * (protobuf-c frees it), *view its filtered view (stragglers_view_free). */
static int ctl_stragglers_get(struct ctl *c, uint64_t from_ns, Argus__V1__StragglersResponse **raw,
                              Argus__V1__StragglersResponse **view)
{
    Argus__V1__StragglersRequest req = ARGUS__V1__STRAGGLERS_REQUEST__INIT;
    int r;

    req.job = c->cfg.job;
    req.from_unix_ns = from_ns;
    r = ctl_call(c, RPC_QUERY_STRAGGLERS, &req.base, &argus__v1__stragglers_response__descriptor,
                 (ProtobufCMessage **)raw);
    if (r)
        return r;
    *view = stragglers_view(*raw, &c->filter);
    if (!*view) {
        argus__v1__stragglers_response__free_unpacked(*raw, NULL);
        fprintf(stderr, "argusctl: out of memory\n");
        return CTL_ERROR;
    }
    return CTL_OK;
}

/* follow_ops of stragglers --follow. */
static int ctl_follow_fetch(void *ctx, uint64_t from_ns, Argus__V1__StragglersResponse **raw,
                            Argus__V1__StragglersResponse **view)
{
    return ctl_stragglers_get(ctx, from_ns, raw, view);
}

static void ctl_follow_report(void *ctx, const Argus__V1__Report *rep)
{
    struct ctl *c = ctx;

    if (c->cfg.json)
        ctl_print_json_line(&rep->base);
    else if (c->cfg.all || rep->pages)
        stragglers_print_report(stdout, rep, c->cfg.all);
}

static void ctl_follow_quiet(void *ctx, bool quiet)
{
    ((struct ctl *)ctx)->quiet = quiet;
}

static const struct follow_ops ctl_follow_ops = {ctl_follow_fetch, ctl_follow_report,
                                                 ctl_follow_quiet};

static int ctl_stragglers(struct ctl *c, const char *arg)
{
    Argus__V1__StragglersResponse *raw, *view;
    int r;

    if (c->cfg.follow)
        return follow_run(&ctl_follow_ops, c, c->since_ns, c->cfg.poll);
    r = ctl_stragglers_get(c, c->since_ns, &raw, &view);
    if (r)
        return r;
    if (c->cfg.json)
        ctl_print_json(&view->base, NULL, NULL);
    else
        stragglers_print(stdout, view, c->cfg.all, c->cfg.job);
    stragglers_view_free(view);
    argus__v1__stragglers_response__free_unpacked(raw, NULL);
    return CTL_OK;
}

static void ctl_alerts_table(const ProtobufCMessage *m, const char *job)
{
    alerts_print(stdout, (const Argus__V1__AlertsResponse *)m, clock_real_ns(), job);
}

static int ctl_alerts(struct ctl *c, const char *arg)
{
    Argus__V1__AlertsRequest req = ARGUS__V1__ALERTS_REQUEST__INIT;

    req.job = c->cfg.job;
    req.include_resolved = true;
    return ctl_show(c, RPC_QUERY_ALERTS, &req.base, &argus__v1__alerts_response__descriptor,
                    ctl_alerts_table, NULL);
}

/* actions [undo ID | reset [NOTE]]: tools/argusctl/actions.h. */
static int ctl_actions(struct ctl *c, const char *sub)
{
    struct actions_command o = {c->target, c->cfg.timeout / NSEC_PER_MSEC, c->cfg.json,
                                (uint32_t)c->cfg.limit, collector_address_is_set(&c->addr)};

    return actions_command(&o, sub, c->arg2);
}

static int ctl_collectors(struct ctl *c, const char *arg)
{
    struct collectors_options o = {c->cfg.json, c->cfg.job, c->cfg.timeout / NSEC_PER_MSEC};

    return collectors_run(c->target, &o, stdout);
}

/* Where the GPU-hours went: every job's reports (--job: one) created since
 * --since (7 days), ranked --by node, cause or job (cost_cmd.h). */
static int ctl_cost(struct ctl *c, const char *arg)
{
    struct cost_cmd_options o = {.by = c->cfg.by, .job = c->cfg.job, .since_ns = c->since_ns};

    (void)arg;
    o.since_text = *c->cfg.since ? c->cfg.since : "7d";
    o.limit = (uint32_t)c->cfg.limit, o.json = c->cfg.json, o.quiet = c->quiet;
    o.timeout_ms = c->cfg.timeout / NSEC_PER_MSEC;
    if (!*c->cfg.since)
        stragglers_parse_since("7d", clock_real_ns(), &o.since_ns);
    return cost_cmd_run(c->target, &o, stdout);
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

/* The report's drill-down windows as Chrome-trace JSON (-o FILE, --rank R). */
static int ctl_trace(struct ctl *c, const char *id)
{
    Argus__V1__TraceRequest req = ARGUS__V1__TRACE_REQUEST__INIT;
    Argus__V1__TraceResponse *resp;
    int r;

    req.report_id = (char *)id;
    req.rank = c->cfg.rank;
    r = ctl_call(c, RPC_QUERY_TRACE, &req.base, &argus__v1__trace_response__descriptor,
                 (ProtobufCMessage **)&resp);
    if (r)
        return r;
    r = trace_write(resp, id, c->cfg.output) < 0 ? CTL_USAGE : CTL_OK;
    argus__v1__trace_response__free_unpacked(resp, NULL);
    return r;
}

static int ctl_heatmap(struct ctl *c, const char *arg)
{
    struct heatmap_cmd_options o = {.target = c->target, .quiet = c->quiet, .job = c->cfg.job};

    (void)arg;
    o.timeout_ms = c->cfg.timeout / NSEC_PER_MSEC, o.from = c->cfg.from, o.to = c->cfg.to;
    o.metric = c->cfg.metric, o.output = c->cfg.output;
    return heatmap_cmd_run(&o);
}

/* Fleet memory: nodes ranked by culprit jobs, or those to keep jobs off
 * (nodes_cmd.h). */
static int ctl_fleet(struct ctl *c, bool exclude)
{
    struct nodes_cmd_options o = {.exclude = exclude, .since_ns = c->since_ns};

    o.json = c->cfg.json, o.suspect = c->cfg.suspect, o.min_jobs = (uint32_t)c->cfg.min_jobs;
    o.format = c->cfg.format, o.quiet = c->quiet, o.timeout_ms = c->cfg.timeout / NSEC_PER_MSEC;
    return nodes_cmd_run(c->target, &o, stdout);
}
static int ctl_nodes(struct ctl *c, const char *arg)
{
    return (void)arg, ctl_fleet(c, false);
}
static int ctl_exclude(struct ctl *c, const char *arg)
{
    return (void)arg, ctl_fleet(c, true);
}

/* The commands: one line each. --help and --man list them from here. */
static const struct ctl_command {
    struct config_command doc; /* name, arguments, one line of help */
    int (*run)(struct ctl *c, const char *arg);
    bool needs_job; /* --job J */
    bool takes_arg; /* one positional argument (report ID) */
} ctl_commands[] = {
    {{"jobs", NULL, "jobs the collector knows"}, ctl_jobs, false, false},
    {{"steps", "--job J [--rank R] [--from S --to S]", "step records"}, ctl_steps, true, false},
    {{"ranks", "--job J", "ranks of a job and where they run"}, ctl_ranks, true, false},
    {{"stragglers", "--job J [--all] [--follow] [--cause C] [--node N] [--since T]",
      "reports that page (--all: findings too), new ones as they arrive with --follow"},
     ctl_stragglers,
     true,
     false},
    {{"report", "ID", "one report"}, ctl_report, false, true},
    {{"cost", "[--since 7d] [--by node|cause|job] [--job J]",
      "GPU-hours lost to stragglers, ranked by node, cause or job, with the costliest reports"},
     ctl_cost,
     false,
     false},
    {{"heatmap", "--job J [-o FILE.svg] [--from S --to S]",
      "rank x step heatmap of own time vs peers"},
     ctl_heatmap,
     true,
     false},
    {{"trace", "ID [--rank R] [-o FILE]", "a report's captured spans as Perfetto JSON"},
     ctl_trace,
     false,
     true},
    {{"alerts", "[--job J]", "alerts: firing, pending, resolved, with age"},
     ctl_alerts,
     false,
     false},
    {{"collectors", "[--job J]",
      "the collector set: members up, jobs each owns as primary and standby, jobs that moved "
      "(--job: its primary and standby)"},
     ctl_collectors,
     false,
     false},
    {{"nodes", "[--suspect] [--since 7d]",
      "nodes ranked by the distinct jobs they were a hardware-class culprit of, with the reports"},
     ctl_nodes,
     false,
     false},
    {{"exclude", "[--since 24h] [--min-jobs N] [--format slurm|k8s]",
      "the culprit nodes as a list for srun --exclude= or a Kubernetes nodeAffinity"},
     ctl_exclude,
     false,
     false},
    {{"actions", "[undo ID | reset [NOTE]] [--limit N]",
      "what the collector did to nodes and its breaker; undo a drain argus did; close the "
      "breaker (undo and reset need an OU=admin certificate)"},
     ctl_actions,
     false,
     false},
};

#define CTL_NCOMMANDS (sizeof(ctl_commands) / sizeof(ctl_commands[0]))

/* A command that takes up to two optional positionals, a subcommand and its
 * argument ("actions undo ID"); its run gets the first, c->arg2 the second. */
static bool ctl_has_subcommands(const struct ctl_command *cmd)
{
    return cmd->run == ctl_actions;
}

static int ctl_dispatch(struct ctl *c, int argc, char **argv)
{
    for (size_t i = 0; i < CTL_NCOMMANDS; i++) {
        const struct ctl_command *cmd = &ctl_commands[i];
        if (strcmp(argv[0], cmd->doc.name) != 0)
            continue;
        if (ctl_has_subcommands(cmd) && argc > 3) {
            fprintf(stderr, "argusctl: usage: argusctl %s %s\n", argv[0], cmd->doc.args);
            return CTL_USAGE;
        }
        c->arg2 = ctl_has_subcommands(cmd) && argc > 2 ? argv[2] : NULL;
        if (cmd->takes_arg && argc != 2) {
            fprintf(stderr, "argusctl: usage: argusctl %s %s\n", argv[0], cmd->doc.args);
            return CTL_USAGE;
        }
        if (!cmd->takes_arg && !ctl_has_subcommands(cmd) && argc != 1) {
            fprintf(stderr, "argusctl: unexpected argument '%s' (see --help)\n", argv[1]);
            return CTL_USAGE;
        }
        if (cmd->needs_job && !*c->cfg.job) {
            fprintf(stderr, "argusctl: %s needs --job J\n", argv[0]);
            return CTL_USAGE;
        }
        return cmd->run(c, argc > 1 ? argv[1] : NULL);
    }
    fprintf(stderr, "argusctl: unknown command '%s' (see --help)\n", argv[0]);
    return CTL_USAGE;
}

/* The filters (--cause, --node, --since) and the collector's address.
 * Returns 0 or CTL_USAGE after saying what is wrong. */
static int ctl_prepare(struct ctl *c)
{
    char err[512];

    if (stragglers_parse_causes(c->cfg.cause, &c->filter, err, sizeof(err)) < 0) {
        fprintf(stderr, "argusctl: %s\n", err);
        return CTL_USAGE;
    }
    c->filter.node = c->cfg.node;
    if (*c->cfg.since && stragglers_parse_since(c->cfg.since, clock_real_ns(), &c->since_ns) < 0) {
        fprintf(stderr,
                "argusctl: --since: '%s' is neither a duration (10m, 2h, 7d) nor an RFC 3339 "
                "time (2026-12-03T12:00:00Z)\n",
                c->cfg.since);
        return CTL_USAGE;
    }
    return ctl_address(c->cfg.collector, c->cfg.collectors, c->cfg.collectors_dns, &c->addr) < 0
               ? CTL_USAGE
               : 0;
}

/* --help, --man, --print-config, or no command: print and return the exit
 * code; -1 when there is a command to run. */
static int ctl_meta(const struct config_table *t, struct ctl *c, const struct config_result *res)
{
    if (res->man)
        config_man(t, stdout);
    else if (res->print)
        config_print(t, &c->cfg, stdout);
    else if (res->check && ctl_prepare(c) != 0)
        return CTL_USAGE;
    else if (res->check)
        printf("ok: collector%s %s (from %s)\n", collector_address_is_set(&c->addr) ? "s" : "",
               c->addr.address[0] ? c->addr.address
               : c->addr.list[0]  ? c->addr.list
                                  : c->addr.dns,
               c->addr.source);
    else if (res->help || res->npositional == 0)
        config_usage(t, res->help ? stdout : stderr);
    else
        return -1;
    return res->help || res->print || res->man || res->check ? CTL_OK : CTL_USAGE;
}

int main(int argc, char **argv)
{
    struct config_command docs[CTL_NCOMMANDS];
    struct config_table table = ctl_table;
    struct ctl c = {0};
    struct config_result res;
    int r;

    for (int i = 1; i < argc; i++) /* commands with their own flags */
        if (!strcmp(argv[i], "import-kineto") || !strcmp(argv[i], "compare"))
            return (argv[i][0] == 'i' ? import_kineto_main : compare_main)(argc, argv);
    for (size_t i = 0; i < CTL_NCOMMANDS; i++)
        docs[i] = ctl_commands[i].doc;
    table.commands = docs;
    table.ncommands = CTL_NCOMMANDS;
    for (int i = 1; i < argc; i++) /* -o FILE is --output FILE */
        if (strcmp(argv[i], "-o") == 0)
            argv[i] = "--output";
    if (config_load(&table, &c.cfg, argc, argv, &res) < 0) {
        fprintf(stderr, "argusctl: %s\n", config_errors_oneline(&res));
        config_free(&table, &c.cfg);
        return CTL_USAGE;
    }
    r = ctl_meta(&table, &c, &res);
    if (r < 0 && (r = ctl_prepare(&c)) == 0) {
        r = ctl_target_open(
            &c.addr,
            &(struct ctl_tls){c.cfg.plaintext, c.cfg.tls_ca, c.cfg.tls_cert, c.cfg.tls_key},
            &c.target);
        if (r == CTL_OK)
            r = ctl_dispatch(&c, res.npositional, res.positional);
    }
    ctl_target_free(c.target);
    config_free(&table, &c.cfg);
    return r;
}
