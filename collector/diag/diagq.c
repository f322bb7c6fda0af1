#include "collector/diag/diagq.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"

#define DIAGQ_JOB_IDLE_NS (600 * NSEC_PER_SEC)

/* What the queue knows about one job's lag. */
struct diagq_job {
    char *job;
    uint64_t newest_recv; /* newest batch that carried the job */
    uint64_t fed_recv;    /* the last one finished (or the baseline) */
    uint32_t pending;     /* its batches in the queue */
    uint64_t last_push;   /* monotonic */
    bool warned;
};

/* A rank's progress in a batch the full queue did not take. */
struct diagq_note {
    struct diagq_job *job;
    struct diagq_progress p;
};

struct diagq_entry {
    struct diagq_entry *next;
    const Argus__V1__Batch *b; /* NULL: only the progress of a dropped batch */
    char *agent;               /* that batch's agent stream */
    struct diagq_note *notes;
    size_t n_notes;
    uint64_t recv;
    size_t bytes;
    diagq_release_fn release;
    void *owner;
    size_t njobs;
    struct diagq_job *jobs[];
};

struct diagq {
    struct diagq_options o;
    diagq_feed_fn feed;
    void *feed_ctx;
    pthread_t worker;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct diagq_entry *head, *tail;
    struct diagq_entry *feeding; /* taken by the worker, not done yet */
    bool stop;
    struct diagq_job **jobs;
    size_t njobs, cap_jobs;
    struct diagq_stats stats;
};

static uint64_t job_lag(const struct diagq_job *j)
{
    return j->pending && j->newest_recv > j->fed_recv ? j->newest_recv - j->fed_recv : 0;
}

/* The job's entry, created when new. Under the lock. */
static struct diagq_job *diagq_job(struct diagq *q, const char *job)
{
    struct diagq_job *j;

    for (size_t i = 0; i < q->njobs; i++)
        if (strcmp(q->jobs[i]->job, job) == 0)
            return q->jobs[i];
    if (array_reserve((void **)&q->jobs, &q->cap_jobs, q->njobs + 1, sizeof(*q->jobs)))
        return NULL;
    j = calloc(1, sizeof(*j));
    if (!j || !(j->job = strdup(job))) {
        free(j);
        return NULL;
    }
    q->jobs[q->njobs++] = j;
    return j;
}

/* The distinct jobs of b (steps, resources, statuses), at most max, into out.
 * Under the lock. Returns how many, or -ENOMEM. */
static long batch_jobs(struct diagq *q, const Argus__V1__Batch *b, struct diagq_job **out,
                       size_t max)
{
    const char *last = NULL;
    size_t n = 0, total = b->n_steps + b->n_resources + b->n_statuses;

    for (size_t i = 0; i < total; i++) {
        const char *job = i < b->n_steps ? b->steps[i]->job
                          : i < b->n_steps + b->n_resources
                              ? b->resources[i - b->n_steps]->job
                              : b->statuses[i - b->n_steps - b->n_resources]->job;
        bool seen = false;

        job = job ? job : "";
        if (last && strcmp(job, last) == 0)
            continue;
        last = job;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(out[k]->job, job) == 0;
        if (seen || n == max)
            continue;
        if (!(out[n] = diagq_job(q, job)))
            return -ENOMEM;
        n++;
    }
    return (long)n;
}

/* Count a batch's jobs as received at recv (queued: pending). */
static void jobs_received(struct diagq_job **jobs, size_t n, uint64_t recv, bool queued)
{
    uint64_t now = clock_mono_ns();

    for (size_t i = 0; i < n; i++) {
        struct diagq_job *j = jobs[i];

        if (queued && j->pending++ == 0)
            j->fed_recv = recv; /* caught up until this batch */
        if (recv > j->newest_recv)
            j->newest_recv = recv;
        j->last_push = now;
    }
}

/* The job of a step record among e's (NULL when past the first few). */
static struct diagq_job *entry_job(const struct diagq_entry *e, const char *job)
{
    for (size_t i = 0; i < e->njobs; i++)
        if (strcmp(e->jobs[i]->job, job ? job : "") == 0)
            return e->jobs[i];
    return NULL;
}

/* e's batch does not fit: turn e into the progress of its ranks (each
 * (job, rank) once, at its highest step), charged what that holds, when
 * there is a progress callback and room within an eighth of the bound
 * more. True when e is now such an entry (e->b NULL; the batch is the
 * caller's to release). Under the lock. */
static bool entry_to_notes(struct diagq *q, struct diagq_entry *e)
{
    const Argus__V1__Batch *b = e->b;
    size_t n = 0;

    if (!q->o.progress || !b->n_steps)
        return false;
    size_t bytes = sizeof(*e) + b->n_steps * sizeof(*e->notes) + 64;
    if (q->stats.queued_bytes + bytes > q->o.max_bytes + q->o.max_bytes / 8)
        return false;
    struct diagq_note *notes = malloc(b->n_steps * sizeof(*notes));
    char *agent = strdup(b->agent_id ? b->agent_id : "");
    if (!notes || !agent) {
        free(notes);
        free(agent);
        return false;
    }
    for (size_t i = 0; i < b->n_steps; i++) {
        const Argus__V1__StepRecord *s = b->steps[i];
        struct diagq_job *j = entry_job(e, s->job);
        size_t k = 0;
        while (k < n && !(notes[k].job == j && notes[k].p.rank == s->rank))
            k++;
        if (!j)
            continue;
        if (k == n)
            notes[n++] = (struct diagq_note){j, {s->rank, s->step, 1}};
        else if (++notes[k].p.records && s->step > notes[k].p.step)
            notes[k].p.step = s->step;
    }
    e->b = NULL;
    e->agent = agent;
    e->notes = notes;
    e->n_notes = n;
    e->bytes = bytes;
    e->release = NULL;
    e->owner = NULL;
    q->stats.noted_batches++;
    return true;
}

int diagq_push(struct diagq *q, const Argus__V1__Batch *b, uint64_t recv_unix_ns, size_t bytes,
               diagq_release_fn release, void *owner)
{
    size_t max_jobs = 8; /* a batch rarely carries more than one job */
    struct diagq_entry *e = malloc(sizeof(*e) + max_jobs * sizeof(e->jobs[0]));
    bool fits, noted = false;
    long n;

    if (!e) {
        release(owner);
        return -ENOMEM;
    }
    *e = (struct diagq_entry){
        .b = b, .recv = recv_unix_ns, .bytes = bytes, .release = release, .owner = owner};
    pthread_mutex_lock(&q->lock);
    n = batch_jobs(q, b, e->jobs, max_jobs);
    fits = n >= 0 && (!q->stats.queued_bytes || q->stats.queued_bytes + bytes <= q->o.max_bytes);
    e->njobs = n > 0 ? (size_t)n : 0;
    if (!fits && n >= 0) {
        q->stats.dropped_batches++;
        q->stats.dropped_records += b->n_steps;
        noted = entry_to_notes(q, e); /* its progress may still go in */
    }
    jobs_received(e->jobs, e->njobs, recv_unix_ns, fits || noted);
    if (fits || noted) {
        *(q->tail ? &q->tail->next : &q->head) = e;
        q->tail = e;
        q->stats.queued_batches++;
        q->stats.queued_bytes += e->bytes;
        pthread_cond_signal(&q->wake);
    }
    pthread_mutex_unlock(&q->lock);
    if (fits)
        return 0;
    release(owner);
    if (!noted)
        free(e);
    return n < 0 ? -ENOMEM : -ENOBUFS;
}

/* After the worker fed e: the jobs catch up, the bytes go. Under the lock. */
static void entry_done(struct diagq *q, struct diagq_entry *e)
{
    for (size_t i = 0; i < e->njobs; i++) {
        struct diagq_job *j = e->jobs[i];

        j->pending--;
        if (e->recv > j->fed_recv)
            j->fed_recv = e->recv;
    }
    q->stats.queued_batches--;
    q->stats.queued_bytes -= e->bytes;
    q->stats.fed_batches++;
    q->feeding = NULL;
}

/* The receive time of e when it carries j, else UINT64_MAX. */
static uint64_t entry_recv_of(const struct diagq_entry *e, const struct diagq_job *j)
{
    for (size_t i = 0; e && i < e->njobs; i++)
        if (e->jobs[i] == j)
            return e->recv;
    return UINT64_MAX;
}

uint64_t diagq_job_clock(struct diagq *q, const char *job, uint64_t now_unix_ns)
{
    uint64_t t = now_unix_ns;
    struct diagq_job *j = NULL;

    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < q->njobs && !j; i++)
        if (strcmp(q->jobs[i]->job, job) == 0)
            j = q->jobs[i];
    if (j && j->pending) {
        uint64_t r = entry_recv_of(q->feeding, j);
        t = r < t ? r : t;
        for (const struct diagq_entry *e = q->head; e; e = e->next) {
            r = entry_recv_of(e, j);
            t = r < t ? r : t;
        }
    }
    pthread_mutex_unlock(&q->lock);
    return t;
}

/* Give the progress of a dropped batch to the callback, job by job (its
 * jobs stay while the entry is pending). Worker thread, no lock. */
static void entry_progress(struct diagq *q, const struct diagq_entry *e)
{
    struct diagq_progress *p = malloc(e->n_notes * sizeof(*p) + 1);

    for (size_t k = 0; p && k < e->njobs; k++) {
        size_t n = 0;
        for (size_t i = 0; i < e->n_notes; i++)
            if (e->notes[i].job == e->jobs[k])
                p[n++] = e->notes[i].p;
        if (n)
            q->o.progress(q->feed_ctx, e->jobs[k]->job, e->agent, p, n, e->recv);
    }
    free(p);
}

/* Free what e holds (the batch, or its notes), not e. */
static void entry_release(struct diagq_entry *e)
{
    if (e->release)
        e->release(e->owner);
    free(e->notes);
    free(e->agent);
}

static void *diagq_worker(void *arg)
{
    struct diagq *q = arg;

    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->head && !q->stop)
            pthread_cond_wait(&q->wake, &q->lock);
        if (q->stop)
            break;
        struct diagq_entry *e = q->head;
        size_t records = e->b ? e->b->n_steps : 0;
        q->head = e->next;
        if (!q->head)
            q->tail = NULL;
        q->feeding = e;
        pthread_mutex_unlock(&q->lock);
        if (e->b)
            q->feed(q->feed_ctx, e->b, e->recv);
        else
            entry_progress(q, e);
        if (q->o.test_delay_ns)
            clock_sleep_ns(q->o.test_delay_ns);
        entry_release(e);
        pthread_mutex_lock(&q->lock);
        entry_done(q, e);
        q->stats.fed_records += records;
        free(e);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

struct diagq *diagq_new(const struct diagq_options *o, diagq_feed_fn feed, void *feed_ctx)
{
    struct diagq *q = calloc(1, sizeof(*q));

    if (!q)
        return NULL;
    q->o = *o;
    q->feed = feed;
    q->feed_ctx = feed_ctx;
    q->stats.max_bytes = o->max_bytes;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->wake, NULL);
    if (pthread_create(&q->worker, NULL, diagq_worker, q) != 0) {
        pthread_cond_destroy(&q->wake);
        pthread_mutex_destroy(&q->lock);
        free(q);
        return NULL;
    }
    return q;
}

void diagq_free(struct diagq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->stop = true;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->worker, NULL);
    while (q->head) {
        struct diagq_entry *e = q->head;
        q->head = e->next;
        entry_release(e);
        free(e);
    }
    for (size_t i = 0; i < q->njobs; i++) {
        free(q->jobs[i]->job);
        free(q->jobs[i]);
    }
    free(q->jobs);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* 1 when the job's lag just went over lag_warn, -1 when it just came back
 * under half of it, else 0. Under the lock. */
static int job_lag_event(struct diagq *q, struct diagq_job *j)
{
    uint64_t lag = job_lag(j);

    if (!q->o.lag_warn_ns)
        return 0;
    if (!j->warned && lag > q->o.lag_warn_ns) {
        j->warned = true;
        q->stats.lag_warnings++;
        return 1;
    }
    if (j->warned && lag <= q->o.lag_warn_ns / 2) {
        j->warned = false;
        return -1;
    }
    return 0;
}

void diagq_tick(struct diagq *q, uint64_t now_mono_ns)
{
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < q->njobs; i++) {
        struct diagq_job *j = q->jobs[i];
        int ev = job_lag_event(q, j);

        if (ev > 0)
            log_warn("diagq",
                     "diagnosis of job %s is %.1f s behind what was received (diag.lag_warn %.0f "
                     "s; %" PRIu64 " batches queued): findings come later, or not at all for "
                     "batches the full queue drops",
                     j->job, job_lag(j) / 1e9, q->o.lag_warn_ns / 1e9, q->stats.queued_batches);
        else if (ev < 0)
            log_info("diagq", "diagnosis of job %s caught up (%.1f s behind)", j->job,
                     job_lag(j) / 1e9);
        if (!j->pending && now_mono_ns - j->last_push > DIAGQ_JOB_IDLE_NS) {
            free(j->job);
            free(j);
            q->jobs[i--] = q->jobs[--q->njobs];
        }
    }
    pthread_mutex_unlock(&q->lock);
}

void diagq_get_stats(struct diagq *q, struct diagq_stats *out)
{
    pthread_mutex_lock(&q->lock);
    *out = q->stats;
    pthread_mutex_unlock(&q->lock);
}

void diagq_foreach_lag(struct diagq *q, diagq_lag_fn fn, void *ctx)
{
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < q->njobs; i++)
        fn(ctx, q->jobs[i]->job, job_lag(q->jobs[i]) / 1e9);
    pthread_mutex_unlock(&q->lock);
}
