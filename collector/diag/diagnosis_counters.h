/* The collector's diagnosis counters (diagnosis.h's struct diagnosis_stats)
 * from its engines' stats (diag_engine.h): one engine's in the collector's
 * terms, and sums over engines, live and retired. Pure. */
#ifndef ARGUS_COLLECTOR_DIAGNOSIS_COUNTERS_H
#define ARGUS_COLLECTOR_DIAGNOSIS_COUNTERS_H

#include "collector/diag/diag_engine.h"
#include "collector/diag/diagnosis.h"

/* Add the counters of one (not its gauges) to acc. */
void diagnosis_counters_add(struct diagnosis_stats *acc, const struct diagnosis_stats *one);

/* One engine's stats in the collector's terms. */
struct diagnosis_stats diagnosis_counters_of(const struct diag_engine_stats *es);

/* Add one engine's counters and gauges to acc. */
void diagnosis_counters_sum(struct diagnosis_stats *acc, const struct diag_engine_stats *es);

#endif
