/* Whether argus is blind in part to a job (docs/operations.md, "When
 * diagnosis sheds work"). It takes in, at each tick of the job, what its
 * diagnosis counted (records diagnosed, steps closed, steps closed early for
 * the memory budget, late records not diagnosed because their step's kept
 * frame was freed for memory or lies beyond the late horizon, records the
 * full queue kept from diagnosis) and gives out the job's degraded state by
 * reason, its shed totals, and episodes: one begins at the first tick with
 * anything shed and ends once window steps closed with nothing shed; it
 * says when the episode pages: once it shed DIAG_BLIND_PAGE_SHARE of the
 * records it saw (a few records of a catch-up do not page), then every
 * window closed steps while it lasts. The caller logs, marks the job, and
 * publishes a DIAG_BLIND report (a job-level suspect that pages: alert
 * ArgusBlind, severity warning) at each page, so the alert stays open as
 * long as the job is diagnosed in part, and resolves after. Records of steps before the job's
 * diagnosis began (a late start) are not shed: nothing was diagnosed yet.
 * Pure; the caller holds the job's lock. */
#ifndef ARGUS_COLLECTOR_DIAG_BLIND_H
#define ARGUS_COLLECTOR_DIAG_BLIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/argus.pb-c.h"

#define DIAG_BLIND_PAGE_SHARE 0.05 /* an episode pages once it shed this share */

enum diag_blind_reason {
    DIAG_BLIND_MEMORY = 0,  /* steps closed early, late records dropped: diag.max_open_bytes */
    DIAG_BLIND_HORIZON = 1, /* late records of steps closed more than diag.late_horizon ago */
    DIAG_BLIND_QUEUE = 2,   /* batches the full queue kept from diagnosis: diag.queue_bytes */
    DIAG_BLIND_N = 3,
};

/* "memory", "horizon", "queue_full" (the /metrics reason label). */
const char *diag_blind_reason_name(int reason);

/* What the job's diagnosis counted so far (monotonic; a new engine starts
 * again from 0, which is taken as such). */
struct diag_blind_counts {
    uint64_t records;       /* diagnosed */
    uint64_t closed;        /* steps closed */
    uint64_t budget_closes; /* of those, closed early for memory */
    uint64_t shed[DIAG_BLIND_N];
};

enum diag_blind_event {
    DIAG_BLIND_QUIET = 0,      /* nothing to say */
    DIAG_BLIND_BEGAN = 1,      /* an episode began, under DIAG_BLIND_PAGE_SHARE: log */
    DIAG_BLIND_PAGE = 2,       /* the episode reached DIAG_BLIND_PAGE_SHARE: log, mark, report */
    DIAG_BLIND_PAGE_AGAIN = 3, /* window more steps closed in a paging episode: report again */
    DIAG_BLIND_ENDED = 4,      /* window steps closed with nothing shed: log (unmark if paged) */
};

struct diag_blind {
    struct diag_blind_counts seen; /* at the last update */
    uint64_t shed[DIAG_BLIND_N];   /* records shed since the job's state began */
    uint64_t budget_closes;        /* steps closed early since then */
    bool active;                   /* in an episode */
    uint32_t reasons;              /* bits (1 << reason) shed in this episode */
    uint64_t ep_records, ep_shed;  /* the episode's records diagnosed and shed */
    uint64_t ep_budget, ep_closed; /* its steps closed early, and closed */
    uint64_t clean_closed;         /* steps closed since the last shed */
    uint64_t report_closed;        /* ep_closed at its last page */
    uint64_t ep_from_step;         /* the job's newest closed step when it began */
    bool paged;                    /* the episode paged (stays set at ENDED for the caller) */
};

/* Take the counts of this tick (newest_step: the job's newest closed step).
 * Returns what happened (enum diag_blind_event): an episode pages once it
 * shed DIAG_BLIND_PAGE_SHARE of the records it saw, then again every window
 * closed steps while it lasts. */
int diag_blind_update(struct diag_blind *b, const struct diag_blind_counts *c, uint64_t newest_step,
                      uint32_t window);

/* True while reason is shed in the current episode. */
bool diag_blind_degraded(const struct diag_blind *b, int reason);

/* The share (0..1) of the episode's records (diagnosed + shed) shed. */
double diag_blind_share(const struct diag_blind *b);

/* One line for the log, the report and `argusctl jobs`: "memory: 28 steps
 * closed early, 62% of records not diagnosed since step 812 (raise
 * diag.max_open_bytes)". */
void diag_blind_describe(const struct diag_blind *b, char *buf, size_t len);

/* The DIAG_BLIND suspect of the episode (score: the share shed), for a
 * report of job. NULL on ENOMEM. */
Argus__V1__Suspect *diag_blind_suspect(const struct diag_blind *b, uint32_t window);

#endif
