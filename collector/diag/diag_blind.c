/* A job's diagnosis shedding work, by episode: see diag_blind.h. */
#include "collector/diag/diag_blind.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "collector/diag/diag_report.h"

const char *diag_blind_reason_name(int reason)
{
    static const char *const names[DIAG_BLIND_N] = {"memory", "horizon", "queue_full"};

    return reason >= 0 && reason < DIAG_BLIND_N ? names[reason] : "unknown";
}

/* now - was, or now when the counter started again (a new engine). */
static uint64_t blind_delta(uint64_t now, uint64_t was)
{
    return now >= was ? now - was : now;
}

static void blind_begin(struct diag_blind *b, uint64_t newest_step)
{
    b->active = true;
    b->reasons = 0;
    b->ep_records = b->ep_shed = b->ep_budget = b->ep_closed = 0;
    b->report_closed = 0;
    b->paged = false;
    b->ep_from_step = newest_step;
}

int diag_blind_update(struct diag_blind *b, const struct diag_blind_counts *c, uint64_t newest_step,
                      uint32_t window)
{
    uint64_t records = blind_delta(c->records, b->seen.records);
    uint64_t closed = blind_delta(c->closed, b->seen.closed);
    uint64_t budget = blind_delta(c->budget_closes, b->seen.budget_closes), shed = 0;
    uint32_t reasons = budget ? 1u << DIAG_BLIND_MEMORY : 0;
    int ev = DIAG_BLIND_QUIET;

    for (int r = 0; r < DIAG_BLIND_N; r++) {
        uint64_t d = blind_delta(c->shed[r], b->seen.shed[r]);
        b->shed[r] += d;
        shed += d;
        reasons |= d ? 1u << r : 0;
    }
    b->budget_closes += budget;
    b->seen = *c;
    if (reasons && !b->active) {
        blind_begin(b, newest_step);
        ev = DIAG_BLIND_BEGAN;
    }
    if (!b->active)
        return ev;
    b->reasons |= reasons;
    b->ep_records += records;
    b->ep_shed += shed;
    b->ep_budget += budget;
    b->ep_closed += closed;
    b->clean_closed = reasons ? 0 : b->clean_closed + closed;
    if (ev == DIAG_BLIND_QUIET && b->clean_closed >= window) {
        b->active = false;
        return DIAG_BLIND_ENDED;
    }
    if (diag_blind_share(b) < DIAG_BLIND_PAGE_SHARE ||
        (b->paged && b->ep_closed < b->report_closed + window))
        return ev;
    ev = b->paged ? DIAG_BLIND_PAGE_AGAIN : DIAG_BLIND_PAGE;
    b->paged = true;
    b->report_closed = b->ep_closed;
    return ev;
}

bool diag_blind_degraded(const struct diag_blind *b, int reason)
{
    return b->active && (b->reasons & (1u << reason));
}

double diag_blind_share(const struct diag_blind *b)
{
    uint64_t all = b->ep_records + b->ep_shed;

    return all ? (double)b->ep_shed / (double)all : 0.0;
}

void diag_blind_describe(const struct diag_blind *b, char *buf, size_t len)
{
    static const char *const knob[DIAG_BLIND_N] = {"diag.max_open_bytes", "diag.late_horizon",
                                                   "diag.queue_bytes"};
    size_t n = 0;
    int first = -1;

    buf[0] = '\0';
    for (int r = 0; r < DIAG_BLIND_N && n < len; r++) {
        if (!(b->reasons & (1u << r)))
            continue;
        first = first < 0 ? r : first;
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "+" : "", diag_blind_reason_name(r));
    }
    if (n < len)
        n += (size_t)snprintf(buf + n, len - n, ": ");
    if (n < len && b->ep_budget)
        n += (size_t)snprintf(buf + n, len - n, "%" PRIu64 " of %" PRIu64 " steps closed early, ",
                              b->ep_budget, b->ep_closed);
    if (n < len)
        snprintf(buf + n, len - n,
                 "%.0f%% of records not diagnosed (%" PRIu64 " of %" PRIu64 ") since step %" PRIu64
                 " (raise %s)",
                 100.0 * diag_blind_share(b), b->ep_shed, b->ep_records + b->ep_shed,
                 b->ep_from_step, first >= 0 ? knob[first] : "diag.max_open_bytes");
}

Argus__V1__Suspect *diag_blind_suspect(const struct diag_blind *b, uint32_t window)
{
    char ev[320];

    diag_blind_describe(b, ev, sizeof(ev));
    return diag_suspect_new(DIAG_RANK_NONE, "", -1, "job", ARGUS__V1__LEVEL__LEVEL_L1_ITERATION,
                            ARGUS__V1__CAUSE__CAUSE_DIAG_BLIND, "diagnosis", diag_blind_share(b),
                            (uint32_t)(b->ep_closed < window ? b->ep_closed : window), window, ev);
}
