#include "collector/diag/recent_suspects.h"

#include <stdbool.h>
#include <stdio.h>

#include "collector/diag/diag_report.h"
#include "common/causes.h"

/* The entry for (rank, cause): its own, a free one, or the oldest. */
static struct recent_suspect *recent_suspects_slot(struct recent_suspects *r, uint32_t rank,
                                                   int cause)
{
    struct recent_suspect *oldest = &r->v[0];

    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].rank == rank && r->v[i].cause == cause)
            return &r->v[i];
    if (r->n < RECENT_SUSPECTS_MAX)
        return &r->v[r->n++];
    for (size_t i = 1; i < r->n; i++)
        if (r->v[i].to_step < oldest->to_step)
            oldest = &r->v[i];
    return oldest;
}

void recent_suspects_note(struct recent_suspects *r, const Argus__V1__Report *rep)
{
    for (size_t i = 0; i < rep->n_suspects; i++) {
        const Argus__V1__Suspect *s = rep->suspects[i];
        size_t before = r->n;
        struct recent_suspect *slot = recent_suspects_slot(r, s->rank, (int)s->cause);
        bool again = r->n == before && slot->rank == s->rank && slot->cause == (int)s->cause &&
                     slot->to_step == rep->to_step;
        if (causes_known((int)s->cause))
            r->gpu_hours_lost[s->cause] += s->gpu_hours_lost - (again ? slot->gpu_hours : 0);
        *slot = (struct recent_suspect){.rank = s->rank,
                                        .cause = (int)s->cause,
                                        .level = (int)s->level,
                                        .gpu = s->gpu,
                                        .score = s->score,
                                        .slowdown = s->slowdown,
                                        .to_step = rep->to_step,
                                        .gpu_hours = s->gpu_hours_lost};
        snprintf(slot->node, sizeof(slot->node), "%s", s->node ? s->node : "");
    }
}

/* x is the top straggler of s. */
static void recent_suspects_top(const struct recent_suspect *x, struct diagnosis_job_series *s)
{
    s->has_top = true;
    s->top_rank = x->rank;
    s->top_cause = x->cause;
    s->top_level = x->level;
    s->top_gpu = x->gpu;
    snprintf(s->top_node, sizeof(s->top_node), "%s", x->node);
    s->top_slowdown = x->slowdown;
    s->top_score = x->score;
}

void recent_suspects_summarize(const struct recent_suspects *r, uint32_t window,
                               struct diagnosis_job_series *s)
{
    uint64_t horizon = 2 * (uint64_t)window;

    for (int c = 0; c < CAUSES_MAX; c++) {
        s->suspects[c] = 0;
        s->gpu_hours_lost[c] = r->gpu_hours_lost[c];
    }
    s->has_top = false;
    for (size_t i = 0; i < r->n; i++) {
        const struct recent_suspect *x = &r->v[i];
        if (s->has_step && x->to_step + horizon < s->step)
            continue; /* not named for two windows: recovered */
        if (causes_known(x->cause))
            s->suspects[x->cause]++;
        if (x->rank == DIAG_RANK_NONE || !causes_pages(x->cause) || !(x->slowdown > 0))
            continue;
        if (!s->has_top || x->slowdown > s->top_slowdown)
            recent_suspects_top(x, s);
    }
}
