/* Online diagnosis of one job: see diag_engine.h. This file composes the
 * parts, each a module it calls and that calls back only through the
 * callbacks it is given (the silence check's where, the name lookup): the ranks and
 * their groups (diag_ranks.h), the window of open steps (diag_steps.h), the
 * watermark and silence (diag_watermark.h, diag_silence.h), the levels
 * (diag_l1/l2/l3.h), persistence, late amendments (diag_amend.h) and the
 * report queue (diag_report.h). */
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_engine_core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/diag/diag_amend.h"
#include "collector/diag/diag_cost.h"
#include "collector/diag/diag_evidence.h"
#include "collector/diag/diag_pipeline.h"
#include "collector/diag/diag_rankwin.h"
#include "collector/diag/diag_ranks.h"
#include "collector/diag/diag_silence.h"
#include "collector/diag/diag_steps.h"
#include "collector/diag/diag_watermark.h"
#include "common/causes.h"
#include "common/clock.h"

static void options_defaults(struct diag_options *o)
{
    if (!o->step_timeout_ns)
        o->step_timeout_ns = 10ULL * 1000000000ULL;
    if (!o->stream_hold_ns)
        o->stream_hold_ns = 10ULL * 1000000000ULL;
    if (!o->silence_ns)
        o->silence_ns = 30ULL * 1000000000ULL;
    if (!o->max_open_bytes)
        o->max_open_bytes = 256ULL << 20;
    if (!o->late_horizon)
        o->late_horizon = 40;
    if (!o->max_ranks)
        o->max_ranks = 65536;
    if (!o->window || o->window > 64)
        o->window = 40;
    if (!o->min_hits || o->min_hits > o->window)
        o->min_hits = o->window * 3 / 5;
    if (!o->report_every)
        o->report_every = o->window;
    if (!o->skew_min_ranks)
        o->skew_min_ranks = 4;
    if (!o->max_reports)
        o->max_reports = 1024;
    if (!o->max_step_jump)
        o->max_step_jump = 1000000;
}

struct diag_engine *diag_engine_new(const struct diag_options *o)
{
    struct diag_engine *e = calloc(1, sizeof(*e));

    if (!e)
        return NULL;
    if (o)
        e->o = *o;
    options_defaults(&e->o);
    e->rq.max = e->o.max_reports;
    e->job = e->o.job ? strdup(e->o.job) : NULL;
    e->o.job = NULL;
    diag_watermark_init(&e->wm, e->o.stream_hold_ns);
    if ((o && o->job && !e->job) ||
        diag_steps_init(&e->win, e->o.max_open_bytes, e->o.late_horizon) ||
        diag_watermark_stream(&e->wm, "") != 0) {
        diag_engine_free(e);
        return NULL;
    }
    diag_l1_init(&e->l1, &e->o.l1);
    diag_l2_init(&e->l2, &e->o.l2);
    diag_l3_init(&e->l3, &e->o.l3);
    diag_persist_init(&e->persist, e->o.window, e->o.min_hits);
    diag_rankwin_init(&e->rankwin, e->o.window);
    diag_cost_init(&e->cost);
    return e;
}

void diag_engine_free(struct diag_engine *e)
{
    if (!e)
        return;
    diag_ranks_free(&e->ranks);
    diag_steps_free(&e->win);
    diag_watermark_free(&e->wm);
    free(e->flags);
    diag_l2_free(&e->l2);
    diag_l3_free(&e->l3);
    diag_persist_free(&e->persist);
    diag_rankwin_free(&e->rankwin);
    diag_cost_free(&e->cost);
    diag_report_queue_free(&e->rq);
    diag_slots_free(&e->slots);
    free(e->job);
    free(e);
}

/* Cost rep and queue it when it has suspects (window ending at to_step, the
 * newest closed step: its onset is the id's), else free it. */
static int finish_report(struct diag_engine *e, Argus__V1__Report *rep, uint64_t to_step)
{
    int err = diag_cost_report(&e->cost, rep, to_step, e->o.window);

    if (err)
        return diag_report_free(rep), err;
    for (size_t i = 0; i < rep->n_suspects; i++) /* slots inside, ranks outside */
        rep->suspects[i]->rank = diag_slots_rank(&e->slots, rep->suspects[i]->rank);
    return diag_report_queue_finish(&e->rq, rep, to_step, e->o.window, e->st.closed_onset_ns);
}

static int add_rank_suspect(struct diag_engine *e, Argus__V1__Report *rep, uint32_t r, int c)
{
    const struct diag_flag *f = &e->persist.last[(size_t)r * DIAG_CAUSE_N + c];
    struct diag_namer nm = {e->o.name, e->o.name_ctx, &e->dict};
    struct diag_rank_evidence re;
    char ev[1024], where[128];
    uint32_t hits = diag_persist_hits(&e->persist, r, c), n = 0;
    const char *group = diag_groups_label_of(f->expert ? &e->ranks.xgroups : &e->ranks.groups, r);
    uint32_t g = r < e->ranks.groups.n_ranks ? e->ranks.groups.group_of[r] : DIAG_GROUP_NONE;
    const uint32_t *mem =
        g == DIAG_GROUP_NONE ? NULL : diag_groups_members(&e->ranks.groups, g, &n);

    if (diag_rankwin_get(&e->rankwin, r, mem, n, &re))
        return -ENOMEM;
    diag_evidence_flag(&nm, f, c, group, hits, e->o.window, &re, ev, sizeof(ev));
    diag_evidence_where(&nm, f, where, sizeof(where));
    Argus__V1__Suspect *s =
        diag_suspect_new(r, e->ranks.ri[r].node, e->ranks.ri[r].gpu, group, f->level,
                         diag_hw_cause(c, &re.hw), where, f->score, hits, e->o.window, ev);
    return s ? diag_report_add(rep, s) : -ENOMEM;
}

static int add_job_suspect(struct diag_engine *e, Argus__V1__Report *rep, Argus__V1__Level lv,
                           Argus__V1__Cause cause, const char *where, double score, uint32_t hits,
                           const char *ev)
{
    Argus__V1__Suspect *s = diag_suspect_new(DIAG_RANK_NONE, "", -1, "job", lv, cause, where, score,
                                             hits, e->o.window, ev);
    return s ? diag_report_add(rep, s) : -ENOMEM;
}

/* Rank suspects that persisted: new ones always, all firing ones when a
 * periodic report is due. Resolved ones stop firing. */
static int persisted_suspects(struct diag_engine *e, Argus__V1__Report *rep, bool on_close)
{
    bool periodic = on_close && (e->st.steps_closed + 1) % e->o.report_every == 0;
    int err = 0;

    for (uint32_t r = 0; r < e->ranks.cap && !err; r++) {
        for (int c = 0; c < DIAG_CAUSE_N && !err; c++) {
            size_t i = (size_t)r * DIAG_CAUSE_N + c;
            bool was = diag_persist_settle(&e->persist, r, c); /* a recovery is queued */
            if (e->persist.firing[i] && (!was || periodic))
                err = add_rank_suspect(e, rep, r, c);
        }
    }
    return err;
}

/* Rotating slowness: many ranks flagged briefly over most of the window,
 * for slow compute or for more work (a rank late with its host's counters
 * normal). */
static int skew_suspect(struct diag_engine *e, const struct diag_frame *f, Argus__V1__Report *rep)
{
    uint32_t ranks, steps, iranks, isteps;
    char ev[256];

    diag_persist_rotation(&e->persist, DIAG_CAUSE_COMPUTE, e->ranks.cap, &ranks, &steps);
    diag_persist_rotation(&e->persist, DIAG_CAUSE_IMBALANCE, e->ranks.cap, &iranks, &isteps);
    if (iranks * isteps > ranks * steps) {
        ranks = iranks;
        steps = isteps;
    }
    bool skew = ranks >= e->o.skew_min_ranks && steps * 2 >= e->o.window;
    if (!skew) {
        e->skew_reported = false;
        return 0;
    }
    if (e->skew_reported && f->step - e->last_skew_step < e->o.report_every)
        return 0;
    e->skew_reported = true;
    e->last_skew_step = f->step;
    diag_evidence_skew(ev, sizeof(ev), ranks, steps, e->o.window);
    return add_job_suspect(e, rep, ARGUS__V1__LEVEL__LEVEL_L2_PHASE,
                           ARGUS__V1__CAUSE__CAUSE_DATA_SKEW, "compute phases", ranks, steps, ev);
}

static int spike_suspect(struct diag_engine *e, const struct diag_l1_event *ev,
                         Argus__V1__Report *rep)
{
    const struct step_note *best = NULL;
    char text[320];

    for (int i = 0; i < SPIKE_RING; i++) {
        const struct step_note *n = &e->notes[i];
        if (n->step >= ev->spike_from && n->step <= ev->spike_to && n->late_rank != UINT32_MAX &&
            (!best || n->late_ns > best->late_ns))
            best = n;
    }
    uint32_t rank = best ? best->late_rank : ev->spike_rank;
    int why = best ? best->why : DIAG_SPIKE_HOST;
    Argus__V1__Cause cause = why == DIAG_SPIKE_COMPUTE ? ARGUS__V1__CAUSE__CAUSE_COMPUTE
                             : why == DIAG_SPIKE_WORK  ? ARGUS__V1__CAUSE__CAUSE_IMBALANCE
                                                       : ARGUS__V1__CAUSE__CAUSE_HOST;
    diag_evidence_spike(text, sizeof(text), ev->spike_from, ev->spike_to, ev->spike_peak_ns,
                        ev->spike_median_ns, diag_slots_rank(&e->slots, rank),
                        best ? best->late_ns : 0, why);
    uint32_t hits = (uint32_t)(ev->spike_to - ev->spike_from + 1);
    Argus__V1__Suspect *s = diag_suspect_new(
        rank, rank < e->ranks.cap ? e->ranks.ri[rank].node : "",
        rank < e->ranks.cap ? e->ranks.ri[rank].gpu : -1,
        diag_groups_label_of(&e->ranks.groups, rank), ARGUS__V1__LEVEL__LEVEL_L1_ITERATION, cause,
        "step time", ev->spike_peak_ns / ev->spike_median_ns, hits, e->o.window, text);
    return s ? diag_report_add(rep, s) : -ENOMEM;
}

/* A level shift of T that the phases or kernels of the whole job confirm. */
static int regression_suspect(struct diag_engine *e, const struct diag_l1_event *ev,
                              const struct diag_l2_result *r2, const struct diag_l3_result *r3,
                              Argus__V1__Report *rep)
{
    struct diag_namer nm = {e->o.name, e->o.name_ctx, &e->dict};
    char text[400], where[128];
    double min_rel = e->l3.o.job_min_rel;

    diag_l1_rebase(&e->l1);
    if (r2->job_phase_shift < min_rel && r3->job_shift < min_rel)
        return 0; /* explained by suspects, or not broad: no job finding */
    bool by_phase = r2->job_phase_shift >= r3->job_shift;
    if (by_phase && r2->job_phase == DIAG_L2_JOB_BUSY)
        snprintf(where, sizeof(where), "compute kernel time");
    else if (by_phase)
        diag_evidence_name(&nm, e->dict.phase[r2->job_phase], where, sizeof(where));
    else
        diag_evidence_name(&nm, e->dict.kernel[r3->job_kernel], where, sizeof(where));
    diag_evidence_regression(text, sizeof(text), ev->regression_ratio, ev->regression_from,
                             by_phase ? "" : "kernel ", where,
                             1 + (by_phase ? r2->job_phase_shift : r3->job_shift),
                             r3->job_shift >= min_rel && by_phase);
    diag_l2_rebase(&e->l2);
    diag_l3_rebase(&e->l3);
    return add_job_suspect(e, rep, ARGUS__V1__LEVEL__LEVEL_L1_ITERATION,
                           ARGUS__V1__CAUSE__CAUSE_JOB_REGRESSION, where, ev->regression_ratio,
                           e->l1.o.cp_recent, text);
}

/* T_k (max step time over ranks) and the rank that set it; the median goes
 * into the engine's stats. L2 has run on f, so its scratch holds f->cap
 * doubles and is free until the next step. */
static void job_series(struct diag_engine *e, const struct diag_frame *f, double *t, uint32_t *rank)
{
    double *d = e->l2.scratch;
    size_t n = 0;

    *t = 0;
    *rank = 0;
    for (uint32_t r = 0; r < f->cap; r++) {
        if (!f->ranks[r].present)
            continue;
        d[n++] = (double)f->ranks[r].duration_ns;
        if ((double)f->ranks[r].duration_ns > *t) {
            *t = (double)f->ranks[r].duration_ns;
            *rank = r;
        }
    }
    if (f->step + 1 >= e->st.closed_through) { /* not an amended older step */
        e->st.closed_through = f->step + 1;
        e->st.closed_onset_ns = f->onset_ns;
        e->st.last_step_max_ns = *t;
        e->st.last_step_p50_ns = diag_stats_median_inplace(d, n);
    }
}

/* The levels, in order, on one closed frame; findings into rep. */
static int analyse(struct diag_engine *e, struct diag_frame *f, Argus__V1__Report *rep)
{
    struct diag_l2_result r2;
    struct diag_l3_result r3;
    struct diag_l1_event ev;
    double t;
    uint32_t trank;

    memset(e->flags, 0, (size_t)e->ranks.cap * DIAG_CAUSE_N * sizeof(*e->flags));
    diag_dict_classify(&e->dict, e->o.name, e->o.name_ctx);
    int err = diag_l2_run(&e->l2, f, &e->dict, &e->ranks.groups, &e->ranks.xgroups, e->flags, &r2);
    if (!err) {
        int cleared = diag_pipeline_resolve(e->ranks.coords, e->ranks.cap, &e->dict, e->flags);
        err = cleared < 0 ? cleared : 0;
    }
    err = err ? err : diag_l3_run(&e->l3, f, &e->dict, &e->ranks.groups, e->flags, &r3);
    if (err)
        return err;
    struct step_note *note = &e->notes[f->step % SPIKE_RING];
    note->step = f->step;
    note->late_rank = r2.late_rank;
    note->late_ns = r2.late_ns;
    const struct diag_flag *lf =
        r2.late_rank == UINT32_MAX ? NULL : &e->flags[(size_t)r2.late_rank * DIAG_CAUSE_N];
    note->why = lf && lf[DIAG_CAUSE_COMPUTE].set ? DIAG_SPIKE_COMPUTE
                : lf && lf[DIAG_CAUSE_HOST].set && lf[DIAG_CAUSE_HOST].kind == DIAG_WHERE_RUNQ
                    ? DIAG_SPIKE_STARVED
                : lf && lf[DIAG_CAUSE_IMBALANCE].set ? DIAG_SPIKE_WORK
                                                     : DIAG_SPIKE_HOST;
    diag_rankwin_step(&e->rankwin, f, &e->l2.cm);
    err = diag_rankwin_flag(&e->rankwin, &e->ranks.groups, e->flags, e->ranks.cap, &e->persist);
    if (err < 0)
        return err;
    diag_persist_step(&e->persist, e->flags, e->ranks.cap);
    job_series(e, f, &t, &trank);
    diag_l1_step(&e->l1, f->step, t, trank, &ev);
    err = diag_cost_note_step(&e->cost, f, e->l2.cm.wait, e->l2.cm.cap, &e->ranks.groups);
    err = err ? err : persisted_suspects(e, rep, true);
    err = err ? err : skew_suspect(e, f, rep);
    if (!err && ev.spike)
        err = spike_suspect(e, &ev, rep);
    if (!err && ev.regression)
        err = regression_suspect(e, &ev, &r2, &r3, rep);
    return err;
}

/* Build the peer groups and clock domains when ranks or coordinates
 * changed. 0 or -ENOMEM. */
static int build_groups(struct diag_engine *e)
{
    int err = diag_ranks_build(&e->ranks);

    e->l2.cm.domain = e->ranks.domain;
    e->l2.cm.n_domain = e->ranks.n_domain;
    return err;
}

static int close_frame(struct diag_engine *e, struct diag_frame *f, uint64_t now_ns,
                       enum diag_close_reason why)
{
    uint64_t t0 = clock_mono_ns();
    int err = build_groups(e);

    if (err)
        return err;
    Argus__V1__Report *rep = diag_report_queue_new(&e->rq, e->job, now_ns);
    if (!rep)
        return -ENOMEM;
    err = analyse(e, f, rep);
    e->st.steps_closed++;
    e->st.steps_closed_by[why]++;
    e->st.steps_timed_out += why == DIAG_CLOSE_TIMEOUT || why == DIAG_CLOSE_BUDGET;
    if (err)
        diag_report_free(rep);
    else
        err = finish_report(e, rep, f->step);
    uint64_t dt = clock_mono_ns() - t0;
    e->st.close_ns_total += dt;
    e->st.close_ns_max = dt > e->st.close_ns_max ? dt : e->st.close_ns_max;
    return err;
}

int diag_engine_close_one(struct diag_engine *e, struct diag_frame *f, uint64_t now_ns,
                          enum diag_close_reason why)
{
    uint64_t seq = e->st.steps_closed;
    int err = close_frame(e, f, now_ns, why);

    diag_steps_closed(&e->win, f, seq);
    return err;
}

/* Close the oldest open steps that are ready (diag_steps_ready) and those
 * before force_upto. Returns the number closed or -errno. */
int diag_engine_close_ready(struct diag_engine *e, uint64_t now_ns, uint64_t force_upto,
                            enum diag_close_reason force_reason)
{
    enum diag_close_reason why;
    struct diag_frame *f;
    int closed = 0;

    for (;;) {
        uint32_t expect = e->wm.live == UINT32_MAX ? 0 : e->wm.live;
        f = diag_steps_ready(&e->win, now_ns, expect, e->wm.mark, e->o.step_timeout_ns, force_upto,
                             force_reason, &why);
        if (!f)
            break;
        int err = diag_engine_close_one(e, f, now_ns, why);
        if (err)
            return err;
        closed++;
    }
    return closed;
}

/* Analyse the kept frames that got late records; the late ranks' findings
 * join their persistence history, and a suspect that now persisted pages. */
int diag_engine_amend_pending(struct diag_engine *e, uint64_t now_ns)
{
    struct diag_amend a = {
        &e->l2,       &e->l3,   &e->dict,    &e->ranks.groups, &e->ranks.xgroups, e->ranks.coords,
        e->ranks.cap, e->flags, &e->persist, e->o.name,        e->o.name_ctx};
    uint64_t beyond = 0;
    int err;

    if (!e->amend_pending)
        return 0;
    err = build_groups(e);
    if (!err)
        err = diag_amend_window(&a, &e->win, e->st.steps_closed, &beyond);
    e->st.dropped_horizon += beyond; /* closed too long ago for the window */
    e->st.amended -= beyond;
    if (err)
        return err;
    e->amend_pending = false;
    Argus__V1__Report *rep = diag_report_queue_new(&e->rq, e->job, now_ns);
    if (!rep)
        return -ENOMEM;
    err = persisted_suspects(e, rep, false);
    return err ? (diag_report_free(rep), err) : finish_report(e, rep, e->win.next - 1);
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

void diag_engine_where_slot(void *ctx, uint32_t slot, struct diag_silence_where *out)
{
    struct diag_engine *e = ctx;

    if (slot >= e->ranks.cap)
        return;
    out->node = e->ranks.ri[slot].node ? e->ranks.ri[slot].node : "";
    out->gpu = e->ranks.ri[slot].gpu;
    out->group = diag_groups_label_of(&e->ranks.groups, slot);
}

/* Report the ranks and streams that went silent (diag_silence.h). */
static int check_silence(struct diag_engine *e, uint64_t now_ns)
{
    struct diag_silence_counts n;
    Argus__V1__Report *rep = diag_report_queue_new(&e->rq, e->job ? e->job : "", now_ns);

    if (!rep)
        return -ENOMEM;
    struct diag_silence_env env = {diag_engine_where_slot, e, &e->slots, e->o.link, e->o.link_ctx};
    int err = diag_silence_check(&e->wm, e->o.silence_ns, now_ns, e->o.window, &env, rep, &n);
    e->st.silent_nodes += n.nodes;
    e->st.silent_ranks += n.ranks;
    if (err)
        return diag_report_free(rep), err;
    return finish_report(e, rep, e->win.next ? e->win.next - 1 : 0);
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

uint64_t diag_engine_steps_closed(const struct diag_engine *e)
{
    return e->st.steps_closed;
}

void diag_engine_get_stats(const struct diag_engine *e, struct diag_engine_stats *out)
{
    *out = e->st;
    out->reports = e->rq.queued;
    out->reports_dropped = e->rq.dropped;
    out->names_overflow = e->dict.overflow;
    out->open_steps = e->win.open;
    out->open_bytes = diag_steps_bytes(&e->win);
    out->newest_step = e->wm.newest_step;
    out->watermark = e->wm.mark;
}
