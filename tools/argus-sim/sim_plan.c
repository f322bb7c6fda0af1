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
