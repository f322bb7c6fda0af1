/* argus-sim's --overload: the step rate that loads the collector at a
 * factor of its capacity, measuring that capacity with a short simulator run
 * (sim_run) first when it is not given. Called by main before the real run;
 * it sits above sim.c, which never calls it. */
#ifndef ARGUS_SIM_SIM_OVERLOAD_H
#define ARGUS_SIM_SIM_OVERLOAD_H

#include <stddef.h>

#include "tools/argus-sim/sim.h"

/* --overload: set c->rate to overload x capacity / ranks, measuring the
 * collector's capacity first (a short full-speed run of plain records as job
 * "<job>-capacity") when c->capacity is 0. Returns 0 (nothing to do without
 * --overload), or -errno with a sentence in err. */
int sim_overload_apply(struct sim_config *c, char *err, size_t errlen);

#endif
