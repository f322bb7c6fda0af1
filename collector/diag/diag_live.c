/* Liveness of one job: see diag_live.h. */
#include "collector/diag/diag_live.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/diag/diag_report.h"
#include "collector/diag/diag_slots.h"

#define NS 1000000000ULL

void diag_live_init(struct diag_live *l, uint64_t hang_after_ns, uint64_t grace_ns)
{
    memset(l, 0, sizeof(*l));
    l->hang_after_ns = hang_after_ns ? hang_after_ns : 30 * NS;
    l->grace_ns = grace_ns ? grace_ns : 2 * NS;
}

void diag_live_free(struct diag_live *l)
{
    free(l->ranks);
    l->ranks = NULL;
    l->cap = 0;
}

int diag_live_reserve(struct diag_live *l, uint32_t cap)
{
    if (cap <= l->cap)
        return 0;
    struct diag_live_rank *grown = realloc(l->ranks, (size_t)cap * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    memset(grown + l->cap, 0, (size_t)(cap - l->cap) * sizeof(*grown));
    l->ranks = grown;
    l->cap = cap;
    return 0;
}

void diag_live_note_rank(struct diag_live *l, uint32_t slot)
{
    if (slot < l->cap)
        l->ranks[slot].seen = true;
}

void diag_live_note_step(struct diag_live *l, uint32_t slot, const Argus__V1__StepRecord *s)
{
    if (slot >= l->cap)
        return;
    struct diag_live_rank *r = &l->ranks[slot];
    r->seen = true;
    if (!r->has_record_step || s->step > r->record_step)
        r->record_step = s->step;
    r->has_record_step = true;
    if (s->start_unix_ns + s->duration_ns > r->data_ns)
        r->data_ns = s->start_unix_ns + s->duration_ns;
    for (size_t i = 0; i < s->n_collectives; i++) {
        uint64_t id = s->collectives[i]->comm_id;
        bool known = id == 0;
        for (uint8_t k = 0; k < r->n_used && !known; k++)
            known = r->used[k] == id;
        if (!known && r->n_used < sizeof(r->used) / sizeof(r->used[0]))
            r->used[r->n_used++] = id;
    }
    /* a record of a later step: the rank moved on since its status */
    if (r->has_status && !r->exited && (!r->has_step || s->step > r->last_step))
        r->has_status = false;
}

static void copy_comms(struct diag_live_rank *r, const Argus__V1__RankStatus *s)
{
    r->n_comms = 0;
    for (size_t i = 0; i < s->n_comms && r->n_comms < DIAG_LIVE_COMMS; i++) {
        const Argus__V1__CommProgress *p = s->comms[i];
        r->comms[r->n_comms++] = (struct diag_live_comm){
            .comm_id = p->comm_id,
            .entered_seq = p->entered_seq,
            .entered_ns = p->entered_unix_ns,
            .name_id = p->name_id,
            .done_seq = p->done_seq,
            .done_ns = p->done_unix_ns,
            .seq_local = p->seq_local,
        };
    }
}

int diag_live_status(struct diag_live *l, uint32_t slot, const Argus__V1__RankStatus *s,
                     uint64_t recv_ns)
{
    if (slot >= l->cap) {
        l->rejected++;
        return -ERANGE;
    }
    struct diag_live_rank *r = &l->ranks[slot];
    if (r->exited) /* the process is gone: nothing later can be about it */
        return 0;
    l->statuses++;
    r->seen = r->has_status = true;
    r->recv_ns = recv_ns;
    r->at_ns = s->at_unix_ns;
    if (s->at_unix_ns > r->data_ns)
        r->data_ns = s->at_unix_ns;
    r->pid = s->pid;
    r->cpu_permille = s->cpu_permille;
    r->state = s->state;
    snprintf(r->wait, sizeof(r->wait), "%s", s->wait ? s->wait : "");
    copy_comms(r, s);
    r->n_stack = 0;
    for (size_t i = 0; i < s->n_stack && r->n_stack < DIAG_LIVE_STACK; i++)
        r->stack[r->n_stack++] = s->stack[i];
    r->has_step = s->has_step;
    r->last_step = s->last_step;
    r->moving = s->moving;
    r->exited = s->exited || s->state == ARGUS__V1__PROC_STATE__PROC_STATE_EXITED;
    r->exit_ns = s->exit_unix_ns ? s->exit_unix_ns : s->at_unix_ns;
    r->exit_code = s->exit_code;
    r->exit_signal = s->exit_signal;
    r->core_dumped = s->core_dumped;
    bool abnormal = r->exited && (s->exit_signal || s->exit_code != 0);
    if (abnormal && !l->death_pending && !l->failed) {
        l->death_pending = true;
        l->death_recv_ns = recv_ns;
    }
    return 0;
}

/* --- text ---------------------------------------------------------------- */

static const char *signal_name(int sig)
{
    static const char *const names[] = {
        [1] = "SIGHUP",   [2] = "SIGINT",   [3] = "SIGQUIT",  [4] = "SIGILL",   [5] = "SIGTRAP",
        [6] = "SIGABRT",  [7] = "SIGBUS",   [8] = "SIGFPE",   [9] = "SIGKILL",  [10] = "SIGUSR1",
        [11] = "SIGSEGV", [12] = "SIGUSR2", [13] = "SIGPIPE", [14] = "SIGALRM", [15] = "SIGTERM",
    };

    return sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) && names[sig] ? names[sig]
                                                                                  : NULL;
}

/* How r ended: "killed by SIGKILL", "exited with code 1", ... */
static void how_ended(const struct diag_live_rank *r, char *buf, size_t len)
{
    const char *sig = signal_name(r->exit_signal);

    if (r->exit_signal && sig)
        snprintf(buf, len, "killed by %s%s", sig, r->core_dumped ? " (core dumped)" : "");
    else if (r->exit_signal)
        snprintf(buf, len, "killed by signal %d%s", r->exit_signal,
                 r->core_dumped ? " (core dumped)" : "");
    else if (r->exit_code > 0)
        snprintf(buf, len, "exited with code %d", r->exit_code);
    else if (r->exit_code == 0)
        snprintf(buf, len, "exited cleanly");
    else
        snprintf(buf, len, "ended (exit status unknown)");
}

/* "HH:MM:SS" (UTC) of a unix time, with ".mmm" when ms. */
static void clock_text(uint64_t ns, bool ms, char *buf, size_t len)
{
    time_t t = (time_t)(ns / NS);
    struct tm tm;

    gmtime_r(&t, &tm);
    if (ms)
        snprintf(buf, len, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (unsigned)(ns % NS / 1000000));
    else
        snprintf(buf, len, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

struct live_pick {
    const struct diag_live *l;
    bool (*keep)(const struct diag_live *, uint32_t, const void *);
    const void *arg;
};

static bool live_pick(const void *ctx, uint32_t r)
{
    const struct live_pick *p = ctx;

    return p->keep(p->l, r, p->arg);
}

/* The ranks that keep(l, r, arg) keeps as ranges ("0-3,7") into buf, their
 * numbers from slots. Returns how many. */
static uint32_t rank_list(const struct diag_live *l, const struct diag_slots *slots,
                          bool (*keep)(const struct diag_live *, uint32_t, const void *),
                          const void *arg, char *buf, size_t len)
{
    struct live_pick p = {l, keep, arg};

    return diag_slots_ranks_text(slots, l->cap, live_pick, &p, buf, len);
}

/* --- deaths -------------------------------------------------------------- */

static bool abnormal(const struct diag_live_rank *r)
{
    return r->exited && (r->exit_signal || r->exit_code != 0);
}

/* The first rank to end abnormally by exit time; every rank seen ended
 * (*all) and whether some abnormal end is more than an unknown code. */
static uint32_t first_death(const struct diag_live *l, bool *all, bool *known)
{
    uint32_t first = UINT32_MAX;

    *all = true;
    *known = false;
    for (uint32_t r = 0; r < l->cap; r++) {
        const struct diag_live_rank *lr = &l->ranks[r];
        if (lr->seen && !lr->exited)
            *all = false;
        if (!abnormal(lr))
            continue;
        *known |= lr->exit_signal || lr->exit_code > 0;
        if (first == UINT32_MAX || lr->exit_ns < l->ranks[first].exit_ns)
            first = r;
    }
    return first;
}

struct after {
    uint32_t first;
    uint64_t from_ns;
};

static bool ended_after(const struct diag_live *l, uint32_t r, const void *arg)
{
    const struct after *a = arg;

    return r != a->first && l->ranks[r].exited && l->ranks[r].exit_ns >= a->from_ns;
}

static bool still_running(const struct diag_live *l, uint32_t r, const void *arg)
{
    (void)arg;
    return l->ranks[r].seen && !l->ranks[r].exited;
}

/* The other ranks' ends after the first: "; then ranks 0,1,3 exited with
 * code 1 within 3.2 s". */
static void death_others(const struct diag_live *l, const struct diag_slots *slots, uint32_t first,
                         char *buf, size_t len)
{
    struct after a = {first, l->ranks[first].exit_ns};
    char ranks[160], how[64] = "", run[96];
    uint64_t last = a.from_ns;
    bool same = true;

    uint32_t n = rank_list(l, slots, ended_after, &a, ranks, sizeof(ranks));
    for (uint32_t r = 0; r < l->cap; r++) {
        char h[64];
        if (!ended_after(l, r, &a))
            continue;
        how_ended(&l->ranks[r], h, sizeof(h));
        same = same && (!how[0] || strcmp(h, how) == 0);
        snprintf(how, sizeof(how), "%s", h);
        last = l->ranks[r].exit_ns > last ? l->ranks[r].exit_ns : last;
    }
    uint32_t running = rank_list(l, slots, still_running, NULL, run, sizeof(run));
    int at = n ? snprintf(buf, len, "; then rank%s %s %s within %.1f s", n == 1 ? "" : "s", ranks,
                          same ? how : "ended", (double)(last - a.from_ns) / 1e9)
               : snprintf(buf, len, "%s", "");
    if (running && at >= 0 && (size_t)at < len)
        snprintf(buf + at, len - (size_t)at, "; rank%s %s still running", running == 1 ? "" : "s",
                 run);
}

static int set_summary(Argus__V1__Report *rep, const char *text)
{
    char *t = strdup(text);

    if (!t)
        return -ENOMEM;
    free(rep->summary);
    rep->summary = t;
    return 0;
}

static int death_report(struct diag_live *l, uint32_t first, const struct diag_live_ctx *c,
                        Argus__V1__Report *rep)
{
    const struct diag_live_rank *r = &l->ranks[first];
    uint32_t rank = diag_slots_rank(c->slots, first);
    struct diag_silence_where at = {"", -1, ""};
    char how[64], when[32], step[40] = "", others[400], text[700];

    how_ended(r, how, sizeof(how));
    clock_text(r->exit_ns, true, when, sizeof(when));
    if (r->has_step || r->has_record_step)
        snprintf(step, sizeof(step), " (last step %" PRIu64 ")",
                 r->has_step ? r->last_step : r->record_step);
    death_others(l, c->slots, first, others, sizeof(others));
    snprintf(text, sizeof(text), "rank %u %s at %s%s%s", rank, how, when, step, others);
    c->where(c->where_ctx, first, &at);
    Argus__V1__Suspect *s =
        diag_suspect_new(rank, at.node, at.gpu, at.group, ARGUS__V1__LEVEL__LEVEL_LIVENESS,
                         ARGUS__V1__CAUSE__CAUSE_EXITED, "process exit", 1, 1, 1, text);
    int err = s ? diag_report_add(rep, s) : -ENOMEM;
    err = err ? err : set_summary(rep, text);
    l->failed = true;
    l->death_pending = false;
    l->hung = false;
    l->deaths++;
    l->state = ARGUS__V1__JOB_STATE__JOB_STATE_FAILED;
    snprintf(l->reason, sizeof(l->reason), "rank %u %s at %s", rank, how, when);
    return err ? err : 1;
}

/* Deaths and the end of the job. 1 when rep got the death, 0, -ENOMEM. */
static bool any_seen(const struct diag_live *l)
{
    for (uint32_t r = 0; r < l->cap; r++)
        if (l->ranks[r].seen)
            return true;
    return false;
}

/* Some rank still running has data (a step record's end, a status) from
 * at least wait_ns after rank first ended, by the agents' clocks. */
static bool went_on(const struct diag_live *l, uint32_t first, uint64_t wait_ns)
{
    uint64_t after = l->ranks[first].exit_ns + wait_ns;

    for (uint32_t r = 0; r < l->cap; r++)
        if (r != first && l->ranks[r].seen && !l->ranks[r].exited && l->ranks[r].data_ns >= after)
            return true;
    return false;
}

static int check_deaths(struct diag_live *l, uint64_t now_ns, const struct diag_live_ctx *c,
                        Argus__V1__Report *rep)
{
    bool all, known;
    uint32_t first = first_death(l, &all, &known);
    /* An end of unknown status (seen by a /proc scan) is a death only when
     * the job went on without it for the hang bound: ranks that end
     * normally end within seconds of each other. Judged on the agents'
     * clocks, not on arrival: after an outage, spools replay the ends of
     * one node's ranks long before another's. */
    bool graced = first == UINT32_MAX || (known ? now_ns >= l->death_recv_ns + l->grace_ns
                                                : went_on(l, first, l->hang_after_ns));

    if (l->failed || l->state == ARGUS__V1__JOB_STATE__JOB_STATE_ENDED)
        return 0;
    /* every rank ended, none by a signal or an error code: the job ended */
    if (all && !known && any_seen(l)) {
        l->state = ARGUS__V1__JOB_STATE__JOB_STATE_ENDED;
        l->hung = l->death_pending = false;
        snprintf(l->reason, sizeof(l->reason), "every rank ended%s",
                 first == UINT32_MAX ? " cleanly" : " (exit status unknown)");
        return 0;
    }
    return graced && l->death_pending && first != UINT32_MAX ? death_report(l, first, c, rep) : 0;
}

/* --- hangs --------------------------------------------------------------- */

static const char *state_text(const struct diag_live_rank *r, char *buf, size_t len)
{
    unsigned cpu = r->cpu_permille / 10;
    const char *wait = r->wait[0] ? r->wait : "a wait";

    switch (r->state) {
    case ARGUS__V1__PROC_STATE__PROC_STATE_RUNNING:
        snprintf(buf, len, "on CPU (%u%% of a CPU)", cpu);
        break;
    case ARGUS__V1__PROC_STATE__PROC_STATE_SLEEPING:
        snprintf(buf, len, "sleeping in %s (%u%% CPU)", wait, cpu);
        break;
    case ARGUS__V1__PROC_STATE__PROC_STATE_DISK:
        snprintf(buf, len, "in D state in %s (%u%% CPU)", wait, cpu);
        break;
    case ARGUS__V1__PROC_STATE__PROC_STATE_STOPPED:
        snprintf(buf, len, "stopped (a signal or a tracer)");
        break;
    case ARGUS__V1__PROC_STATE__PROC_STATE_ZOMBIE:
        snprintf(buf, len, "exited, not reaped");
        break;
    default:
        snprintf(buf, len, "state unknown (%u%% CPU)", cpu);
    }
    return buf;
}

/* Its last native stack, "f0 < f1 < f2" leaf first, into buf. */
static void stack_text(const struct diag_live_rank *r, const struct diag_live_ctx *c, char *buf,
                       size_t len)
{
    size_t at = 0;

    buf[0] = 0;
    for (uint8_t i = 0; i < r->n_stack && at + 8 < len; i++) {
        const char *name = c->name ? c->name(c->name_ctx, r->stack[i]) : NULL;
        char hex[24];
        if (!name) {
            snprintf(hex, sizeof(hex), "0x%" PRIx64, r->stack[i]);
            name = hex;
        }
        int n = snprintf(buf + at, len - at, "%s%.60s", i ? " < " : "", name);
        at += n > 0 ? (size_t)n : 0;
    }
    if (at >= len)
        buf[len - 1] = 0;
}

/* What suspect r of hang h is doing, for its evidence. */
static void doing_text(const struct diag_live *l, uint32_t rank, const struct diag_hang *h,
                       const struct diag_live_ctx *c, char *buf, size_t len)
{
    const struct diag_live_rank *r = &l->ranks[rank];
    char st[96], stack[400], where[96], step[40] = "";

    if (!r->has_status) {
        snprintf(buf, len,
                 "no status from it (its agent sent none); last step record %" PRIu64
                 " on this group",
                 r->record_step);
        return;
    }
    const struct diag_live_comm *cm = diag_hang_comm(r, h->comm_id);
    if (cm)
        snprintf(where, sizeof(where), "entered #%" PRIu64 ", finished #%" PRIu64 " of the group",
                 cm->entered_seq, cm->done_seq);
    else
        snprintf(where, sizeof(where), "no progress on the group");
    if (r->has_step)
        snprintf(step, sizeof(step), "; last step %" PRIu64, r->last_step);
    stack_text(r, c, stack, sizeof(stack));
    snprintf(buf, len, "%s; %s%s%s%s", state_text(r, st, sizeof(st)), where, step,
             stack[0] ? "; native stack: " : "", stack);
}

static bool is_suspect(const struct diag_live *l, uint32_t r, const void *arg)
{
    const struct diag_hang *h = arg;

    (void)l;
    for (uint32_t i = 0; i < h->n_suspects; i++)
        if (h->suspects[i] == r)
            return true;
    return false;
}

static bool is_waiter(const struct diag_live *l, uint32_t r, const void *arg)
{
    return diag_hang_waits(&l->ranks[r], arg) && !is_suspect(l, r, arg);
}

/* The sentence of hang h: "hung at OP #k of group G: ranks 0,1,3 wait
 * since HH:MM:SS (45 s); rank 2 never entered it". */
static void hang_sentence(const struct diag_live *l, const struct diag_hang *h,
                          const struct diag_live_ctx *c, char *buf, size_t len)
{
    char op[128], waiters[160], suspects[160], since[16];
    const char *name = c->name && h->name_id ? c->name(c->name_ctx, h->name_id) : NULL;

    snprintf(op, sizeof(op), "%.100s", name ? name : "a collective");
    rank_list(l, c->slots, is_waiter, h, waiters, sizeof(waiters));
    rank_list(l, c->slots, is_suspect, h, suspects, sizeof(suspects));
    clock_text(h->since_ns, false, since, sizeof(since));
    snprintf(buf, len,
             "hung at %s #%" PRIu64 " of group %08" PRIx32 ": rank%s %s wait%s since %s (%.0f s);"
             " rank%s %s%s %s",
             op, h->seq, (uint32_t)(h->comm_id >> 32 ^ h->comm_id), h->waiters == 1 ? "" : "s",
             waiters, h->waiters == 1 ? "s" : "", since, (double)h->wait_ns / 1e9,
             h->n_suspects + h->more_suspects == 1 ? "" : "s", suspects,
             h->more_suspects ? " and more" : "",
             h->stuck ? "entered it but cannot run" : "never entered it");
}

static int hang_report(struct diag_live *l, const struct diag_hang *h,
                       const struct diag_live_ctx *c, const char *job, Argus__V1__Report *rep)
{
    char sentence[600], doing[600], ev[1300];
    int err = 0;

    hang_sentence(l, h, c, sentence, sizeof(sentence));
    for (uint32_t i = 0; i < h->n_suspects && !err; i++) {
        struct diag_silence_where at = {"", -1, ""};
        uint32_t r = h->suspects[i], rank = diag_slots_rank(c->slots, r);
        c->where(c->where_ctx, r, &at);
        doing_text(l, r, h, c, doing, sizeof(doing));
        snprintf(ev, sizeof(ev), "rank %u: %s. The job %s", rank, doing, sentence);
        Argus__V1__Suspect *s = diag_suspect_new(
            rank, at.node, at.gpu, at.group, ARGUS__V1__LEVEL__LEVEL_LIVENESS,
            ARGUS__V1__CAUSE__CAUSE_HANG, "collective", (double)h->wait_ns / 1e9, 1, 1, ev);
        err = s ? diag_report_add(rep, s) : -ENOMEM;
    }
    snprintf(ev, sizeof(ev), "job %s %s", job ? job : "", sentence);
    err = err ? err : set_summary(rep, ev);
    snprintf(l->reason, sizeof(l->reason), "%s", sentence);
    return err ? err : 1;
}

/* The bound: hang_after, raised to 10 x the job's median step time. */
static uint64_t hang_bound(const struct diag_live *l, uint64_t step_p50_ns)
{
    uint64_t scaled = step_p50_ns * 10;

    return scaled > l->hang_after_ns ? scaled : l->hang_after_ns;
}

static int check_hang(struct diag_live *l, uint64_t now_ns, const struct diag_live_ctx *c,
                      const char *job, Argus__V1__Report *rep)
{
    struct diag_hang h;
    bool found = diag_hang_find(l->ranks, l->cap, now_ns, hang_bound(l, c->step_p50_ns), &h);

    if (l->hung && found && h.comm_id == l->hang.comm_id && h.seq == l->hang.seq) {
        l->hang.wait_ns = h.wait_ns;
        return 0; /* the same hang: reported once */
    }
    if (l->hung) { /* the collective completed or the ranks moved on */
        l->hung = false;
        l->state = ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING;
        l->reason[0] = 0;
    }
    if (!found)
        return 0;
    l->hung = true;
    l->hang = h;
    l->hangs++;
    l->state = ARGUS__V1__JOB_STATE__JOB_STATE_HUNG;
    return hang_report(l, &h, c, job, rep);
}

int diag_live_check(struct diag_live *l, uint64_t now_ns, const struct diag_live_ctx *c,
                    Argus__V1__Report *rep)
{
    if (l->state == ARGUS__V1__JOB_STATE__JOB_STATE_UNKNOWN && any_seen(l))
        l->state = ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING;
    int err = check_deaths(l, now_ns, c, rep);
    if (err || l->failed || l->death_pending || l->state == ARGUS__V1__JOB_STATE__JOB_STATE_ENDED)
        return err;
    return check_hang(l, now_ns, c, rep->job, rep);
}

bool diag_live_failed(const struct diag_live *l)
{
    return l->failed;
}

int diag_live_state(const struct diag_live *l, const char **reason)
{
    *reason = l->reason;
    return l->state;
}
