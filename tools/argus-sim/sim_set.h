/* argus-sim over a collector set (--collector_set): the job is placed by
 * common/collector_set.h, and every batch goes to its primary and to its
 * standby, as an agent with a hot standby sends it: one run per destination,
 * in parallel, with the same streams, epoch, sequence numbers and content.
 * --verify checks both. */
#ifndef ARGUS_SIM_SIM_SET_H
#define ARGUS_SIM_SIM_SET_H

#include <stddef.h>

#include "tools/argus-sim/sim.h"

#define SIM_SET_NAME 256

/* One destination's run. */
struct sim_set_result {
    char collector[SIM_SET_NAME]; /* its address */
    const char *role;             /* "primary" or "standby" */
    struct sim_result r;          /* r.culprits malloc'd */
    int rc;                       /* sim_run's */
};

/* Send the job to its destinations in c->collector_set. Returns how many
 * (1 or 2, out[] filled; 0 when every batch was acked is out[i].rc == 0),
 * or -EINVAL with err set (a bad list). */
int sim_set_run(const struct sim_config *c, struct sim_set_result out[2], char *err, size_t errlen);

/* sim_verify against each destination. Returns 0 when both hold the run,
 * 1 otherwise, 2 for a bad list (said on stderr). */
int sim_set_verify(const struct sim_config *c);

#endif
