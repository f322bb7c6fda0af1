/* The liveness stage (see liveness.h): the progress table, /proc samples
 * of the ranks that stopped, RankStatus out. */
#include "agent/liveness/liveness.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/liveness/procstate.h"
#include "common/log.h"

struct liveness {
    struct liveness_options o;
    struct progress *table;
    long clk_tck;
    struct liveness_stats stats;
    /* the status being built (emit copies what it keeps) */
    Argus__V1__CommProgress comms[PROGRESS_MAX_COMMS];
    Argus__V1__CommProgress *comm_ptrs[PROGRESS_MAX_COMMS];
    uint64_t stack[LIVENESS_STACK_MAX];
    char wait[PROCSTATE_WAIT_MAX];
};

struct liveness *liveness_new(const struct liveness_options *o)
{
    struct liveness *lv = calloc(1, sizeof(*lv));

    if (!lv)
        return NULL;
    lv->o = *o;
    lv->table = progress_new(&(struct progress_options){o->after_ns, o->interval_ns});
    lv->clk_tck = sysconf(_SC_CLK_TCK);
    if (lv->clk_tck <= 0)
        lv->clk_tck = 100;
    if (!lv->table) {
        free(lv);
        return NULL;
    }
    return lv;
}

void liveness_free(struct liveness *lv)
{
    if (!lv)
        return;
    progress_free(lv->table);
    free(lv);
}

int liveness_track(struct liveness *lv, uint32_t pid, const char *job, uint32_t rank,
                   uint32_t world, uint64_t now)
{
    return progress_track(lv->table, pid, job, rank, world, now);
}

void liveness_set_restart(struct liveness *lv, uint32_t pid, uint32_t restart)
{
    struct progress_rank *r = progress_find(lv->table, pid);

    if (r)
        r->restart = restart;
}

void liveness_call(struct liveness *lv, uint32_t pid, const struct progress_call *c)
{
    progress_call(lv->table, pid, c);
}

void liveness_done(struct liveness *lv, uint32_t pid, uint64_t handle, int64_t lib_seq,
                   uint64_t done_ns)
{
    progress_done(lv->table, pid, handle, lib_seq, done_ns);
}

void liveness_step(struct liveness *lv, uint32_t pid, uint64_t step, uint64_t now)
{
    progress_step(lv->table, pid, step, now);
}

static uint64_t liveness_real(const struct liveness *lv, uint64_t mono_ns)
{
    return mono_ns ? clock_offset_to_real(lv->o.clock, mono_ns) : 0;
}

/* Every communicator of r into s->comms (lv's scratch). */
static void liveness_comms(struct liveness *lv, const struct progress_rank *r,
                           Argus__V1__RankStatus *s)
{
    for (uint32_t i = 0; i < r->ncomms; i++) {
        const struct progress_comm *c = &r->comms[i];
        Argus__V1__CommProgress *x = &lv->comms[s->n_comms];

        argus__v1__comm_progress__init(x);
        x->comm_id = c->group;
        x->entered_seq = c->entered_seq;
        x->entered_unix_ns = c->entered ? liveness_real(lv, c->entered_ns) : 0;
        x->name_id = c->name_id;
        x->done_seq = c->done_seq;
        x->done_unix_ns = c->done ? liveness_real(lv, c->done_ns) : 0;
        x->seq_local = !c->entered_shared || !c->group;
        lv->comm_ptrs[s->n_comms++] = x;
    }
    s->comms = lv->comm_ptrs;
}

/* The status of r at now, with what the caller knows of its process. */
static void liveness_fill(struct liveness *lv, const struct progress_rank *r, uint64_t now,
                          Argus__V1__ProcState state, Argus__V1__RankStatus *s)
{
    argus__v1__rank_status__init(s);
    s->job = (char *)r->job;
    s->rank = r->rank;
    s->pid = r->pid;
    s->restart = r->restart;
    s->at_unix_ns = liveness_real(lv, now);
    s->state = state;
    s->wait = lv->wait;
    liveness_comms(lv, r, s);
    if (lv->o.stack) {
        s->n_stack = lv->o.stack(lv->o.ctx, r->pid, lv->stack, LIVENESS_STACK_MAX);
        s->stack = lv->stack;
    }
    s->last_step = r->last_step;
    s->has_step = r->has_step;
    s->last_progress_unix_ns = liveness_real(lv, r->last_call_ns);
}

static void liveness_emit(struct liveness *lv, const Argus__V1__RankStatus *s)
{
    if ((unsigned)s->state < LIVENESS_STATES)
        lv->stats.statuses[s->state]++;
    lv->o.emit(lv->o.ctx, s);
}

static const char *liveness_name(const struct liveness *lv, uint64_t id)
{
    const char *n = lv->o.name ? lv->o.name(lv->o.ctx, id) : NULL;

    return n ? n : "a collective";
}

/* The log line of a rank's first status: what it does and where it
 * stands in its last communicator. */
static void liveness_log_stall(const struct liveness *lv, const struct progress_rank *r,
                               const Argus__V1__RankStatus *s, char letter, uint64_t now)
{
    const struct progress_comm *c = progress_last_comm(r);
    char where[320] = ", no collective entered yet";

    if (c && c->done)
        snprintf(where, sizeof(where),
                 ", last entered %s #%" PRIu64 " of comm 0x%016" PRIx64 ", finished #%" PRIu64,
                 liveness_name(lv, c->name_id), c->entered_seq, c->group, c->done_seq);
    else if (c)
        snprintf(where, sizeof(where),
                 ", last entered %s #%" PRIu64 " of comm 0x%016" PRIx64 ", finished none",
                 liveness_name(lv, c->name_id), c->entered_seq, c->group);
    log_info("liveness",
             "rank %u of job %s (pid %u): no progress for %" PRIu64 " s: %s (%c)%s%s, "
             "%u%% CPU%s",
             r->rank, r->job, r->pid, (now - r->progress_ns) / NSEC_PER_SEC,
             liveness_state_name(s->state), letter, *s->wait ? " in " : "", s->wait,
             s->cpu_permille / 10, where);
}

/* CPU use of r since its last sample, in thousandths of a CPU; takes the
 * new sample. */
static uint32_t liveness_cpu(struct liveness *lv, struct progress_rank *r, uint64_t ticks,
                             uint64_t now)
{
    uint64_t permille = 0;

    if (r->cpu_ns && now > r->cpu_ns && ticks >= r->cpu_ticks)
        permille = (ticks - r->cpu_ticks) * 1000 * NSEC_PER_SEC / (uint64_t)lv->clk_tck /
                   (now - r->cpu_ns);
    r->cpu_ticks = ticks;
    r->cpu_ns = now;
    return (uint32_t)permille;
}

/* The status of r due at now (due is not NONE), from the sample st. */
static void liveness_send(struct liveness *lv, struct progress_rank *r, enum progress_due due,
                          const struct procstate *st, uint32_t permille, uint64_t now)
{
    Argus__V1__RankStatus s;
    bool first = due == PROGRESS_DUE_STALLED && !r->stalled;

    snprintf(lv->wait, sizeof(lv->wait), "%s", st->wait);
    liveness_fill(lv, r, now, procstate_state(st->state), &s);
    s.cpu_permille = permille;
    s.moving = due == PROGRESS_DUE_MOVING;
    liveness_emit(lv, &s);
    if (first)
        liveness_log_stall(lv, r, &s, st->state, now);
    else if (s.moving)
        log_info("liveness", "rank %u of job %s (pid %u) progresses again", r->rank, r->job,
                 r->pid);
    progress_sent(r, due, now);
}

/* Sample r (quiet for a second or more, or due a status) and send what is
 * due. Returns true when r ended (forgotten: its slot holds another). */
static bool liveness_check(struct liveness *lv, struct progress_rank *r, uint64_t now)
{
    enum progress_due due = progress_due(lv->table, r, now);
    struct procstate st;
    uint32_t permille;
    int32_t code, signal;
    bool core;
    int err;

    if (due == PROGRESS_DUE_NONE &&
        (!r->tracked || r->world == 1 || now < r->progress_ns + NSEC_PER_SEC))
        return false;
    /* a replayed rank has no process: nothing to read, and its exit event
     * alone says it ended */
    err = r->pid > LIVENESS_PID_LIMIT ? -ENOENT : procstate_read(r->pid, &st);
    if (err == -ESRCH || (err == 0 && (st.state == 'Z' || st.state == 'X'))) {
        procstate_exit(err == 0 ? st.exit_status : -1, &code, &signal, &core);
        liveness_exit(lv, r->pid, code, signal, core, now);
        return true;
    }
    if (err < 0) {
        lv->stats.read_errors += err != -ENOENT;
        st = (struct procstate){.state = '?'};
    }
    permille = err < 0 ? 0 : liveness_cpu(lv, r, st.cpu_ticks, now);
    if (due != PROGRESS_DUE_NONE)
        liveness_send(lv, r, due, &st, permille, now);
    return false;
}

void liveness_tick(struct liveness *lv, uint64_t now)
{
    for (size_t i = 0; i < progress_count(lv->table);)
        if (!liveness_check(lv, progress_at(lv->table, i), now))
            i++;
}

static enum liveness_how liveness_how(int32_t code, int32_t signal)
{
    if (signal)
        return LIVENESS_EXIT_SIGNAL;
    if (code < 0)
        return LIVENESS_EXIT_UNKNOWN;
    return code ? LIVENESS_EXIT_ERROR : LIVENESS_EXIT_CLEAN;
}

static void liveness_log_exit(const struct progress_rank *r, enum liveness_how how,
                              const Argus__V1__RankStatus *s)
{
    if (how == LIVENESS_EXIT_SIGNAL)
        log_info("liveness", "rank %u of job %s (pid %u) ended: killed by signal %d (%s)%s",
                 r->rank, r->job, r->pid, s->exit_signal, strsignal(s->exit_signal),
                 s->core_dumped ? ", core dumped" : "");
    else if (how == LIVENESS_EXIT_ERROR)
        log_info("liveness", "rank %u of job %s (pid %u) ended: exit code %d", r->rank, r->job,
                 r->pid, s->exit_code);
    else
        log_debug("liveness", "rank %u of job %s (pid %u) ended: %s", r->rank, r->job, r->pid,
                  how == LIVENESS_EXIT_CLEAN ? "exit code 0" : "gone, how unknown");
}

void liveness_exit(struct liveness *lv, uint32_t pid, int32_t code, int32_t signal, bool core,
                   uint64_t at_ns)
{
    struct progress_rank *r = progress_find(lv->table, pid);
    Argus__V1__RankStatus s;
    enum liveness_how how;

    if (!r)
        return;
    if (r->tracked) {
        lv->wait[0] = '\0';
        liveness_fill(lv, r, at_ns, ARGUS__V1__PROC_STATE__PROC_STATE_EXITED, &s);
        s.exited = true;
        s.exit_unix_ns = s.at_unix_ns;
        s.exit_code = signal ? -1 : code;
        s.exit_signal = signal;
        s.core_dumped = core;
        how = liveness_how(s.exit_code, s.exit_signal);
        lv->stats.exits[how]++;
        liveness_emit(lv, &s);
        liveness_log_exit(r, how, &s);
    }
    progress_forget(lv->table, pid);
}

void liveness_get_stats(const struct liveness *lv, struct liveness_stats *out)
{
    *out = lv->stats;
}

const char *liveness_state_name(int state)
{
    static const char *const names[LIVENESS_STATES] = {"unknown", "running", "sleeping", "disk",
                                                       "stopped", "zombie",  "exited"};

    return state >= 0 && state < LIVENESS_STATES ? names[state] : "unknown";
}

const char *liveness_how_name(int how)
{
    static const char *const names[LIVENESS_EXIT_COUNT] = {"signal", "error", "clean", "unknown"};

    return how >= 0 && how < LIVENESS_EXIT_COUNT ? names[how] : "unknown";
}
