/* What comes into the engine (diag_engine.h): resources, step records and
 * progress, each under its rank's slot (diag_slots.h): the rank number is
 * translated here, on the way in, and every per-rank array grows with the
 * slots handed out, not with the highest rank number. The way out (suspects,
 * recovered suspects, where, clock offsets) is translated back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_engine_core.h"

/* Room for slot: every per-rank array grows together (doubling). */
static int reserve_slot(struct diag_engine *e, uint32_t slot)
{
    if (slot < e->ranks.cap)
        return 0;
    uint32_t cap = e->ranks.cap ? e->ranks.cap : 4;
    while (cap <= slot)
        cap *= 2;
    /* Slots inside the declared world need no doubling slack past it (at
     * 10,240 ranks that slack was 6,144 ranks of frames); slot 0 is none's. */
    if (slot <= e->ranks.world_size && e->ranks.world_size + 1 < cap)
        cap = e->ranks.world_size + 1;
    if (diag_ranks_grow(&e->ranks, cap))
        return -ENOMEM;
    struct diag_flag *fl = realloc(e->flags, (size_t)cap * DIAG_CAUSE_N * sizeof(*fl));
    if (!fl)
        return -ENOMEM;
    e->flags = fl;
    if (diag_steps_reserve(&e->win, cap) || diag_watermark_reserve(&e->wm, cap))
        return -ENOMEM;
    if (diag_persist_reserve(&e->persist, cap) || diag_rankwin_reserve(&e->rankwin, cap))
        return -ENOMEM;
    e->ranks.cap = cap;
    return 0;
}

int diag_engine_slot(struct diag_engine *e, uint32_t rank, uint32_t *slot)
{
    if (rank >= e->o.max_ranks)
        return -ERANGE;
    int err = diag_slots_get(&e->slots, rank, slot);
    return err ? err : reserve_slot(e, *slot);
}

uint32_t diag_engine_rank_of(const struct diag_engine *e, uint32_t slot)
{
    return diag_slots_rank(&e->slots, slot);
}

const struct diag_slots *diag_engine_slots(const struct diag_engine *e)
{
    return &e->slots;
}

static int check_job(struct diag_engine *e, const char *job)
{
    if (!job)
        return -EINVAL;
    if (!e->job) {
        e->job = strdup(job);
        return e->job ? 0 : -ENOMEM;
    }
    return strcmp(e->job, job) ? -EINVAL : 0;
}

int diag_engine_add_resource(struct diag_engine *e, const Argus__V1__Resource *r)
{
    Argus__V1__Resource in = *r; /* the same message under its slot */
    int err = check_job(e, r->job);

    err = err ? err : diag_engine_slot(e, r->rank, &in.rank);
    if (err) {
        e->st.rejected++;
        return err;
    }
    err = diag_ranks_set_resource(&e->ranks, &in, e->o.max_ranks);
    e->wm.world = e->ranks.world_size; /* the watermark waits for the declared world */
    return err;
}

/* A record of a closed step (f: its kept frame, NULL when gone). */
static int add_late(struct diag_engine *e, struct diag_frame *f, const Argus__V1__StepRecord *s)
{
    if (!f) {
        uint64_t *why[] = {&e->st.dropped_memory, &e->st.dropped_horizon, &e->st.dropped_early};
        (*why[diag_steps_gone_why(&e->win, s->step)])++;
        e->st.late++;
        return 1;
    }
    int err = diag_frame_add_record(f, &e->dict, s);
    if (err == 1)
        e->st.duplicates++; /* a replay of what was analysed: not late */
    if (err)
        return err < 0 ? err : 1;
    e->st.late++;
    err = diag_frame_note_amend(f, s->rank);
    if (err)
        return err;
    e->st.amended++;
    e->amend_pending = true;
    return 1;
}

/* The window slot of step, closing the oldest open steps while there is no
 * room. */
static int frame_for(struct diag_engine *e, uint64_t step, uint64_t now_ns, struct diag_frame **f)
{
    int at;

    while ((at = diag_steps_slot(&e->win, step, now_ns, f)) == DIAG_SLOT_FULL) {
        struct diag_frame *old = diag_steps_oldest(&e->win);
        int err = old ? diag_engine_close_one(e, old, now_ns, DIAG_CLOSE_BUDGET) : -ENOSPC;
        if (err)
            return err;
    }
    return at;
}

/* s (its rank a slot now) into its open step, or its closed one. */
static int add_in_slot(struct diag_engine *e, const Argus__V1__StepRecord *s, uint64_t now_ns)
{
    struct diag_frame *f = NULL;
    int err, at = frame_for(e, s->step, now_ns, &f);

    if (at < 0)
        return at;
    if (at == DIAG_SLOT_LATE) {
        err = add_late(e, f, s);
        if (err >= 0 && !e->in_batch) {
            int a = diag_engine_amend_pending(e, now_ns);
            err = a < 0 ? a : err;
        }
        return err;
    }
    err = diag_frame_add_record(f, &e->dict, s);
    if (err < 0)
        return err;
    if (err == 1) {
        e->st.duplicates++;
        return 1;
    }
    e->st.records++;
    err = diag_engine_close_ready(e, now_ns, DIAG_STEPS_NO_FORCE, DIAG_CLOSE_FLUSH);
    return err < 0 ? err : 0;
}

int diag_engine_add_step(struct diag_engine *e, const Argus__V1__StepRecord *s, uint64_t now_ns)
{
    Argus__V1__StepRecord in = *s; /* the same message under its slot */
    int err = check_job(e, s->job);

    if (!err && e->win.started && s->step > e->win.next + e->o.max_step_jump)
        err = -ERANGE; /* a broken or hostile step number would close everything */
    err = err ? err : diag_engine_slot(e, s->rank, &in.rank);
    if (err) {
        e->st.rejected++;
        return err;
    }
    diag_ranks_mark_present(&e->ranks, in.rank);
    bool first = diag_watermark_record(&e->wm, e->stream, in.rank, s->step, now_ns);
    if (first && !e->in_batch &&
        (!e->wm.world || s->rank >= e->wm.world || e->wm.seen >= e->wm.world))
        diag_watermark_update(&e->wm, now_ns); /* the rank set may be complete */
    return add_in_slot(e, &in, now_ns);
}

int diag_engine_note_progress(struct diag_engine *e, uint32_t rank, uint64_t step, uint64_t now_ns)
{
    uint32_t slot = 0;
    int err = e->win.started && step > e->win.next + e->o.max_step_jump ? -ERANGE : 0;

    err = err ? err : diag_engine_slot(e, rank, &slot);
    if (err) {
        e->st.rejected++;
        return err;
    }
    diag_watermark_record(&e->wm, e->stream, slot, step, now_ns);
    e->st.noted++;
    return 0;
}

size_t diag_engine_take_reports(struct diag_engine *e, Argus__V1__Report ***out)
{
    return diag_report_queue_take(&e->rq, out);
}

size_t diag_engine_take_recovered(struct diag_engine *e, struct diag_persist_recovery *out,
                                  size_t max)
{
    size_t n = diag_persist_take_recovered(&e->persist, out, max);

    for (size_t i = 0; i < n; i++)
        out[i].rank = diag_slots_rank(&e->slots, out[i].rank);
    return n;
}

double diag_engine_clock_offset(const struct diag_engine *e, uint32_t rank)
{
    uint32_t slot = diag_slots_find(&e->slots, rank);

    return slot ? diag_l2_offset(&e->l2, slot) : 0;
}

void diag_engine_where(void *ctx, uint32_t rank, struct diag_silence_where *out)
{
    const struct diag_engine *e = ctx;
    uint32_t slot = diag_slots_find(&e->slots, rank);

    if (slot)
        diag_engine_where_slot(ctx, slot, out);
}
