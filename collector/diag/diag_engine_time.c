/* The engine's time (diag_engine.h): batches from agent streams, the
 * watermark, late records that amend closed steps, silence, ticks. */
#include <errno.h>
#include <stdlib.h>

#include "collector/diag/diag_amend.h"
#include "collector/diag/diag_engine_impl.h"
#include "collector/diag/diag_silence.h"

/* Analyse the kept frames that got late records; the late ranks' findings
 * join their persistence history, and a suspect that now persisted pages. */
int diag_engine_amend_pending(struct diag_engine *e, uint64_t now_ns)
{
    struct diag_amend a = {&e->l2, &e->l3,   &e->dict,    &e->groups, &e->xgroups,  e->coords,
                           e->cap, e->flags, &e->persist, e->o.name,  e->o.name_ctx};
    int err = e->amend_pending ? diag_engine_build_groups(e) : 0;

    for (uint32_t i = 0; e->amend_pending && !err && i < e->win.n; i++) {
        struct diag_frame *f = &e->win.frames[i];
        if (!f->used || !f->closed || !f->n_amend)
            continue;
        uint64_t age = e->st.steps_closed - 1 - f->close_seq;
        uint32_t n = f->n_amend;
        err = diag_amend_frame(&a, f, age > UINT32_MAX ? UINT32_MAX : (uint32_t)age);
        if (err == 0) {
            e->st.dropped_horizon += n; /* closed too long ago for the window */
            e->st.amended -= n;
        }
        err = err < 0 ? err : 0;
    }
    if (!e->amend_pending || err)
        return err;
    e->amend_pending = false;
    Argus__V1__Report *rep = diag_report_new(e->job, now_ns, e->report_seq + 1);
    if (!rep)
        return -ENOMEM;
    err = diag_engine_persisted_suspects(e, rep, false);
    return err ? (diag_report_free(rep), err) : diag_engine_finish_report(e, rep, e->win.next - 1);
}

/* A record of a closed step (f: its kept frame, NULL when gone). */
int diag_engine_add_late(struct diag_engine *e, struct diag_frame *f,
                         const Argus__V1__StepRecord *s)
{
    if (!f) {
        e->st.late++;
        if (s->step + e->o.late_horizon < e->win.next)
            e->st.dropped_horizon++;
        else
            e->st.dropped_memory++;
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

int diag_engine_begin_batch(struct diag_engine *e, const char *agent_id, uint64_t recv_ns)
{
    int idx = diag_watermark_stream(&e->wm, agent_id ? agent_id : "");

    if (idx < 0)
        return idx;
    e->stream = (uint32_t)idx;
    e->in_batch = true;
    return 0;
}

/* Late records wait for the next tick to amend their steps: a step is
 * analysed again once per tick, not once per batch (at 10,240 ranks a
 * backlog of late batches re-analysed the same steps for every batch and
 * diagnosis fell minutes behind). */
int diag_engine_end_batch(struct diag_engine *e, uint64_t now_ns)
{
    e->in_batch = false;
    e->stream = 0;
    diag_watermark_update(&e->wm, now_ns);
    return diag_engine_close_ready(e, now_ns, DIAG_STEPS_NO_FORCE, DIAG_CLOSE_FLUSH);
}

static void silence_where(void *ctx, uint32_t rank, struct diag_silence_where *out)
{
    struct diag_engine *e = ctx;

    if (rank >= e->cap)
        return;
    out->node = e->ri[rank].node ? e->ri[rank].node : "";
    out->gpu = e->ri[rank].gpu;
    out->group = diag_engine_group_label(e, rank);
}

/* Report the ranks and streams that went silent (diag_silence.h). */
static int check_silence(struct diag_engine *e, uint64_t now_ns)
{
    struct diag_silence_counts n;
    Argus__V1__Report *rep = diag_report_new(e->job ? e->job : "", now_ns, e->report_seq + 1);

    if (!rep)
        return -ENOMEM;
    int err =
        diag_silence_check(&e->wm, e->o.silence_ns, now_ns, e->o.window, silence_where, e, rep, &n);
    e->st.silent_nodes += n.nodes;
    e->st.silent_ranks += n.ranks;
    if (err)
        return diag_report_free(rep), err;
    return diag_engine_finish_report(e, rep, e->win.next ? e->win.next - 1 : 0);
}

int diag_engine_tick(struct diag_engine *e, uint64_t now_ns)
{
    diag_watermark_update(&e->wm, now_ns);
    int err = diag_engine_amend_pending(e, now_ns);
    int closed =
        err < 0 ? err : diag_engine_close_ready(e, now_ns, DIAG_STEPS_NO_FORCE, DIAG_CLOSE_FLUSH);
    if (closed < 0)
        return closed;
    struct diag_frame *old = diag_steps_oldest(&e->win);
    e->st.lag_s = diag_watermark_lag_s(&e->wm, old ? old->first_ns : 0, now_ns);
    err = check_silence(e, now_ns);
    return err < 0 ? err : closed;
}

int diag_engine_flush(struct diag_engine *e, uint64_t now_ns)
{
    int err = diag_engine_amend_pending(e, now_ns);

    return err < 0 ? err : diag_engine_close_ready(e, now_ns, UINT64_MAX, DIAG_CLOSE_FLUSH);
}

void diag_engine_get_stats(const struct diag_engine *e, struct diag_engine_stats *out)
{
    *out = e->st;
    out->names_overflow = e->dict.overflow;
    out->open_steps = e->win.open;
    out->open_bytes = diag_steps_bytes(&e->win);
    out->newest_step = e->wm.newest_step;
    out->watermark = e->wm.mark;
}
