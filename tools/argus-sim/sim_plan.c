#include "tools/argus-sim/sim_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t sim_plan_agents(const struct sim_config *c)
{
    return (size_t)((c->ranks + c->ranks_per_node - 1) / c->ranks_per_node);
}

int sim_plan_new(const struct sim_config *c, struct delivery_plan **out, char *err, size_t errlen)
{
    size_t nagents = sim_plan_agents(c);
    struct delivery_window *stalls = NULL, *outages = NULL;
    struct delivery_offset *offsets = NULL;
    uint32_t *nranks = calloc(nagents + 1, sizeof(*nranks));
    char why[200] = "";
    long ns = delivery_parse_windows(c->stall ? c->stall : "", &stalls, why, sizeof(why));
    long no = ns < 0
                  ? ns
                  : delivery_parse_windows(c->outage ? c->outage : "", &outages, why, sizeof(why));
    long nc = no < 0 ? no
                     : delivery_parse_offsets(c->clock_offset ? c->clock_offset : "", &offsets, why,
                                              sizeof(why));
    int r = nc < 0 ? (int)nc : nranks ? 0 : -ENOMEM;

    *out = NULL;
    if (r < 0) {
        snprintf(err, errlen, "--%s: %s",
                 ns < 0   ? "stall"
                 : no < 0 ? "outage"
                          : "clock_offset",
                 why);
        goto out;
    }
    for (size_t a = 0; a < nagents; a++) {
        uint64_t first = a * c->ranks_per_node;
        nranks[a] =
            (uint32_t)(c->ranks - first < c->ranks_per_node ? c->ranks - first : c->ranks_per_node);
    }
    struct delivery_options o = {
        /* at full speed (--rate 0) there is no time to batch by: lockstep */
        .mode = c->rate > 0 ? (enum delivery_mode)c->delivery : DELIVERY_LOCKSTEP,
        .rate = c->rate,
        .steps = c->steps,
        .steps_per_batch = c->steps_per_batch,
        .max_age_ns = c->max_age_ns,
        .max_records = c->batch_max_steps,
        .start_spread_ns = c->start_spread_ns,
        .delay_ns = c->delay_ns,
        .jitter_ns = c->jitter_ns,
        .seed = c->seed,
        .stalls = stalls,
        .nstalls = (size_t)ns,
        .outages = outages,
        .noutages = (size_t)no,
        .offsets = offsets,
        .noffsets = (size_t)nc,
    };
    r = delivery_plan_new(&o, nagents, nranks, out, err, errlen);
out:
    free(stalls);
    free(outages);
    free(offsets);
    free(nranks);
    return r;
}

/* Full-speed run of plain records: the rank-steps per second acked. */
static int sim_plan_measure(const struct sim_config *c, double *capacity, char *err, size_t errlen)
{
    struct sim_config m = *c;
    struct sim_result r;
    char job[256], prefix[128];

    snprintf(job, sizeof(job), "%s-capacity", c->job);
    snprintf(prefix, sizeof(prefix), "%scapacity-", c->agent_prefix);
    m.job = job;
    m.agent_prefix = prefix;
    m.scenario = m.stall = m.outage = m.clock_offset = m.send_log = "";
    m.delivery = DELIVERY_LOCKSTEP;
    m.rate = 0;
    m.pregen = true;
    m.steps_per_batch = 4;
    m.steps = 200000 / c->ranks > 10 ? 200000 / c->ranks : 10;
    m.max_inflight = (m.steps + m.steps_per_batch - 1) / m.steps_per_batch;
    if (sim_run(&m, &r) < 0 || !(r.elapsed_s > 0)) {
        snprintf(err, errlen, "measuring the collector's capacity failed: %s", r.last_error);
        free(r.culprits);
        return -EIO;
    }
    *capacity = (double)r.rank_steps_acked / r.elapsed_s;
    free(r.culprits);
    return 0;
}

int sim_plan_overload(struct sim_config *c, char *err, size_t errlen)
{
    double capacity = c->capacity;
    int r;

    if (!(c->overload > 0))
        return 0;
    if (!(capacity > 0) && (r = sim_plan_measure(c, &capacity, err, errlen)) < 0)
        return r;
    c->capacity = capacity;
    c->rate = c->overload * capacity / (double)c->ranks;
    return 0;
}
