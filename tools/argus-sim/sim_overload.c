/* --overload: see sim_overload.h. */
#include "tools/argus-sim/sim_overload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/argus-sim/delivery.h"

/* Full-speed run of plain records: the rank-steps per second acked. */
static int sim_overload_measure(const struct sim_config *c, double *capacity, char *err,
                                size_t errlen)
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

int sim_overload_apply(struct sim_config *c, char *err, size_t errlen)
{
    double capacity = c->capacity;
    int r;

    if (!(c->overload > 0))
        return 0;
    if (!(capacity > 0) && (r = sim_overload_measure(c, &capacity, err, errlen)) < 0)
        return r;
    c->capacity = capacity;
    c->rate = c->overload * capacity / (double)c->ranks;
    return 0;
}
