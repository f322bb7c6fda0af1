/* Recoveries to alerts: see diagnosis_recover.h. */
#include "collector/diag/diagnosis_recover.h"

#include "collector/alerts/alerts.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_hw.h"

int diagnosis_recover(struct alerts *a, const char *job, struct diag_engine *e)
{
    struct diag_persist_recovery v[64];
    size_t n;
    int total = 0;

    while ((n = diag_engine_take_recovered(e, v, sizeof(v) / sizeof(v[0]))) > 0) {
        for (size_t i = 0; i < n; i++)
            alerts_recovered(a, job, v[i].rank, diag_hw_causes(v[i].cause));
        total += (int)n;
    }
    return total;
}
