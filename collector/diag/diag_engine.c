/* Online diagnosis of one job: see diag_engine.h. */
#include "collector/diag/diag_engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/diag/diag_engine_impl.h"
#include "collector/diag/diag_evidence.h"
#include "collector/diag/diag_pipeline.h"
#include "common/causes.h"

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
    return e;
}

void diag_engine_free(struct diag_engine *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->cap; i++)
        free(e->ri[i].node);
    free(e->ri);
    free(e->coords);
    diag_groups_free(&e->groups);
    diag_groups_free(&e->xgroups);
    free(e->domain);
    diag_steps_free(&e->win);
    diag_watermark_free(&e->wm);
    free(e->flags);
    diag_l2_free(&e->l2);
    diag_l3_free(&e->l3);
    diag_persist_free(&e->persist);
    diag_rankwin_free(&e->rankwin);
    for (size_t i = 0; i < e->n_reports; i++)
        diag_report_free(e->reports[i]);
    free(e->reports);
    free(e->job);
    free(e);
}

/* Room for rank: every per-rank array grows together (doubling). */
static int reserve_rank(struct diag_engine *e, uint32_t rank)
{
    if (rank >= e->o.max_ranks)
        return -ERANGE;
    if (rank < e->cap)
        return 0;
    uint32_t cap = e->cap ? e->cap : 4;
    while (cap <= rank)
        cap *= 2;
    /* A rank inside the declared world needs no doubling slack past it (at
     * 10,240 ranks that slack was 6,144 ranks of frames). */
    if (rank < e->world_size && e->world_size < cap)
        cap = e->world_size;
    struct rank_info *ri = realloc(e->ri, (size_t)cap * sizeof(*ri));
    if (!ri)
        return -ENOMEM;
    e->ri = ri;
    struct diag_coord *co = realloc(e->coords, (size_t)cap * sizeof(*co));
    if (!co)
        return -ENOMEM;
    e->coords = co;
    struct diag_flag *fl = realloc(e->flags, (size_t)cap * DIAG_CAUSE_N * sizeof(*fl));
    if (!fl)
        return -ENOMEM;
    e->flags = fl;
    if (diag_steps_reserve(&e->win, cap) || diag_watermark_reserve(&e->wm, cap))
        return -ENOMEM;
    if (diag_persist_reserve(&e->persist, cap) || diag_rankwin_reserve(&e->rankwin, cap))
        return -ENOMEM;
    memset(ri + e->cap, 0, (size_t)(cap - e->cap) * sizeof(*ri));
    memset(co + e->cap, 0, (size_t)(cap - e->cap) * sizeof(*co));
    for (uint32_t i = e->cap; i < cap; i++)
        ri[i].gpu = -1;
    e->cap = cap;
    return 0;
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

static void mark_present(struct diag_engine *e, uint32_t rank)
{
    if (!e->coords[rank].present) {
        e->coords[rank].present = true;
        e->n_present++;
        e->groups_dirty = true;
    }
}

int diag_engine_add_resource(struct diag_engine *e, const Argus__V1__Resource *r)
{
    int err = check_job(e, r->job);

    err = err ? err : reserve_rank(e, r->rank);
    if (err) {
        e->st.rejected++;
        return err;
    }
    struct rank_info *ri = &e->ri[r->rank];
    char *node = strdup(r->node ? r->node : "");
    if (!node)
        return -ENOMEM;
    if (!ri->node || strcmp(ri->node, node))
        e->groups_dirty = true; /* its clock domain */
    free(ri->node);
    ri->node = node;
    ri->gpu = r->gpu;
    if (r->world_size > e->world_size) {
        /* The declared world is a hint, capped to max_ranks: during the
         * start-up grace a step waits for the ranks not seen yet
         * (diag_watermark.h), but nothing is reserved for them; memory
         * follows the ranks that report. */
        e->world_size = r->world_size < e->o.max_ranks ? r->world_size : e->o.max_ranks;
        e->wm.world = e->world_size;
    }
    struct diag_coord *c = &e->coords[r->rank];
    mark_present(e, r->rank);
    if (!c->known || c->pp != r->pp || c->tp != r->tp || c->ep != r->ep || c->dp != r->dp)
        e->groups_dirty = true;
    c->known = true;
    c->pp = r->pp;
    c->tp = r->tp;
    c->ep = r->ep;
    c->dp = r->dp;
    return 0;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Queue a report for diag_engine_take_reports; over max_reports the oldest
 * goes (counted), so a caller that never takes them cannot grow us. */
static int push_report(struct diag_engine *e, Argus__V1__Report *r)
{
    if (e->n_reports >= e->o.max_reports) {
        diag_report_free(e->reports[0]);
        memmove(e->reports, e->reports + 1, (e->n_reports - 1) * sizeof(*e->reports));
        e->n_reports--;
        e->st.reports_dropped++;
    }
    Argus__V1__Report **tmp = realloc(e->reports, (e->n_reports + 1) * sizeof(*tmp));

    if (!tmp) {
        diag_report_free(r);
        return -ENOMEM;
    }
    e->reports = tmp;
    e->reports[e->n_reports++] = r;
    e->st.reports++;
    return 0;
}

static const char *group_label_of(const struct diag_groups *gs, uint32_t rank)
{
    uint32_t g = rank < gs->n_ranks ? gs->group_of[rank] : DIAG_GROUP_NONE;

    return g == DIAG_GROUP_NONE ? "" : gs->label[g];
}

const char *diag_engine_group_label(const struct diag_engine *e, uint32_t rank)
{
    return group_label_of(&e->groups, rank);
}

static int add_rank_suspect(struct diag_engine *e, Argus__V1__Report *rep, uint32_t r, int c)
{
    const struct diag_flag *f = &e->persist.last[(size_t)r * DIAG_CAUSE_N + c];
    struct diag_namer nm = {e->o.name, e->o.name_ctx, &e->dict};
    struct diag_rank_evidence re;
    char ev[1024], where[128];
    uint32_t hits = diag_persist_hits(&e->persist, r, c), n = 0;
    const char *group = group_label_of(f->expert ? &e->xgroups : &e->groups, r);
    uint32_t g = r < e->groups.n_ranks ? e->groups.group_of[r] : DIAG_GROUP_NONE;
    const uint32_t *mem = g == DIAG_GROUP_NONE ? NULL : diag_groups_members(&e->groups, g, &n);

    if (diag_rankwin_get(&e->rankwin, r, mem, n, &re))
        return -ENOMEM;
    diag_evidence_flag(&nm, f, c, group, hits, e->o.window, &re, ev, sizeof(ev));
    diag_evidence_where(&nm, f, where, sizeof(where));
    Argus__V1__Suspect *s =
        diag_suspect_new(r, e->ri[r].node, e->ri[r].gpu, group, f->level, causes_persisted(c),
                         where, f->score, hits, e->o.window, ev);
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
int diag_engine_persisted_suspects(struct diag_engine *e, Argus__V1__Report *rep, bool on_close)
{
    bool periodic = on_close && (e->st.steps_closed + 1) % e->o.report_every == 0;
    int err = 0;

    for (uint32_t r = 0; r < e->cap && !err; r++) {
        for (int c = 0; c < DIAG_CAUSE_N && !err; c++) {
            size_t i = (size_t)r * DIAG_CAUSE_N + c;
            uint32_t hits = diag_persist_hits(&e->persist, r, c);
            bool was = e->persist.firing[i];
            if (hits >= e->o.min_hits)
                e->persist.firing[i] = true;
            else if (hits == 0)
                e->persist.firing[i] = false;
            if (e->persist.firing[i] && (!was || periodic))
                err = add_rank_suspect(e, rep, r, c);
        }
    }
    return err;
}

/* Rotating slowness: many ranks flagged briefly over most of the window. */
static int skew_suspect(struct diag_engine *e, const struct diag_frame *f, Argus__V1__Report *rep)
{
    uint32_t ranks, steps;
    char ev[256];

    diag_persist_rotation(&e->persist, DIAG_CAUSE_COMPUTE, e->cap, &ranks, &steps);
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
    bool compute = best && best->why == DIAG_SPIKE_COMPUTE;
    diag_evidence_spike(text, sizeof(text), ev->spike_from, ev->spike_to, ev->spike_peak_ns,
                        ev->spike_median_ns, rank, best ? best->late_ns : 0,
                        best ? best->why : DIAG_SPIKE_HOST);
    uint32_t hits = (uint32_t)(ev->spike_to - ev->spike_from + 1);
    Argus__V1__Suspect *s = diag_suspect_new(
        rank, rank < e->cap ? e->ri[rank].node : "", rank < e->cap ? e->ri[rank].gpu : -1,
        rank < e->cap ? diag_engine_group_label(e, rank) : "", ARGUS__V1__LEVEL__LEVEL_L1_ITERATION,
        compute ? ARGUS__V1__CAUSE__CAUSE_COMPUTE : ARGUS__V1__CAUSE__CAUSE_HOST, "step time",
        ev->spike_peak_ns / ev->spike_median_ns, hits, e->o.window, text);
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

    memset(e->flags, 0, (size_t)e->cap * DIAG_CAUSE_N * sizeof(*e->flags));
    diag_dict_classify(&e->dict, e->o.name, e->o.name_ctx);
    int err = diag_l2_run(&e->l2, f, &e->dict, &e->groups, &e->xgroups, e->flags, &r2);
    if (!err) {
        int cleared = diag_pipeline_resolve(e->coords, e->cap, &e->dict, e->flags);
        err = cleared < 0 ? cleared : 0;
    }
    err = err ? err : diag_l3_run(&e->l3, f, &e->dict, &e->groups, e->flags, &r3);
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
                    : DIAG_SPIKE_HOST;
    diag_rankwin_step(&e->rankwin, f, &e->l2.cm);
    err = diag_rankwin_flag(&e->rankwin, &e->groups, e->flags, e->cap, &e->persist);
    if (err < 0)
        return err;
    diag_persist_step(&e->persist, e->flags, e->cap);
    job_series(e, f, &t, &trank);
    diag_l1_step(&e->l1, f->step, t, trank, &ev);
    err = diag_engine_persisted_suspects(e, rep, true);
    err = err ? err : skew_suspect(e, f, rep);
    if (!err && ev.spike)
        err = spike_suspect(e, &ev, rep);
    if (!err && ev.regression)
        err = regression_suspect(e, &ev, &r2, &r3, rep);
    return err;
}

static uint32_t node_hash(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* The clock domain of every rank: the lowest rank with the same node name
 * (a rank without one is its own). 0 or -ENOMEM. */
static int build_domains(struct diag_engine *e)
{
    uint32_t size = 16, *first, *dom = realloc(e->domain, (size_t)e->cap * sizeof(*dom));

    if (!dom)
        return -ENOMEM;
    e->domain = dom;
    while (size < 2 * e->cap)
        size *= 2;
    first = malloc((size_t)size * sizeof(*first)); /* node -> its lowest rank + 1 */
    if (!first)
        return -ENOMEM;
    memset(first, 0, (size_t)size * sizeof(*first));
    for (uint32_t r = 0; r < e->cap; r++) {
        const char *node = e->ri[r].node;
        dom[r] = r;
        if (!node || !*node)
            continue;
        for (uint32_t h = node_hash(node) & (size - 1);; h = (h + 1) & (size - 1)) {
            if (!first[h]) {
                first[h] = r + 1;
                break;
            }
            if (!strcmp(e->ri[first[h] - 1].node, node)) {
                dom[r] = first[h] - 1;
                break;
            }
        }
    }
    free(first);
    e->n_domain = e->cap;
    return 0;
}

int diag_engine_build_groups(struct diag_engine *e)
{
    int err = 0;

    if (e->groups_dirty) {
        err = diag_groups_build(&e->groups, e->coords, e->cap, DIAG_GROUP_WORK);
        err = err ? err : diag_groups_build(&e->xgroups, e->coords, e->cap, DIAG_GROUP_EXPERT);
        err = err ? err : build_domains(e);
        e->groups_dirty = err != 0;
    }
    e->l2.cm.domain = e->domain;
    e->l2.cm.n_domain = e->n_domain;
    return err;
}

/* Queue rep when it has suspects (from_step..to_step), else free it. */
int diag_engine_finish_report(struct diag_engine *e, Argus__V1__Report *rep, uint64_t to_step)
{
    if (!rep->n_suspects) {
        diag_report_free(rep);
        return 0;
    }
    rep->from_step = to_step + 1 > e->o.window ? to_step + 1 - e->o.window : 0;
    rep->to_step = to_step;
    diag_report_mark_pages(rep);
    int err = diag_report_summarize(rep);
    e->report_seq++;
    return err ? (diag_report_free(rep), err) : push_report(e, rep);
}

static int close_frame(struct diag_engine *e, struct diag_frame *f, uint64_t now_ns,
                       enum diag_close_reason why)
{
    uint64_t t0 = cpu_ns();
    int err = diag_engine_build_groups(e);

    if (err)
        return err;
    Argus__V1__Report *rep = diag_report_new(e->job, now_ns, e->report_seq + 1);
    if (!rep)
        return -ENOMEM;
    err = analyse(e, f, rep);
    e->st.steps_closed++;
    e->st.steps_closed_by[why]++;
    e->st.steps_timed_out += why == DIAG_CLOSE_TIMEOUT || why == DIAG_CLOSE_BUDGET;
    if (err)
        diag_report_free(rep);
    else
        err = diag_engine_finish_report(e, rep, f->step);
    uint64_t dt = cpu_ns() - t0;
    e->st.close_ns_total += dt;
    if (dt > e->st.close_ns_max)
        e->st.close_ns_max = dt;
    return err;
}

static int close_one(struct diag_engine *e, struct diag_frame *f, uint64_t now_ns,
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
        int err = close_one(e, f, now_ns, why);
        if (err)
            return err;
        closed++;
    }
    return closed;
}

/* The slot of step, closing the oldest open steps while there is no room. */
static int slot_for(struct diag_engine *e, uint64_t step, uint64_t now_ns, struct diag_frame **f)
{
    int slot;

    while ((slot = diag_steps_slot(&e->win, step, now_ns, f)) == DIAG_SLOT_FULL) {
        struct diag_frame *old = diag_steps_oldest(&e->win);
        int err = old ? close_one(e, old, now_ns, DIAG_CLOSE_BUDGET) : -ENOSPC;
        if (err)
            return err;
    }
    return slot;
}

int diag_engine_add_step(struct diag_engine *e, const Argus__V1__StepRecord *s, uint64_t now_ns)
{
    struct diag_frame *f = NULL;
    int err = check_job(e, s->job);

    err = err ? err : reserve_rank(e, s->rank);
    if (!err && e->win.started && s->step > e->win.next + e->o.max_step_jump)
        err = -ERANGE; /* a broken or hostile step number would close everything */
    if (err) {
        e->st.rejected++;
        return err;
    }
    mark_present(e, s->rank);
    bool first = diag_watermark_record(&e->wm, e->stream, s->rank, s->step, now_ns);
    if (first && !e->in_batch &&
        (!e->wm.world || s->rank >= e->wm.world || e->wm.seen >= e->wm.world))
        diag_watermark_update(&e->wm, now_ns); /* the rank set may be complete */
    int slot = slot_for(e, s->step, now_ns, &f);
    if (slot < 0)
        return slot;
    if (slot == DIAG_SLOT_LATE) {
        err = diag_engine_add_late(e, f, s);
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

int diag_engine_note_progress(struct diag_engine *e, uint32_t rank, uint64_t step, uint64_t now_ns)
{
    int err = reserve_rank(e, rank);

    if (!err && e->win.started && step > e->win.next + e->o.max_step_jump)
        err = -ERANGE;
    if (err) {
        e->st.rejected++;
        return err;
    }
    diag_watermark_record(&e->wm, e->stream, rank, step, now_ns);
    e->st.noted++;
    return 0;
}

size_t diag_engine_take_reports(struct diag_engine *e, Argus__V1__Report ***out)
{
    size_t n = e->n_reports;

    *out = e->reports;
    e->reports = NULL;
    e->n_reports = 0;
    return n;
}

double diag_engine_clock_offset(const struct diag_engine *e, uint32_t rank)
{
    return diag_l2_offset(&e->l2, rank);
}
