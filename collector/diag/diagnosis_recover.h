/* Recoveries, from diagnosis to alerts: the part of the adapter
 * (collector/diag/diagnosis.h) that takes in the engine's suspects that
 * stopped firing (diag_engine_take_recovered: a rank and cause not flagged
 * for a whole persistence window, diag.window closed steps) and gives each
 * to alerts (alerts_recovered) with every cause its alerts may carry
 * (diag_hw_causes), so an alert resolves one window after its suspects
 * recovered instead of waiting for diag.window + alerts.resolve_after
 * steps without a report (docs/operations.md, "Alerts"). */
#ifndef ARGUS_COLLECTOR_DIAGNOSIS_RECOVER_H
#define ARGUS_COLLECTOR_DIAGNOSIS_RECOVER_H

struct alerts;
struct diag_engine;

/* Hand every recovery e queued to a for job (a NULL: they are dropped).
 * Called with the job's lock held, after its reports were published (a
 * report naming the suspect comes first). Returns the number handed. */
int diagnosis_recover(struct alerts *a, const char *job, struct diag_engine *e);

#endif
