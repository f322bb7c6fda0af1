/* Diagnosis counters from engine stats: see diagnosis_counters.h. */
#include "collector/diag/diagnosis_counters.h"

void diagnosis_counters_add(struct diagnosis_stats *acc, const struct diagnosis_stats *one)
{
    acc->records += one->records;
    acc->steps_closed += one->steps_closed;
    for (int r = 0; r < 5; r++)
        acc->closed_by[r] += one->closed_by[r];
    acc->late += one->late;
    acc->amended += one->amended;
    acc->dropped_horizon += one->dropped_horizon;
    acc->dropped_early += one->dropped_early;
    acc->dropped_memory += one->dropped_memory;
    acc->silent_nodes += one->silent_nodes;
    acc->silent_ranks += one->silent_ranks;
    acc->close_ns_total += one->close_ns_total;
    acc->statuses += one->statuses;
    acc->hangs += one->hangs;
    acc->deaths += one->deaths;
    acc->suppressed += one->suppressed;
    if (one->close_ns_max > acc->close_ns_max)
        acc->close_ns_max = one->close_ns_max;
}

struct diagnosis_stats diagnosis_counters_of(const struct diag_engine_stats *es)
{
    struct diagnosis_stats one = {
        .records = es->records,
        .steps_closed = es->steps_closed,
        .late = es->late,
        .amended = es->amended,
        .dropped_horizon = es->dropped_horizon,
        .dropped_early = es->dropped_early,
        .dropped_memory = es->dropped_memory,
        .silent_nodes = es->silent_nodes,
        .silent_ranks = es->silent_ranks,
        .open_steps = es->open_steps,
        .open_bytes = es->open_bytes,
        .close_ns_total = es->close_ns_total,
        .close_ns_max = es->close_ns_max,
    };

    for (int r = 0; r < DIAG_CLOSE_N && r < 5; r++)
        one.closed_by[r] = es->steps_closed_by[r];
    return one;
}

void diagnosis_counters_sum(struct diagnosis_stats *acc, const struct diag_engine_stats *es)
{
    struct diagnosis_stats one = diagnosis_counters_of(es);

    diagnosis_counters_add(acc, &one);
    acc->open_steps += one.open_steps;
    acc->open_bytes += one.open_bytes;
}
