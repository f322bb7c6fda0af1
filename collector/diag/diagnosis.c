#include "collector/diag/diagnosis.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collector/alerts/alerts.h"
#include "collector/diag/diag_engine.h"
#include "collector/diag/diag_live.h"
#include "collector/diag/diag_report.h"
#include "collector/diag/diag_restore.h"
#include "collector/diag/diagnosis_counters.h"
#include "collector/diag/diagnosis_job.h"
#include "collector/diag/diagnosis_recover.h"
#include "collector/diag/recent_suspects.h"
#include "collector/store/store.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strmap.h"

struct diagnosis *diagnosis_new(struct store *store, const struct diagnosis_options *o)
{
    struct diagnosis *d = calloc(1, sizeof(*d));

    if (!d)
        return NULL;
    d->store = store;
    d->o = *o;
    if (!d->o.max_jobs)
        d->o.max_jobs = 256;
    if (!d->o.job_idle_ns)
        d->o.job_idle_ns = 300 * NSEC_PER_SEC;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->stats_lock, NULL);
    return d;
}

void diagnosis_set_clock(struct diagnosis *d, diagnosis_clock_fn clock, void *ctx)
{
    d->clock = clock;
    d->clock_ctx = ctx;
}

/* The engine time of job j at now: what its clock says (never backwards),
 * else now less the lag of its last feed. */
static uint64_t diagnosis_job_time(struct diagnosis *d, struct diagnosis_job *j, uint64_t now)
{
    uint64_t t = now > j->feed_lag_ns ? now - j->feed_lag_ns : now;

    if (d->clock) {
        t = d->clock(d->clock_ctx, j->job, now);
        t = t > j->tick_ns ? t : j->tick_ns;
    }
    j->tick_ns = t;
    return t;
}

static void diagnosis_job_free(struct diagnosis_job *j)
{
    if (!j)
        return;
    diag_engine_free(j->engine);
    diag_live_free(&j->live);
    strmap_clear(&j->names);
    pthread_mutex_destroy(&j->lock);
    free(j->job);
    free(j);
}

void diagnosis_free(struct diagnosis *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->njobs; i++)
        diagnosis_job_free(d->jobs[i]);
    free(d->jobs);
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->stats_lock);
    free(d);
}

/* diag_name_fn: the job's dictionary, then the store (a restarted collector). */
static const char *diagnosis_name(void *ctx, uint64_t id)
{
    struct diagnosis_job *j = ctx;
    const char *known = strmap_get(&j->names, id);
    char *name;

    if (known)
        return known;
    name = store_get_name(j->d->store, j->job, id);
    if (!name)
        return NULL;
    strmap_put(&j->names, id, name);
    free(name);
    return strmap_get(&j->names, id);
}

/* A new engine for job j (its first epoch or a new one). NULL on ENOMEM. */
static struct diag_engine *diagnosis_engine_new(struct diagnosis *d, struct diagnosis_job *j)
{
    struct diag_options o = {0};

    o.job = j->job;
    o.step_timeout_ns = d->o.step_timeout_ns;
    o.stream_hold_ns = d->o.stream_hold_ns;
    o.silence_ns = d->o.silence_ns;
    o.max_open_bytes = d->o.max_open_bytes;
    o.late_horizon = d->o.late_horizon;
    o.max_ranks = d->o.max_ranks;
    o.window = d->o.window;
    o.min_hits = d->o.min_hits;
    o.name = diagnosis_name;
    o.name_ctx = j;
    o.link = d->o.link;
    o.link_ctx = d->o.link_ctx;
    return diag_engine_new(&o);
}

/* j's placement and suspects from the store when the job ran lately (a
 * restarted collector, a job fed again after its state was retired):
 * diag_restore.h. */
static void diagnosis_bring_back(struct diagnosis *d, struct diagnosis_job *j)
{
    struct diag_restored got;
    int err = diag_restore_job(d->store, j->job, clock_real_ns(), d->o.job_idle_ns, j->engine,
                               &j->recent, &got);

    if (err)
        log_warn("diagnosis", "job %s: reading its placement from the store: %s", j->job,
                 strerror(-err));
    if (!got.ranks && !got.reports)
        return;
    j->restart = got.restart;
    log_info("diagnosis",
             "job %s: brought back from the store: placement of %" PRIu32 " ranks (attempt %" PRIu32
             "), suspects of %" PRIu32 " reports",
             j->job, got.ranks, got.restart, got.reports);
}

static struct diagnosis_job *diagnosis_job_new(struct diagnosis *d, const char *job)
{
    struct diagnosis_job *j = calloc(1, sizeof(*j));

    if (!j)
        return NULL;
    j->d = d;
    j->job = strdup(job);
    pthread_mutex_init(&j->lock, NULL);
    diag_live_init(&j->live, d->o.hang_after_ns, 0);
    j->engine = j->job ? diagnosis_engine_new(d, j) : NULL;
    if (!j->engine) {
        diagnosis_job_free(j);
        return NULL;
    }
    if (d->store)
        diagnosis_bring_back(d, j);
    return j;
}

static void diagnosis_retire(struct diagnosis *d, size_t i, uint64_t now);

/* The job's entry, created when new, returned locked (d->lock is taken
 * first, so a tick cannot free it between the lookup and the lock); the
 * least recently fed job is retired when max_jobs are live. */
static struct diagnosis_job *diagnosis_job(struct diagnosis *d, const char *job)
{
    struct diagnosis_job *j = NULL;

    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < d->njobs && !j; i++)
        if (strcmp(d->jobs[i]->job, job) == 0)
            j = d->jobs[i];
    if (!j && d->njobs >= d->o.max_jobs) {
        size_t old = 0;
        for (size_t i = 1; i < d->njobs; i++)
            if (d->jobs[i]->last_fed_ns < d->jobs[old]->last_fed_ns)
                old = i;
        log_warn("diagnosis", "more than %u jobs: dropping the state of job %s", d->o.max_jobs,
                 d->jobs[old]->job);
        diagnosis_retire(d, old, clock_real_ns());
    }
    if (!j) {
        struct diagnosis_job **grown = realloc(d->jobs, (d->njobs + 1) * sizeof(*grown));
        if (grown) {
            d->jobs = grown;
            j = diagnosis_job_new(d, job);
            if (j)
                d->jobs[d->njobs++] = j;
        }
    }
    if (j)
        pthread_mutex_lock(&j->lock);
    pthread_mutex_unlock(&d->lock);
    return j;
}

/* Hand reps[0..n) of j (its lock held) to alerts, store and log them, and
 * free each (not the array). */
static void diagnosis_publish(struct diagnosis *d, struct diagnosis_job *j,
                              Argus__V1__Report **reps, size_t n)
{
    char err[256];
    uint64_t errors = 0;

    /* alerts count closed steps */
    alerts_observe(d->o.alerts, j->job, reps, n, diag_engine_steps_closed(j->engine));
    for (size_t i = 0; i < n; i++) {
        const Argus__V1__Report *r = reps[i];
        if (store_put_report(d->store, r, err, sizeof(err)) < 0) {
            errors++;
            log_error("diagnosis", "report %s of job %s not stored: %s", r->id, r->job, err);
        } else if (r->pages && d->o.on_report) {
            d->o.on_report(d->o.on_report_ctx, r);
        }
        log_warn("diagnosis", "report %s job %s steps %" PRIu64 "-%" PRIu64 ": %s", r->id, r->job,
                 r->from_step, r->to_step, r->summary);
        recent_suspects_note(&j->recent, r);
        diag_report_free(reps[i]);
    }
    if (n) {
        pthread_mutex_lock(&d->stats_lock);
        d->stats.reports += n;
        d->stats.report_errors += errors;
        d->stats.last_report_ns = clock_real_ns();
        pthread_mutex_unlock(&d->stats_lock);
    }
}

/* Store and log the engine's reports of j (its lock held). After a death
 * the epoch's other findings (the survivors' collective errors, their
 * silence) are its consequences: dropped, counted. */
static void diagnosis_drain(struct diagnosis *d, struct diagnosis_job *j)
{
    Argus__V1__Report **reps;
    size_t n = diag_engine_take_reports(j->engine, &reps);

    if (n && diag_live_failed(&j->live)) {
        for (size_t i = 0; i < n; i++)
            diag_report_free(reps[i]);
        j->suppressed += n;
        n = 0;
    }
    diagnosis_publish(d, j, reps, n);
    free(reps);
    diagnosis_recover(d->o.alerts, j->job, j->engine); /* after the reports that name them */
}

/* rank's slot in j's engine into *slot, with room for it in j's liveness
 * state (doubling): liveness is kept by the engine's slots. */
static bool diagnosis_live_slot(struct diagnosis_job *j, uint32_t rank, uint32_t *slot)
{
    uint32_t cap = j->live.cap ? j->live.cap : 8;

    if (diag_engine_slot(j->engine, rank, slot) < 0)
        return false;
    while (cap <= *slot)
        cap *= 2;
    return diag_live_reserve(&j->live, cap) == 0;
}

/* "hung" of ARGUS__V1__JOB_STATE__JOB_STATE_HUNG, for logs and /metrics. */
const char *diagnosis_state_name(int state)
{
    static const char *const names[DIAGNOSIS_STATES] = {"unknown", "running",    "hung",
                                                        "failed",  "restarting", "ended"};

    return state >= 0 && state < DIAGNOSIS_STATES ? names[state] : "unknown";
}

/* j's state: its liveness state, RESTARTING while a new epoch closed no
 * step and says nothing else. */
static int diagnosis_state_of(struct diagnosis_job *j, const char **reason)
{
    int st = diag_live_state(&j->live, reason);

    if (j->restarting && diag_engine_steps_closed(j->engine) == 0 &&
        st <= ARGUS__V1__JOB_STATE__JOB_STATE_RUNNING) {
        *reason = "the launcher started a new attempt";
        return ARGUS__V1__JOB_STATE__JOB_STATE_RESTARTING;
    }
    j->restarting = false;
    return st;
}

/* A change of j's state is stored and ends the alerts it makes moot: a
 * hang's when it is over; all of a job that ended cleanly; all but the
 * death's of a job that failed or restarted (the death's page stands until
 * the new attempt runs clean steps or the job goes idle). */
static void diagnosis_state(struct diagnosis *d, struct diagnosis_job *j)
{
    const char *reason;
    int st = diagnosis_state_of(j, &reason), was = j->state_put;
    char err[256];

    if (st == was)
        return;
    j->state_put = st;
    log_info("diagnosis", "job %s: %s -> %s%s%s", j->job, diagnosis_state_name(was),
             diagnosis_state_name(st), reason[0] ? ": " : "", reason);
    if (store_put_job_state(d->store, j->job, st, reason, j->restart, err, sizeof(err)) < 0)
        log_error("diagnosis", "job %s: state not stored: %s", j->job, err);
    if (was == ARGUS__V1__JOB_STATE__JOB_STATE_HUNG)
        alerts_resolve(d->o.alerts, j->job, ARGUS__V1__CAUSE__CAUSE_HANG, -1);
    if (st == ARGUS__V1__JOB_STATE__JOB_STATE_ENDED)
        alerts_resolve(d->o.alerts, j->job, -1, -1);
    else if (st == ARGUS__V1__JOB_STATE__JOB_STATE_FAILED ||
             st == ARGUS__V1__JOB_STATE__JOB_STATE_RESTARTING)
        alerts_resolve(d->o.alerts, j->job, -1, ARGUS__V1__CAUSE__CAUSE_EXITED);
}

/* Liveness of j at its time t (its lock held): a hang or death found is
 * one report, published like the engine's. */
static void diagnosis_live_tick(struct diagnosis *d, struct diagnosis_job *j, uint64_t t,
                                const struct diag_engine_stats *es)
{
    struct diag_live_ctx c = {
        .step_p50_ns = (uint64_t)es->last_step_p50_ns,
        .slots = diag_engine_slots(j->engine),
        .where = diag_engine_where_slot,
        .where_ctx = j->engine,
        .name = diagnosis_name,
        .name_ctx = j,
    };
    /* a nanosecond after the engine's reports of this tick; the id from the data */
    Argus__V1__Report *rep = diag_report_new(j->job, t + 1, 0);

    if (rep && diag_live_check(&j->live, t, &c, rep) > 0) {
        rep->to_step = es->closed_through ? es->closed_through - 1 : 0;
        rep->from_step = rep->to_step;
        diag_report_mark_pages(rep);
        if (diag_report_summarize(rep) == 0 &&
            diag_report_identify(rep, es->closed_onset_ns) == 0) {
            diagnosis_publish(d, j, &rep, 1);
            rep = NULL;
        }
    }
    diag_report_free(rep);
    diagnosis_state(d, j);
}

/* A launcher's attempt above j's (torchelastic restarted the job): a new
 * epoch, whose steps count from 0 again, so a new engine and liveness
 * state; the old engine's reports are published first, its counters kept,
 * and a death still in its grace is reported now (a quick restart must not
 * swallow the page that says why the job restarted). */
static void diagnosis_epoch(struct diagnosis *d, struct diagnosis_job *j, uint32_t restart)
{
    struct diag_engine *e = restart > j->restart ? diagnosis_engine_new(d, j) : NULL;
    struct diag_engine_stats es;

    if (!e)
        return;
    diagnosis_drain(d, j);
    diag_engine_get_stats(j->engine, &es);
    if (j->live.death_pending)
        diagnosis_live_tick(d, j, j->live.death_recv_ns + j->live.grace_ns, &es);
    j->past_records += es.records;
    j->past_closed += es.steps_closed;
    diag_engine_free(j->engine);
    j->engine = e;
    uint64_t counts[3] = {j->live.statuses, j->live.hangs, j->live.deaths};
    diag_live_free(&j->live);
    diag_live_init(&j->live, d->o.hang_after_ns, 0);
    j->live.statuses = counts[0], j->live.hangs = counts[1], j->live.deaths = counts[2];
    log_info("diagnosis", "job %s: attempt %" PRIu32 " after %" PRIu32 ": a new epoch", j->job,
             restart, j->restart);
    j->restart = restart;
    j->restarting = true;
}

/* The highest attempt of j's resources and statuses in b. */
static uint32_t diagnosis_batch_restart(const struct diagnosis_job *j, const Argus__V1__Batch *b)
{
    uint32_t restart = j->restart;

    for (size_t i = 0; i < b->n_resources; i++)
        if (strcmp(b->resources[i]->job, j->job) == 0 && b->resources[i]->restart > restart)
            restart = b->resources[i]->restart;
    for (size_t i = 0; i < b->n_statuses; i++)
        if (strcmp(b->statuses[i]->job, j->job) == 0 && b->statuses[i]->restart > restart)
            restart = b->statuses[i]->restart;
    return restart;
}

/* b's statuses of j's epoch into its liveness state; a stalled rank's last
 * step counts as progress: not silent (the hang finder says what it does). */
static void diagnosis_feed_statuses(struct diagnosis_job *j, const Argus__V1__Batch *b,
                                    uint64_t recv_ns)
{
    for (size_t i = 0; i < b->n_statuses; i++) {
        const Argus__V1__RankStatus *st = b->statuses[i];
        uint32_t slot;
        if (strcmp(st->job, j->job) != 0 || st->restart != j->restart ||
            !diagnosis_live_slot(j, st->rank, &slot))
            continue;
        diag_live_status(&j->live, slot, st, recv_ns);
        if (st->has_step && !st->exited)
            diag_engine_note_progress(j->engine, st->rank, st->last_step, recv_ns);
    }
}

static void diagnosis_feed_job(struct diagnosis *d, struct diagnosis_job *j,
                               const Argus__V1__Batch *b, uint64_t recv_ns)
{
    uint64_t now = clock_real_ns();

    diagnosis_epoch(d, j, diagnosis_batch_restart(j, b));
    if (diag_engine_begin_batch(j->engine, b->agent_id ? b->agent_id : "", recv_ns) < 0)
        return;
    for (size_t i = 0; i < b->n_names; i++)
        if (strcmp(b->names[i]->job, j->job) == 0)
            strmap_put(&j->names, b->names[i]->id, b->names[i]->name);
    for (size_t i = 0; i < b->n_resources; i++) {
        uint32_t slot;
        if (strcmp(b->resources[i]->job, j->job) == 0 &&
            diag_engine_add_resource(j->engine, b->resources[i]) == 0 &&
            diagnosis_live_slot(j, b->resources[i]->rank, &slot))
            diag_live_note_rank(&j->live, slot);
    }
    for (size_t i = 0; i < b->n_steps; i++) {
        uint32_t slot;
        if (strcmp(b->steps[i]->job, j->job) == 0 &&
            diag_engine_add_step(j->engine, b->steps[i], recv_ns) >= 0 &&
            diagnosis_live_slot(j, b->steps[i]->rank, &slot))
            diag_live_note_step(&j->live, slot, b->steps[i]);
    }
    diagnosis_feed_statuses(j, b, recv_ns);
    diag_engine_end_batch(j->engine, recv_ns);
    j->last_fed_ns = now;
    j->feed_lag_ns = now > recv_ns ? now - recv_ns : 0;
    diagnosis_drain(d, j);
}

void diagnosis_feed(struct diagnosis *d, const Argus__V1__Batch *b, uint64_t recv_unix_ns)
{
    const char *last = NULL;

    /* a batch usually holds one job; feed each job it names once */
    for (size_t i = 0; i < b->n_steps + b->n_resources + b->n_statuses; i++) {
        const char *job = i < b->n_steps ? b->steps[i]->job
                          : i < b->n_steps + b->n_resources
                              ? b->resources[i - b->n_steps]->job
                              : b->statuses[i - b->n_steps - b->n_resources]->job;
        if (last && strcmp(job, last) == 0)
            continue;
        last = job;
        struct diagnosis_job *j = diagnosis_job(d, job);
        if (!j)
            continue;
        diagnosis_feed_job(d, j, b, recv_unix_ns);
        pthread_mutex_unlock(&j->lock);
    }
}

void diagnosis_progress(void *ctx, const char *job, const char *agent,
                        const struct diagq_progress *p, size_t n, uint64_t recv_unix_ns)
{
    struct diagnosis *d = ctx;
    struct diagnosis_job *j = diagnosis_job(d, job);
    uint64_t now = clock_real_ns();

    if (!j)
        return;
    for (size_t i = 0; i < n; i++)
        j->queue_shed += p[i].records;
    if (diag_engine_begin_batch(j->engine, agent, recv_unix_ns) == 0) {
        for (size_t i = 0; i < n; i++)
            diag_engine_note_progress(j->engine, p[i].rank, p[i].step, recv_unix_ns);
        diag_engine_end_batch(j->engine, recv_unix_ns);
        j->last_fed_ns = now;
        j->feed_lag_ns = now > recv_unix_ns ? now - recv_unix_ns : 0;
        diagnosis_drain(d, j);
    }
    pthread_mutex_unlock(&j->lock);
}

/* Retire job i (d->lock held): close its open steps, store what they
 * report, keep its counters, free its state. A job fed again later starts
 * a new engine (its start-up grace again, its history gone). */
static void diagnosis_retire(struct diagnosis *d, size_t i, uint64_t now)
{
    struct diagnosis_job *j = d->jobs[i];
    struct diag_engine_stats es;
    struct diagnosis_stats one;

    pthread_mutex_lock(&j->lock);
    diag_engine_flush(j->engine, diagnosis_job_time(d, j, now));
    diagnosis_drain(d, j);
    diag_engine_get_stats(j->engine, &es);
    pthread_mutex_unlock(&j->lock);
    one = diagnosis_counters_of(&es);
    one.statuses = j->live.statuses;
    one.hangs = j->live.hangs;
    one.deaths = j->live.deaths;
    one.suppressed = j->suppressed;
    diagnosis_counters_add(&d->retired, &one);
    d->retired.jobs_retired++;
    diagnosis_job_free(j);
    d->jobs[i] = d->jobs[--d->njobs];
}

/* Over max_bytes (all jobs' open and kept steps, as of the last tick):
 * retire the least recently fed jobs until under it, never the one fed last
 * (its own max_open_bytes bounds it). d->lock held. */
static void diagnosis_bound_memory(struct diagnosis *d, uint64_t now)
{
    uint64_t total = 0;

    for (size_t i = 0; i < d->njobs; i++)
        total += d->jobs[i]->lag.open_bytes;
    while (d->o.max_bytes && total > d->o.max_bytes && d->njobs > 1) {
        size_t old = 0, last = 0;
        for (size_t i = 1; i < d->njobs; i++) {
            if (d->jobs[i]->last_fed_ns < d->jobs[old]->last_fed_ns)
                old = i;
            if (d->jobs[i]->last_fed_ns > d->jobs[last]->last_fed_ns)
                last = i;
        }
        if (old == last)
            break;
        struct diagnosis_job *j = d->jobs[old];
        uint64_t bytes = j->lag.open_bytes;
        log_warn("diagnosis",
                 "diagnosis memory %.0f MiB over diag.max_bytes %.0f MiB: dropping the state of "
                 "job %s (%.0f MiB, last fed %.0f s ago)",
                 total / 1048576.0, d->o.max_bytes / 1048576.0, j->job, bytes / 1048576.0,
                 now > j->last_fed_ns ? (double)(now - j->last_fed_ns) / 1e9 : 0.0);
        diagnosis_retire(d, old, now);
        d->retired.jobs_retired_memory++;
        total -= bytes < total ? bytes : total;
    }
}

/* Tick one job (its lock held) at its own clock. */
static void diagnosis_tick_job(struct diagnosis *d, struct diagnosis_job *j, uint64_t now,
                               struct diagnosis_stats *acc)
{
    struct diag_engine_stats es;
    uint64_t t = diagnosis_job_time(d, j, now);

    diag_engine_tick(j->engine, t);
    diagnosis_drain(d, j);
    diag_engine_get_stats(j->engine, &es);
    diagnosis_live_tick(d, j, t, &es);
    Argus__V1__Report *blind = diagnosis_blind_tick(d, j, t, &es);
    if (blind)
        diagnosis_publish(d, j, &blind, 1);
    es.records += j->past_records;
    es.steps_closed += j->past_closed;
    diagnosis_counters_sum(acc, &es);
    acc->statuses += j->live.statuses;
    acc->hangs += j->live.hangs;
    acc->deaths += j->live.deaths;
    acc->suppressed += j->suppressed;
    acc->jobs_by_state[j->state_put < DIAGNOSIS_STATES ? j->state_put : 0]++;
    j->lag = (struct diagnosis_job_lag){
        .watermark_lag_s = es.lag_s,
        .watermark_steps =
            es.newest_step + 1 > es.watermark ? es.newest_step + 1 - es.watermark : 0,
        .feed_lag_s = (double)j->feed_lag_ns / 1e9,
        .open_steps = es.open_steps,
        .open_bytes = es.open_bytes,
    };
    j->series.has_step = es.closed_through > 0;
    j->series.step = es.closed_through ? es.closed_through - 1 : 0;
    j->series.step_p50_s = es.last_step_p50_ns / 1e9;
    j->series.step_max_s = es.last_step_max_ns / 1e9;
    j->series.lag_s = j->lag.feed_lag_s + j->lag.watermark_lag_s;
}

void diagnosis_tick(struct diagnosis *d, uint64_t now_unix_ns)
{
    struct diagnosis_stats acc = {0};

    pthread_mutex_lock(&d->lock);
    diagnosis_bound_memory(d, now_unix_ns);
    for (size_t i = 0; i < d->njobs;) {
        struct diagnosis_job *j = d->jobs[i];
        if (now_unix_ns > j->last_fed_ns + d->o.job_idle_ns) {
            log_info("diagnosis",
                     "job %s: nothing received for %.0f s: its diagnosis state is freed", j->job,
                     (double)(now_unix_ns - j->last_fed_ns) / 1e9);
            diagnosis_retire(d, i, now_unix_ns);
            continue; /* the last job moved into slot i */
        }
        pthread_mutex_lock(&j->lock);
        diagnosis_tick_job(d, j, now_unix_ns, &acc);
        pthread_mutex_unlock(&j->lock);
        i++;
    }
    acc.jobs = d->njobs;
    diagnosis_counters_add(&acc, &d->retired);
    acc.jobs_retired = d->retired.jobs_retired;
    acc.jobs_retired_memory = d->retired.jobs_retired_memory;
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_lock(&d->stats_lock);
    acc.reports = d->stats.reports;
    acc.report_errors = d->stats.report_errors;
    acc.last_report_ns = d->stats.last_report_ns;
    d->stats = acc;
    pthread_mutex_unlock(&d->stats_lock);
}

static void diagnosis_take_back(void *ctx, const char *job)
{
    struct diagnosis_job *j = diagnosis_job(ctx, job);

    if (!j)
        return;
    j->last_fed_ns = clock_real_ns(); /* idle from now: retired if nothing comes */
    pthread_mutex_unlock(&j->lock);
}

int diagnosis_restore(struct diagnosis *d)
{
    return d->store ? diag_restore_foreach_recent(d->store, clock_real_ns(), d->o.job_idle_ns,
                                                  diagnosis_take_back, d)
                    : 0;
}

void diagnosis_foreach_job(struct diagnosis *d, diagnosis_job_fn fn, void *ctx)
{
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < d->njobs; i++) {
        struct diagnosis_job *j = d->jobs[i];
        struct diagnosis_job_lag lag;
        pthread_mutex_lock(&j->lock);
        lag = j->lag;
        pthread_mutex_unlock(&j->lock);
        fn(ctx, j->job, &lag);
    }
    pthread_mutex_unlock(&d->lock);
}

/* j's summary (its lock held): the tick's numbers plus its recent suspects. */
static struct diagnosis_job_series diagnosis_series_of(const struct diagnosis_job *j,
                                                       uint32_t window)
{
    struct diagnosis_job_series s = j->series;

    recent_suspects_summarize(&j->recent, window, &s);
    return s;
}

void diagnosis_foreach_series(struct diagnosis *d, diagnosis_series_fn fn, void *ctx)
{
    uint32_t window = d->o.window ? d->o.window : DIAGNOSIS_DEFAULT_WINDOW;

    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < d->njobs; i++) {
        struct diagnosis_job *j = d->jobs[i];
        pthread_mutex_lock(&j->lock);
        struct diagnosis_job_series s = diagnosis_series_of(j, window);
        pthread_mutex_unlock(&j->lock);
        fn(ctx, j->job, &s);
    }
    pthread_mutex_unlock(&d->lock);
}

void diagnosis_get_stats(struct diagnosis *d, struct diagnosis_stats *out)
{
    pthread_mutex_lock(&d->stats_lock);
    *out = d->stats;
    pthread_mutex_unlock(&d->stats_lock);
}
