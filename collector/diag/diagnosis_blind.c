/* A job's diagnosis shedding work, logged, reported and kept: see
 * diagnosis_job.h and diag_blind.h. */
#include "collector/diag/diagnosis_job.h"

#include "collector/diag/diag_report.h"
#include "collector/store/store.h"
#include "common/log.h"

/* An ArgusBlind report of j's episode at its time t (diag_blind.h), or
 * NULL (ENOMEM). */
static Argus__V1__Report *diagnosis_blind_report(struct diagnosis *d, struct diagnosis_job *j,
                                                 uint64_t t, const struct diag_engine_stats *es)
{
    uint32_t window = d->o.window ? d->o.window : DIAGNOSIS_DEFAULT_WINDOW;
    Argus__V1__Report *rep = diag_report_new(j->job, t + 2, 0);
    Argus__V1__Suspect *s = rep ? diag_blind_suspect(&j->blind, window) : NULL;

    if (s && diag_report_add(rep, s) == 0) {
        rep->to_step = es->closed_through ? es->closed_through - 1 : 0;
        rep->from_step =
            j->blind.ep_from_step < rep->to_step ? j->blind.ep_from_step : rep->to_step;
        diag_report_mark_pages(rep);
        if (diag_report_summarize(rep) == 0 && diag_report_identify(rep, es->closed_onset_ns) == 0)
            return rep;
    }
    diag_report_free(rep);
    return NULL;
}

Argus__V1__Report *diagnosis_blind_tick(struct diagnosis *d, struct diagnosis_job *j, uint64_t t,
                                        const struct diag_engine_stats *es)
{
    struct diag_blind_counts c = {
        .records = es->records,
        .closed = es->steps_closed,
        .budget_closes = es->steps_closed_by[DIAG_CLOSE_BUDGET],
        .shed = {es->dropped_memory, es->dropped_horizon, j->queue_shed},
    };
    int ev = diag_blind_update(&j->blind, &c, es->closed_through ? es->closed_through - 1 : 0,
                               d->o.window ? d->o.window : DIAGNOSIS_DEFAULT_WINDOW);
    char line[320], err[256];

    for (int r = 0; r < DIAG_BLIND_N; r++) {
        j->series.blind[r] = diag_blind_degraded(&j->blind, r);
        j->series.shed[r] = j->blind.shed[r];
    }
    if (ev == DIAG_BLIND_QUIET)
        return NULL;
    diag_blind_describe(&j->blind, line, sizeof(line));
    if (ev == DIAG_BLIND_BEGAN)
        log_info("diagnosis", "job %s: diagnosis sheds a little (under %.0f%%, no ArgusBlind): %s",
                 j->job, 100 * DIAG_BLIND_PAGE_SHARE, line);
    if (ev == DIAG_BLIND_PAGE)
        log_warn("diagnosis", "job %s: diagnosis sheds work (ArgusBlind): %s", j->job, line);
    if (ev == DIAG_BLIND_ENDED)
        log_info("diagnosis", "job %s: diagnosis whole again, the episode: %s", j->job, line);
    if ((ev == DIAG_BLIND_PAGE || (ev == DIAG_BLIND_ENDED && j->blind.paged)) &&
        store_put_job_blind(d->store, j->job, ev == DIAG_BLIND_ENDED ? "" : line, err,
                            sizeof(err)) < 0)
        log_error("diagnosis", "job %s: blind state not stored: %s", j->job, err);
    return ev == DIAG_BLIND_PAGE || ev == DIAG_BLIND_PAGE_AGAIN
               ? diagnosis_blind_report(d, j, t, es)
               : NULL;
}
