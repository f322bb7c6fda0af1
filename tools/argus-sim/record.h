/* argus-sim --record: instead of sending, write what the run would send as a
 * recorded step-records file (agent/sources/records.h) for the agent's record
 * replay (replay.records). Plain records (gen.h) or a fault scenario's
 * (--scenario, scenario.h), either for the whole job in one file or, with
 * --record_split, one file per simulated node (ranks_per_node ranks each),
 * named FILE.node<i> for node i = 0, 1, ...: a real agent per node replays
 * its own file. Every file holds its node's names and resources once, then
 * its step records in step order. */
#ifndef ARGUS_SIM_RECORD_H
#define ARGUS_SIM_RECORD_H

#include "tools/argus-sim/sim.h"

/* Write the file(s) for c (c->record is the path). Prints one JSON line on
 * stdout: {"record", "base_time", "files", and for a scenario "scenario",
 * "cause", "onset", "culprits"} (the ground truth the collector's reports
 * are judged by). Returns 0, or -errno after printing why on stderr. */
int sim_record(const struct sim_config *c);

#endif
