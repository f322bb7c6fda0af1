/* argus-sim's delivery options (tools/argus-sim/delivery.h) from its
 * configuration: the --stall, --outage and --clock_offset lists parsed and
 * the layout of agents and ranks. A leaf sim_run calls; the step rate an
 * --overload asks for is sim_overload.h, which runs the simulator. */
#ifndef ARGUS_SIM_SIM_PLAN_H
#define ARGUS_SIM_SIM_PLAN_H

#include <stddef.h>

#include "tools/argus-sim/delivery.h"
#include "tools/argus-sim/sim.h"

/* Agents of the run (ranks / ranks_per_node, rounded up). */
size_t sim_plan_agents(const struct sim_config *c);

/* The delivery plan of a run with c. Returns 0 and *out (free with
 * delivery_plan_free), or -EINVAL with a sentence in err, or -ENOMEM. */
int sim_plan_new(const struct sim_config *c, struct delivery_plan **out, char *err, size_t errlen);

#endif
