/* Liveness scenarios: see liveness.h. */
#include "tools/argus-sim/liveness.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ULL
#define SEC 1000000000ULL
#define STATUS_EVERY (5 * SEC) /* the agent's status.after and status.interval */

/* One agent's statuses being built: at most ranks_per_node. */
struct live_batch {
    Argus__V1__Batch b;
    Argus__V1__RankStatus *st, **stp;
    Argus__V1__CommProgress *cp, **cpp; /* two per status */
};

static int batch_init(struct live_batch *lb, uint32_t n)
{
    memset(lb, 0, sizeof(*lb));
    lb->st = calloc(n, sizeof(*lb->st));
    lb->stp = calloc(n, sizeof(*lb->stp));
    lb->cp = calloc(2 * (size_t)n, sizeof(*lb->cp));
    lb->cpp = calloc(2 * (size_t)n, sizeof(*lb->cpp));
    return lb->st && lb->stp && lb->cp && lb->cpp ? 0 : -ENOMEM;
}

static void batch_free(struct live_batch *lb)
{
    free(lb->st);
    free(lb->stp);
    free(lb->cp);
    free(lb->cpp);
}

static void batch_reset(struct live_batch *lb)
{
    argus__v1__batch__init(&lb->b);
    lb->b.statuses = lb->stp;
}

/* A new status of rank in lb, sampled at plan time at. */
static Argus__V1__RankStatus *status_add(struct live_batch *lb, const struct liveness_plan *p,
                                         uint32_t rank, uint64_t at)
{
    size_t i = lb->b.n_statuses++;
    Argus__V1__RankStatus *s = &lb->st[i];

    argus__v1__rank_status__init(s);
    s->job = (char *)p->job;
    s->rank = rank;
    s->pid = 10000 + rank;
    s->at_unix_ns = p->unix0_ns + at;
    s->has_step = p->step > 0;
    s->last_step = p->step ? p->step - 1 : 0;
    s->comms = &lb->cpp[2 * i];
    lb->stp[i] = s;
    return s;
}

/* Progress on comm: entered seq at plan time e, finished done at plan time d. */
static void comm_add(struct live_batch *lb, Argus__V1__RankStatus *s, const struct liveness_plan *p,
                     uint64_t comm, uint64_t name, uint64_t seq, uint64_t e, uint64_t done,
                     uint64_t d)
{
    size_t i = (size_t)(s - lb->st);
    Argus__V1__CommProgress *c = &lb->cp[2 * i + s->n_comms];

    if (!comm)
        return;
    argus__v1__comm_progress__init(c);
    c->comm_id = comm;
    c->entered_seq = seq;
    c->entered_unix_ns = p->unix0_ns + e;
    c->name_id = name;
    c->done_seq = done;
    c->done_unix_ns = p->unix0_ns + d;
    lb->cpp[2 * i + s->n_comms++] = c;
    if (c->entered_unix_ns > s->last_progress_unix_ns)
        s->last_progress_unix_ns = c->entered_unix_ns;
}

/* What rank shows while the job hangs at step k (liveness.h). */
static void hang_status(struct live_batch *lb, const struct liveness_plan *p,
                        const struct diag_scn *s, uint32_t rank, uint64_t at)
{
    uint64_t tpc, dpc, tpn, dpn, ctp, cdp, k = p->step, t0 = p->stop_ns;
    uint64_t tp_k = k * DIAG_SCN_TP_COLLS, dp_prev = k ? k - 1 : 0;
    Argus__V1__RankStatus *st = status_add(lb, p, rank, at);

    diag_scn_comms(s, rank, &tpc, &dpc, &tpn, &dpn);
    diag_scn_comms(s, p->culprit, &ctp, &cdp, &tpn, &dpn);
    st->state = ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING;
    st->wait = "futex";
    st->cpu_permille = 15;
    if (rank == p->culprit) {
        st->state = ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED;
        st->wait = "";
        st->cpu_permille = 0;
        comm_add(lb, st, p, tpc, tpn, tp_k - 1, t0 - 30 * MS, tp_k - 1, t0 - 29 * MS);
        comm_add(lb, st, p, dpc, dpn, dp_prev, t0 - 10 * MS, dp_prev, t0 - 5 * MS);
    } else if (tpc && tpc == ctp) { /* its TP peers wait for it */
        comm_add(lb, st, p, tpc, tpn, tp_k, t0 + MS, tp_k - 1, t0 - 29 * MS);
        comm_add(lb, st, p, dpc, dpn, dp_prev, t0 - 10 * MS, dp_prev, t0 - 5 * MS);
    } else { /* the others went through step k's TP calls and wait in DP */
        comm_add(lb, st, p, tpc, tpn, tp_k + DIAG_SCN_TP_COLLS - 1, t0 + 60 * MS,
                 tp_k + DIAG_SCN_TP_COLLS - 1, t0 + 61 * MS);
        comm_add(lb, st, p, dpc, dpn, k, t0 + 100 * MS, dp_prev, t0 - 5 * MS);
    }
}

/* Every rank outside collectives, writing a checkpoint. */
static void checkpoint_status(struct live_batch *lb, const struct liveness_plan *p,
                              const struct diag_scn *s, uint32_t rank, uint64_t at)
{
    uint64_t tpc, dpc, tpn, dpn, k = p->step, t0 = p->stop_ns;
    Argus__V1__RankStatus *st = status_add(lb, p, rank, at);
    uint64_t tp_last = k * DIAG_SCN_TP_COLLS - 1, dp_last = k ? k - 1 : 0;

    diag_scn_comms(s, rank, &tpc, &dpc, &tpn, &dpn);
    st->state = ARGUS__V1__PROC_STATE__PROC_STATE_DISK;
    st->wait = "write";
    st->cpu_permille = 120;
    comm_add(lb, st, p, tpc, tpn, tp_last, t0 - 30 * MS, tp_last, t0 - 29 * MS);
    comm_add(lb, st, p, dpc, dpn, dp_last, t0 - 10 * MS, dp_last, t0 - 5 * MS);
}

static void exit_status(struct live_batch *lb, const struct liveness_plan *p, uint32_t rank,
                        uint64_t exit_at, int code, int sig)
{
    Argus__V1__RankStatus *st = status_add(lb, p, rank, exit_at);

    st->state = ARGUS__V1__PROC_STATE__PROC_STATE_EXITED;
    st->exited = true;
    st->exit_unix_ns = p->unix0_ns + exit_at;
    st->exit_code = code;
    st->exit_signal = sig;
}

static uint64_t mix(uint64_t x) /* splitmix64: a rank's seeded draw */
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* When rank exits in the death scenario (plan time). */
static uint64_t death_at(const struct liveness_plan *p, uint32_t rank)
{
    if (rank == p->culprit)
        return p->stop_ns + 200 * MS;
    return p->stop_ns + SEC + mix(p->seed * 1000003 + rank) % (2 * SEC);
}

/* Agent a's batch of every rank's statuses at plan time at (kind's), or of
 * its exits (exits: the death scenario, culprit first or the others). */
static int emit_agent(const struct liveness_plan *p, const struct diag_scn *s,
                      struct live_batch *lb, uint32_t a, uint64_t at, int what,
                      liveness_emit_fn emit, void *ctx)
{
    uint32_t lo = a * p->ranks_per_node, hi = lo + p->ranks_per_node;
    uint64_t due = at;

    batch_reset(lb);
    for (uint32_t r = lo; r < hi && r < p->ranks; r++) {
        if (what == LIVENESS_HANG)
            hang_status(lb, p, s, r, at);
        else if (what == LIVENESS_CHECKPOINT)
            checkpoint_status(lb, p, s, r, at);
        else if (what == LIVENESS_DEATH && (r == p->culprit) == (at == 0))
            exit_status(lb, p, r, death_at(p, r), r == p->culprit ? -1 : 1,
                        r == p->culprit ? 9 : 0);
        else if (what == LIVENESS_NONE) /* the clean end after a checkpoint */
            exit_status(lb, p, r, at, 0, 0);
        if (lb->b.n_statuses && lb->st[lb->b.n_statuses - 1].exited) {
            uint64_t t = lb->st[lb->b.n_statuses - 1].exit_unix_ns - p->unix0_ns + 100 * MS;
            due = t > due ? t : due;
        }
    }
    return lb->b.n_statuses ? emit(ctx, a, due, &lb->b) : 0;
}

/* Every agent's statuses at each status time from stop + 5 s for for_ns. */
static int emit_periodic(const struct liveness_plan *p, const struct diag_scn *s,
                         struct live_batch *lb, uint32_t agents, liveness_emit_fn emit, void *ctx)
{
    int r = 0;

    for (uint64_t t = STATUS_EVERY; t <= p->for_ns && r == 0; t += STATUS_EVERY)
        for (uint32_t a = 0; a < agents && r == 0; a++)
            r = emit_agent(p, s, lb, a, p->stop_ns + t, (int)p->kind, emit, ctx);
    return r;
}

int liveness_generate(const struct liveness_plan *p, const struct diag_scn *s,
                      liveness_emit_fn emit, void *ctx)
{
    uint32_t agents = (p->ranks + p->ranks_per_node - 1) / p->ranks_per_node;
    struct live_batch lb;
    int r;

    if (p->kind == LIVENESS_NONE || !p->ranks_per_node)
        return -EINVAL;
    r = batch_init(&lb, p->ranks_per_node);
    if (r == 0 && p->kind == LIVENESS_DEATH) {
        r = emit_agent(p, s, &lb, p->culprit / p->ranks_per_node, 0, LIVENESS_DEATH, emit, ctx);
        for (uint32_t a = 0; a < agents && r == 0; a++)
            r = emit_agent(p, s, &lb, a, 1, LIVENESS_DEATH, emit, ctx);
    } else if (r == 0) {
        r = emit_periodic(p, s, &lb, agents, emit, ctx);
    }
    if (r == 0 && p->kind == LIVENESS_CHECKPOINT)
        for (uint32_t a = 0; a < agents && r == 0; a++)
            r = emit_agent(p, s, &lb, a, p->stop_ns + p->for_ns + SEC, LIVENESS_NONE, emit, ctx);
    batch_free(&lb);
    return r;
}
