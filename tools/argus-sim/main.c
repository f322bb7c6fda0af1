/* argus-sim: a protocol-level simulator of argus agents (see sim.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/config_man.h"
#include "common/log.h"
#include "tools/argus-sim/record.h"
#include "tools/argus-sim/scenario.h"
#include "tools/argus-sim/delivery.h"
#include "tools/argus-sim/sim.h"
#include "tools/argus-sim/sim_overload.h"
#include "tools/argus-sim/sim_plan.h"
#include "tools/argus-sim/sim_set.h"

#define OPT(key, type, field, def, lo, hi, help)                                                   \
    CONFIG_OPTION(struct sim_config, key, type, field, def, lo, hi, help, NULL, NULL, false)
#define OPT_ENUM(key, field, def, names, help)                                                     \
    CONFIG_OPTION(struct sim_config, key, CONFIG_ENUM, field, def, 0, 0, help, names, NULL, false)

static const struct config_name sim_delivery_names[] = {
    {"lockstep", DELIVERY_LOCKSTEP},
    {"age", DELIVERY_AGE},
    {"realistic", DELIVERY_REALISTIC},
    {NULL, 0},
};

static const struct config_name sim_replay_names[] = {
    {"same", SIM_REPLAY_SAME},
    {"new_epoch", SIM_REPLAY_NEW_EPOCH},
    {NULL, 0},
};

static const struct config_option sim_options[] = {
    OPT("collector", CONFIG_STRING, collector, "127.0.0.1:7700", 0, 0, "collector HOST:PORT"),
    OPT("collector_set", CONFIG_STRING, collector_set, "", 0, 0,
        "collector set HOST:PORT,...: the job goes to its primary and standby (the agent's "
        "placement), every batch to both with the same epoch and seq; --verify checks both "
        "(empty: --collector)"),
    OPT("job", CONFIG_STRING, job, "sim-job", 0, 0, "job id"),
    OPT("ranks", CONFIG_UINT, ranks, "64", 1, 1 << 20, "ranks in the job"),
    OPT("ranks_per_node", CONFIG_UINT, ranks_per_node, "8", 1, 64,
        "ranks per simulated node (one agent stream each)"),
    OPT("steps", CONFIG_UINT, steps, "50", 1, 1e9, "steps per rank"),
    OPT("rate", CONFIG_DOUBLE, rate, "0", 0, 1e6,
        "steps per second per rank (0: as fast as acks allow)"),
    OPT("seed", CONFIG_UINT, seed, "1", 0, 0, "content seed"),
    OPT("steps_per_batch", CONFIG_UINT, steps_per_batch, "1", 1, 1024,
        "steps of every local rank per batch"),
    OPT("threads", CONFIG_UINT, threads, "2", 1, 64, "sender threads"),
    OPT("step_time", CONFIG_DURATION, step_ns, "1s", 0.000001, 3600,
        "nominal step time in the records"),
    OPT("base_time", CONFIG_UINT, base_unix_ns, "0", 0, 0,
        "job start in UNIX ns written into records (0: now; pass the same to --verify)"),
    OPT("timeout", CONFIG_DURATION, timeout, "10m", 0.001, 86400, "give up after"),
    OPT("max_inflight", CONFIG_UINT, max_inflight, "64", 1, 65536,
        "unacked batches per agent before it waits (its in-memory spool)"),
    OPT("tp", CONFIG_UINT, tp, "8", 1, 1024, "tensor-parallel size"),
    OPT("pp", CONFIG_UINT, pp, "1", 1, 1024, "pipeline-parallel size"),
    OPT("verify", CONFIG_BOOL, verify, "false", 0, 0,
        "do not send: check the collector holds exactly what a run with these options sent"),
    OPT("pregen", CONFIG_BOOL, pregen, "false", 0, 0,
        "build every batch before the clock starts, so a benchmark measures the collector"),
    OPT("code_kernels", CONFIG_BOOL, code_kernels, "true", 0, 0,
        "ship kernel groups coded (StepRecord.packed_kernels) as an agent does for a collector "
        "that reads them; false: plain KernelGroups, as older agents"),
    OPT("record", CONFIG_STRING, record, "", 0, 0,
        "write the step records to this file (for the agent's replay.records) instead of sending"),
    OPT("record_split", CONFIG_BOOL, record_split, "false", 0, 0,
        "with --record: one file per node of ranks_per_node ranks, FILE.node0, FILE.node1, ..."),
    OPT("hw", CONFIG_BOOL, hw, "true", 0, 0,
        "with --record: the records carry hardware counters (false: none, so that an agent "
        "replaying them reads its own, hw.*)"),
    OPT("scenario", CONFIG_STRING, scenario, "", 0, 0,
        "fault scenario (empty: plain records): healthy, compute-straggler, link-degraded-group, "
        "masked-straggler, pipeline-stage-straggler, jit-stalls, data-skew, everyone-slower, "
        "silent-rank, host-straggler, hang, death, checkpoint, imbalance, gpu-throttled, "
        "power-capped"),
    OPT("onset", CONFIG_UINT, onset, "20", 0, 0, "first faulty step of the scenario"),
    OPT("fault_end", CONFIG_UINT, fault_end, "0", 0, 0,
        "the culprit recovers at this step (0: the fault lasts to the end)"),
    OPT("severity", CONFIG_DOUBLE, severity, "0", 0, 100,
        "slowdown factor of the fault (0: the scenario's default)"),
    OPT("fault_rank", CONFIG_INT, fault_rank, "-1", -1, 1e8,
        "culprit rank (-1: the scenario picks one)"),
    OPT("liveness_for", CONFIG_DURATION, liveness_for_ns, "45s", 5, 3600,
        "hang, checkpoint scenarios: how long the ranks stay stopped, their agents sending "
        "statuses every 5 s"),
    OPT("agent_prefix", CONFIG_STRING, agent_prefix, "sim-agent-", 0, 0, "agent id prefix"),
    OPT_ENUM("delivery", delivery, "realistic", sim_delivery_names,
             "lockstep: all streams within a step of each other; age: batches by age like the "
             "agent; realistic: age plus per-stream delay and jitter (--rate 0: lockstep)"),
    OPT("max_age", CONFIG_DURATION, max_age_ns, "1s", 0.001, 600,
        "age, realistic: a batch is sealed when its oldest step is this old (agent batch.max_age)"),
    OPT("batch_max_steps", CONFIG_UINT, batch_max_steps, "512", 1, 65536,
        "age, realistic: step records per batch at most (agent batch.max_steps)"),
    OPT("start_spread", CONFIG_DURATION, start_spread_ns, "0", 0, 3600,
        "agents start over this long (each one's steps shifted by a random part of it)"),
    OPT("delay", CONFIG_DURATION, delay_ns, "100ms", 0, 3600,
        "realistic: fixed delay of each stream, random in [0, this]"),
    OPT("jitter", CONFIG_DURATION, jitter_ns, "200ms", 0, 3600,
        "realistic: extra delay of each batch, random in [0, this]"),
    OPT("stall", CONFIG_STRING, stall, "", 0, 0,
        "NODE:AT:SECONDS[,...]: node NODE's stream sends nothing from AT s for SECONDS s"),
    OPT("outage", CONFIG_STRING, outage, "", 0, 0,
        "NODE:AT:SECONDS[,...]: node NODE's stream is disconnected from AT s for SECONDS s; "
        "what it sealed meanwhile is replayed after"),
    OPT_ENUM("outage_replay", outage_replay, "same", sim_replay_names,
             "after an outage, replay under the same (epoch, seq) like the agent's spool, or "
             "under a new epoch"),
    OPT("clock_offset", CONFIG_STRING, clock_offset, "", 0, 0,
        "NODE:SECONDS[,...]: node NODE's clock is off by SECONDS (record times, created_unix_ns)"),
    OPT("overload", CONFIG_DOUBLE, overload, "0", 0, 1000,
        "offer this many times the collector's capacity (sets --rate; 0: off)"),
    OPT("capacity", CONFIG_DOUBLE, capacity, "0", 0, 1e9,
        "the collector's capacity in rank-steps/s for --overload (0: measure it first)"),
    OPT("send_log", CONFIG_STRING, send_log, "", 0, 0,
        "write one JSON line per acked batch (steps, ranks, sent and acked times) to this file"),
};

static const struct config_table sim_table = {
    .program = "argus-sim",
    .summary = "simulates argus agents: N ranks over K streams with the real protocol",
    .options = sim_options,
    .count = sizeof(sim_options) / sizeof(sim_options[0]),
};

static void sim_print(const struct sim_config *c, const struct sim_result *r)
{
    printf("{\"job\": \"%s\", \"collector\": \"%s\", \"ranks\": %" PRIu64 ", \"agents\": %" PRIu64
           ", \"steps\": %" PRIu64 ", \"base_time\": %" PRIu64
           ", \"complete\": %s, \"batches_sent\": %" PRIu64 ", \"batches_acked\": %" PRIu64
           ", \"rank_steps_acked\": %" PRIu64 ", \"resent\": %" PRIu64 ", \"reconnects\": %" PRIu64
           ", \"rejects\": %" PRIu64
           ", \"elapsed_s\": %.3f, \"rank_steps_per_s\": %.0f, \"start_unix_ns\": %" PRIu64
           ", \"ack_latency_p50_ms\": %.2f, \"ack_latency_p99_ms\": %.2f, \"rate\": %.3f"
           ", \"delivery\": \"%s\", \"last_error\": \"%s\"}\n",
           c->job, c->collector, c->ranks, (c->ranks + c->ranks_per_node - 1) / c->ranks_per_node,
           c->steps, c->base_unix_ns, r->complete ? "true" : "false", r->batches_sent,
           r->batches_acked, r->rank_steps_acked, r->resent, r->reconnects, r->rejects,
           r->elapsed_s, r->elapsed_s > 0 ? r->rank_steps_acked / r->elapsed_s : 0,
           r->start_unix_ns, r->ack_latency_p50_ms, r->ack_latency_p99_ms, c->rate,
           c->rate > 0 ? sim_delivery_names[c->delivery].name : "lockstep", r->last_error);
    if (*c->scenario) {
        printf("{\"scenario\": \"%s\", \"job\": \"%s\", \"onset\": %" PRIu64
               ", \"cause\": \"%s\", \"culprits\": [",
               c->scenario, c->job, c->onset, r->truth_cause ? r->truth_cause : "");
        for (size_t i = 0; i < r->nculprits; i++)
            printf("%s%u", i ? ", " : "", r->culprits[i]);
        printf("]}\n");
    }
}

/* --collector_set: the run to the job's primary and standby, one line
 * each. Returns the exit code: 0 when both acked everything. */
static int sim_main_set(struct sim_config *c)
{
    struct sim_set_result out[2];
    struct sim_config one = *c;
    char err[300];
    int n = sim_set_run(c, out, err, sizeof(err)), rc = 0;

    if (n < 0) {
        fprintf(stderr, "argus-sim: --collector_set: %s\n", err);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        one.collector = out[i].collector;
        sim_print(&one, &out[i].r);
        free(out[i].r.culprits);
        rc |= out[i].rc != 0;
    }
    return rc;
}

/* --overload, then the delivery plan of the run (each bad option said once). */
static int sim_check_delivery(struct sim_config *c)
{
    struct delivery_plan *plan = NULL;
    char err[256];
    int r = c->verify || *c->record ? 0 : sim_overload_apply(c, err, sizeof(err));

    if (r == 0)
        r = sim_plan_new(c, &plan, err, sizeof(err));
    if (r < 0)
        fprintf(stderr, "argus-sim: %s\n", err);
    delivery_plan_free(plan);
    return r;
}

int main(int argc, char **argv)
{
    struct sim_config c = {0};
    struct config_result res;
    struct sim_result r;
    int rc;

    log_set_ident("argus-sim");
    if (config_load(&sim_table, &c, argc, argv, &res) < 0) {
        fprintf(stderr, "argus-sim: %s\n", res.error);
        config_free(&sim_table, &c);
        return 2;
    }
    if (res.help || res.print || res.man) {
        if (res.help)
            config_usage(&sim_table, stdout);
        else if (res.man)
            config_man(&sim_table, stdout);
        else
            config_print(&sim_table, &c, stdout);
        config_free(&sim_table, &c);
        return 0;
    }
    if (c.base_unix_ns == 0 && !c.verify)
        c.base_unix_ns = clock_real_ns() / NSEC_PER_SEC * NSEC_PER_SEC;
    if (c.verify && c.base_unix_ns == 0) {
        fprintf(stderr, "argus-sim: --verify needs the --base_time the run printed\n");
        config_free(&sim_table, &c);
        return 2;
    }
    if (*c.scenario && !scenario_known(c.scenario)) {
        fprintf(stderr, "argus-sim: unknown scenario '%s' (one of: %s)\n", c.scenario,
                scenario_list());
        config_free(&sim_table, &c);
        return 2;
    }
    if (c.fault_end && c.fault_end <= c.onset) {
        fprintf(stderr, "argus-sim: --fault_end %llu must be after --onset %llu\n",
                (unsigned long long)c.fault_end, (unsigned long long)c.onset);
        config_free(&sim_table, &c);
        return 2;
    }
    if (c.record_split && !*c.record) {
        fprintf(stderr, "argus-sim: --record_split needs --record FILE\n");
        config_free(&sim_table, &c);
        return 2;
    }
    if (sim_check_delivery(&c) < 0) {
        config_free(&sim_table, &c);
        return 2;
    }
    if (c.pregen || *c.scenario) {
        uint64_t per_agent = c.delivery != DELIVERY_LOCKSTEP && c.rate > 0 /* age: >= 1 step */
                                 ? c.steps
                                 : (c.steps + c.steps_per_batch - 1) / c.steps_per_batch;
        per_agent += *c.scenario ? c.liveness_for_ns / 5000000000ULL + 4 : 0; /* statuses */
        if (c.max_inflight < per_agent)
            c.max_inflight = per_agent;
    }
    if (*c.collector_set && (*c.record || *c.send_log)) {
        fprintf(stderr, "argus-sim: --collector_set sends; it takes no --record or --send_log\n");
        config_free(&sim_table, &c);
        return 2;
    }
    if (*c.collector_set) {
        rc = c.verify ? sim_set_verify(&c) : sim_main_set(&c);
    } else if (*c.record) {
        rc = sim_record(&c) < 0;
    } else if (c.verify) {
        rc = sim_verify(&c);
    } else {
        rc = sim_run(&c, &r) == 0 ? 0 : 1;
        sim_print(&c, &r);
        free(r.culprits);
    }
    config_free(&sim_table, &c);
    return rc;
}
